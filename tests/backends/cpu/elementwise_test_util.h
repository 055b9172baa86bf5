// Shared by the elementwise kernel tests: tensors of any supported dtype
// built from and read back as doubles, deterministic pseudo-random data, and
// a comparison in which NaN never passes unless NaN is expected.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/kernel_test_util.h"
#include "vigil/float16.h"

namespace vigil::cpu::testing {

using ir::DataType;

inline const std::vector<DataType>& FloatDtypes() {
  static const std::vector<DataType> k = {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16,
                                          DataType::kBfloat16};
  return k;
}
inline const std::vector<DataType>& IntDtypes() {
  static const std::vector<DataType> k = {DataType::kInt8,  DataType::kInt16,  DataType::kInt32,  DataType::kInt64,
                                          DataType::kUint8, DataType::kUint16, DataType::kUint32, DataType::kUint64};
  return k;
}
inline bool IsFloat(DataType d) {
  return d == DataType::kFloat32 || d == DataType::kFloat64 || d == DataType::kFloat16 || d == DataType::kBfloat16;
}
inline bool IsUnsigned(DataType d) {
  return d == DataType::kUint8 || d == DataType::kUint16 || d == DataType::kUint32 || d == DataType::kUint64;
}

// Stores v as dtype d at p (integers: v must be in range and integral).
inline void StoreDouble(DataType d, void* p, size_t i, double v) {
  switch (d) {
    case DataType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(p)[i] = v; break;
    case DataType::kFloat16: static_cast<uint16_t*>(p)[i] = FloatToFloat16(static_cast<float>(v)); break;
    case DataType::kBfloat16: static_cast<uint16_t*>(p)[i] = FloatToBfloat16(static_cast<float>(v)); break;
    case DataType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case DataType::kInt16: static_cast<int16_t*>(p)[i] = static_cast<int16_t>(v); break;
    case DataType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case DataType::kInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case DataType::kUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case DataType::kUint16: static_cast<uint16_t*>(p)[i] = static_cast<uint16_t>(v); break;
    case DataType::kUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case DataType::kUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case DataType::kBool: static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0; break;
    default: ADD_FAILURE() << "StoreDouble: unsupported dtype"; break;
  }
}

inline double LoadDouble(DataType d, const void* p, size_t i) {
  switch (d) {
    case DataType::kFloat32: return static_cast<const float*>(p)[i];
    case DataType::kFloat64: return static_cast<const double*>(p)[i];
    case DataType::kFloat16: return Float16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case DataType::kBfloat16: return Bfloat16ToFloat(static_cast<const uint16_t*>(p)[i]);
    case DataType::kInt8: return static_cast<const int8_t*>(p)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(p)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(p)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DataType::kUint8: return static_cast<const uint8_t*>(p)[i];
    case DataType::kUint16: return static_cast<const uint16_t*>(p)[i];
    case DataType::kUint32: return static_cast<const uint32_t*>(p)[i];
    case DataType::kUint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DataType::kBool: return static_cast<const uint8_t*>(p)[i];
    default: ADD_FAILURE() << "LoadDouble: unsupported dtype"; return 0;
  }
}

inline runtime::Tensor TensorOf(DataType d, std::vector<int64_t> shape, const std::vector<double>& v) {
  runtime::Tensor t = runtime::Tensor::Allocate(d, std::move(shape)).value();
  EXPECT_EQ(t.element_count(), v.size()) << "TensorOf: value count does not match shape";
  for (size_t i = 0; i < v.size() && i < t.element_count(); ++i) StoreDouble(d, t.raw_data(), i, v[i]);
  return t;
}

inline std::vector<double> DoublesOf(const runtime::Tensor& t) {
  std::vector<double> v(t.element_count());
  for (size_t i = 0; i < v.size(); ++i) v[i] = LoadDouble(t.dtype(), t.raw_data(), i);
  return v;
}

// The value as dtype d would hold it (rounded to float16 etc.).
inline double Quantize(DataType d, double v) {
  uint64_t buf = 0;
  StoreDouble(d, &buf, 0, v);
  return LoadDouble(d, &buf, 0);
}

// Deterministic values in [lo, hi); integral when `integral`.
inline std::vector<double> RandomValues(size_t n, double lo, double hi, uint32_t seed, bool integral = false) {
  std::vector<double> v(n);
  uint64_t s = 0x9E3779B97F4A7C15ull ^ seed;
  for (size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    double u = static_cast<double>(s >> 11) / 9007199254740992.0;
    v[i] = lo + (hi - lo) * u;
    if (integral) v[i] = std::floor(v[i]);
  }
  return v;
}

inline int64_t Product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

struct Tolerance {
  double atol;
  double rtol;
};

// Tolerances for results computed in float and rounded once to dtype.
inline Tolerance ToleranceFor(DataType d) {
  switch (d) {
    case DataType::kFloat64: return {1e-12, 1e-12};
    case DataType::kFloat32: return {1e-6, 1e-5};
    case DataType::kFloat16: return {1e-3, 2e-3};
    case DataType::kBfloat16: return {1e-2, 1e-2};
    default: return {0, 0};  // integers and bool: exact
  }
}

// got[i] within atol + rtol*|want[i]|; NaN only matches NaN, infinities must
// match exactly.
inline void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, Tolerance tol,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    bool ok;
    if (std::isnan(want[i]) || std::isnan(got[i])) {
      ok = std::isnan(want[i]) && std::isnan(got[i]);
    } else if (std::isinf(want[i]) || std::isinf(got[i])) {
      ok = got[i] == want[i];
    } else {
      ok = std::fabs(got[i] - want[i]) <= tol.atol + tol.rtol * std::fabs(want[i]);
    }
    if (!ok && reported++ < 5) ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i];
  }
}

// Runs the kernel and returns its outputs, failing the test on an error.
inline std::vector<runtime::Tensor> RunOk(const ir::Node& node, int64_t opset,
                                          const std::vector<const runtime::Tensor*>& inputs) {
  auto r = RunKernel(node, opset, inputs);
  EXPECT_TRUE(r.ok()) << node.op_type << ": " << r.status().ToString();
  if (!r.ok()) return {};
  return std::move(r).value();
}

// Runs the kernel expecting a failure whose message contains `needle`.
inline void ExpectRunFails(const ir::Node& node, int64_t opset, const std::vector<const runtime::Tensor*>& inputs,
                           const std::string& needle) {
  auto r = RunKernel(node, opset, inputs);
  ASSERT_FALSE(r.ok()) << node.op_type << " should have failed";
  EXPECT_NE(r.status().summary().find(needle), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().summary().find("node " + node.op_type), std::string::npos) << r.status().ToString();
}

inline std::string DtypeName(DataType d) { return std::string(ir::DataTypeName(d)); }

}  // namespace vigil::cpu::testing
