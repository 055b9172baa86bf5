// Helpers for tests of kernels that compute in floating point (conv, pooling,
// normalisation, softmax): random data, tensors of any float dtype, index
// arithmetic for naive references, and a NaN-aware comparison.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "vigil/float16.h"

namespace vigil::cpu::float_testing {

namespace kt = vigil::cpu::testing;
using ir::DataType;
using Shape = std::vector<int64_t>;

inline int64_t Product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline Shape Unravel(int64_t i, const Shape& shape) {
  Shape idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

inline Shape Concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// v (4-D dims `shape`) with its dims reordered: out dim i = in dim perm[i]
// (e.g. perm {0, 2, 3, 1} turns NCHW data into NHWC).
inline std::vector<double> Permute(const std::vector<double>& v, const Shape& shape, const Shape& perm) {
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(shape[p]);
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    Shape o = Unravel(i, out_shape);
    Shape in(4);
    for (size_t d = 0; d < 4; ++d) in[perm[d]] = o[d];
    out[i] = v[((in[0] * shape[1] + in[1]) * shape[2] + in[2]) * shape[3] + in[3]];
  }
  return out;
}

// The 4-D shape s with its dims reordered as Permute does.
inline Shape PermuteShape(const Shape& s, const Shape& perm) {
  return {s[perm[0]], s[perm[1]], s[perm[2]], s[perm[3]]};
}

inline std::vector<double> Random(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(gen);
  return v;
}

// `v` as stored in dtype (so references see exactly the kernel's inputs).
inline std::vector<double> RoundTo(DataType dt, std::vector<double> v) {
  for (double& x : v) {
    if (dt == DataType::kFloat32) x = static_cast<float>(x);
    if (dt == DataType::kFloat16) x = Float16ToFloat(FloatToFloat16(static_cast<float>(x)));
    if (dt == DataType::kBfloat16) x = Bfloat16ToFloat(FloatToBfloat16(static_cast<float>(x)));
  }
  return v;
}

inline runtime::Tensor MakeFloat(DataType dt, Shape shape, const std::vector<double>& v) {
  switch (dt) {
    case DataType::kFloat64: return kt::MakeTensor(dt, std::move(shape), v);
    case DataType::kFloat16: {
      std::vector<uint16_t> h;
      for (double x : v) h.push_back(FloatToFloat16(static_cast<float>(x)));
      return kt::MakeTensor(dt, std::move(shape), h);
    }
    case DataType::kBfloat16: {
      std::vector<uint16_t> h;
      for (double x : v) h.push_back(FloatToBfloat16(static_cast<float>(x)));
      return kt::MakeTensor(dt, std::move(shape), h);
    }
    default: return kt::MakeTensor(dt, std::move(shape), std::vector<float>(v.begin(), v.end()));
  }
}

inline std::vector<double> ReadFloat(const runtime::Tensor& t) {
  std::vector<double> out;
  for (size_t i = 0; i < t.element_count(); ++i) {
    switch (t.dtype()) {
      case DataType::kFloat64: out.push_back(t.data<double>()[i]); break;
      case DataType::kFloat16: out.push_back(Float16ToFloat(t.data<uint16_t>()[i])); break;
      case DataType::kBfloat16: out.push_back(Bfloat16ToFloat(t.data<uint16_t>()[i])); break;
      default: out.push_back(t.data<float>()[i]); break;
    }
  }
  return out;
}

// |got - want| <= atol + rtol * |want| everywhere; NaN passes only where the
// reference is NaN too, and an infinity only where it is the same infinity.
inline void ExpectClose(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol) {
  ASSERT_EQ(got.size(), want.size());
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    bool ok = std::isnan(want[i]) ? std::isnan(got[i])
              : std::isinf(want[i]) ? got[i] == want[i]
                                    : !std::isnan(got[i]) && std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i]);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
    }
  }
}

inline double Tolerance(DataType dt) {
  switch (dt) {
    case DataType::kFloat64: return 1e-10;
    case DataType::kFloat16: return 2e-3;
    case DataType::kBfloat16: return 1.6e-2;
    default: return 2e-5;
  }
}

inline ir::TypeInfo Type(DataType dt, std::vector<ir::Dim> dims) { return ops::TensorType(dt, std::move(dims)); }
inline ir::Dim K(int64_t v) { return ir::Dim::Known(v); }
inline ir::Dim S(std::string name) { return ir::Dim::Symbolic(std::move(name)); }

inline std::string DimsOf(const ir::TypeInfo& t) { return ir::ShapeToString(t.shape); }

}  // namespace vigil::cpu::float_testing
