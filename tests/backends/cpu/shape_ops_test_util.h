// Helpers for the shape-op and tensor-generator kernel tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "vigil/float16.h"

namespace vigil::cpu::testing {

// 1, 2, 3, ... as floats (distinct values, so any misplaced element shows).
inline std::vector<float> Iota(size_t n, float start = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

inline std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

inline int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Row-major multi-index of flat position `flat` in `shape`.
inline std::vector<int64_t> Unflatten(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t a = shape.size(); a-- > 0;) {
    idx[a] = flat % shape[a];
    flat /= shape[a];
  }
  return idx;
}

// Runs the kernel; fails the test (and returns empty) on error.
inline std::vector<runtime::Tensor> RunOk(const ir::Node& node, int64_t opset,
                                          const std::vector<const runtime::Tensor*>& inputs) {
  auto r = RunKernel(node, opset, inputs);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return std::vector<runtime::Tensor>(node.outputs.size());
  return std::move(r).value();
}

// The error summary of a run that must fail (and name the node).
inline std::string RunError(const ir::Node& node, int64_t opset, const std::vector<const runtime::Tensor*>& inputs) {
  auto r = RunKernel(node, opset, inputs);
  EXPECT_FALSE(r.ok()) << "expected an error";
  if (r.ok()) return {};
  EXPECT_NE(r.status().summary().find("node " + node.op_type), std::string::npos) << r.status().summary();
  return r.status().summary();
}

// Exact comparison of floats that never passes on NaN unless both are NaN
// and `nan_ok`.
inline void ExpectFloatsEq(const std::vector<float>& got, const std::vector<float>& want, bool nan_ok = false) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) && nan_ok) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      continue;
    }
    EXPECT_TRUE(!std::isnan(got[i]) && got[i] == want[i]) << "at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// Near comparison against a float64 reference; NaN never passes.
inline void ExpectNear(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(static_cast<double>(got[i]) - want[i]);
    EXPECT_TRUE(!std::isnan(got[i]) && err <= tol * std::max(1.0, std::fabs(want[i])))
        << "at " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// Shape inference types.
inline ir::Dim D(int64_t v) { return ir::Dim::Known(v); }
inline ir::Dim S(const std::string& name) { return ir::Dim::Symbolic(name); }
inline ir::TypeInfo T(ir::DataType dtype, std::vector<ir::Dim> dims) { return ops::TensorType(dtype, std::move(dims)); }
inline ir::TypeInfo F32T(std::vector<ir::Dim> dims) { return T(ir::DataType::kFloat32, std::move(dims)); }
inline ir::TypeInfo I64T(std::vector<ir::Dim> dims) { return T(ir::DataType::kInt64, std::move(dims)); }

inline std::string ShapeOf(const ir::TypeInfo& t) { return ir::TypeToString(t); }

// Runs shape inference; fails the test on error.
inline std::vector<ir::TypeInfo> InferOk(const ir::Node& node, int64_t opset,
                                         const std::vector<const ir::TypeInfo*>& types,
                                         const std::vector<const ir::Tensor*>& values = {}) {
  auto r = InferNode(node, opset, types, values);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return std::vector<ir::TypeInfo>(node.outputs.size());
  return std::move(r).value();
}

inline std::string InferError(const ir::Node& node, int64_t opset, const std::vector<const ir::TypeInfo*>& types,
                              const std::vector<const ir::Tensor*>& values = {}) {
  auto r = InferNode(node, opset, types, values);
  EXPECT_FALSE(r.ok()) << "expected a shape inference error";
  if (r.ok()) return {};
  EXPECT_NE(r.status().summary().find("node " + node.op_type), std::string::npos) << r.status().summary();
  return r.status().summary();
}

}  // namespace vigil::cpu::testing
