#include "runtime/tensor_compare.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "vigil/float16.h"

namespace vigil::runtime {

double ElementAsDouble(const Tensor& t, uint64_t i) {
  const uint8_t* p = static_cast<const uint8_t*>(t.raw_data());
  auto load = [&](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return v;
  };
  switch (t.dtype()) {
    case ir::DataType::kFloat32: return load(float{});
    case ir::DataType::kFloat64: return load(double{});
    case ir::DataType::kFloat16: return Float16ToFloat(load(uint16_t{}));
    case ir::DataType::kBfloat16: return Bfloat16ToFloat(load(uint16_t{}));
    case ir::DataType::kInt8: return load(int8_t{});
    case ir::DataType::kUint8: return load(uint8_t{});
    case ir::DataType::kInt16: return load(int16_t{});
    case ir::DataType::kUint16: return load(uint16_t{});
    case ir::DataType::kInt32: return load(int32_t{});
    case ir::DataType::kUint32: return load(uint32_t{});
    case ir::DataType::kInt64: return static_cast<double>(load(int64_t{}));
    case ir::DataType::kUint64: return static_cast<double>(load(uint64_t{}));
    case ir::DataType::kBool: return load(uint8_t{}) ? 1.0 : 0.0;
    default: return std::nan("");
  }
}

static bool IsExactType(ir::DataType t) {
  switch (t) {
    case ir::DataType::kFloat32:
    case ir::DataType::kFloat64:
    case ir::DataType::kFloat16:
    case ir::DataType::kBfloat16: return false;
    default: return true;
  }
}

TensorComparison CompareTensors(const Tensor& expected, const Tensor& got, double rtol, double atol) {
  TensorComparison c;
  c.same_dtype = expected.dtype() == got.dtype();
  c.same_shape = expected.shape() == got.shape();
  if (!c.same_dtype || !c.same_shape) return c;
  c.elements = expected.element_count();
  bool exact = IsExactType(expected.dtype());
  double diff2 = 0, ref2 = 0;
  for (uint64_t i = 0; i < c.elements; ++i) {
    double e = ElementAsDouble(expected, i), g = ElementAsDouble(got, i);
    bool bad;
    if (std::isnan(e) || std::isnan(g)) {
      bad = !(std::isnan(e) && std::isnan(g));
      if (bad) ++c.nan_mismatches;
    } else if (std::isinf(e) || std::isinf(g)) {
      bad = e != g;
    } else {
      double d = std::fabs(g - e);
      c.max_abs_error = std::max(c.max_abs_error, d);
      if (e != 0) c.max_rel_error = std::max(c.max_rel_error, d / std::fabs(e));
      diff2 += d * d;
      ref2 += e * e;
      bad = exact ? d != 0 : d > atol + rtol * std::fabs(e);
    }
    if (bad) {
      if (c.mismatches == 0) {
        c.first_mismatch = i;
        c.expected_at_first = e;
        c.got_at_first = g;
      }
      ++c.mismatches;
    }
  }
  c.rel_l2_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  return c;
}

std::string TensorComparison::Describe() const {
  if (!same_dtype) return "dtypes differ";
  if (!same_shape) return "shapes differ";
  if (mismatches == 0) {
    return fmt::format("all {} elements within tolerance; max abs error {:.3g}, rel L2 {:.3g}", elements,
                       max_abs_error, rel_l2_error);
  }
  return fmt::format("{} of {} elements differ ({} NaN mismatches); max abs error {:.3g}; first at [{}]: "
                     "expected {}, got {}",
                     mismatches, elements, nan_mismatches, max_abs_error, first_mismatch, expected_at_first,
                     got_at_first);
}

}  // namespace vigil::runtime
