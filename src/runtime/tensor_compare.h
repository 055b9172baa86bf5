// Element-wise comparison of two tensors in float64, the way every
// correctness check in vigil compares: |got - expected| <= atol + rtol*|expected|,
// exact for integers and bool, and NaN passes only where NaN was expected.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/tensor.h"

namespace vigil::runtime {

struct TensorComparison {
  bool same_dtype = false;
  bool same_shape = false;
  uint64_t elements = 0;
  uint64_t mismatches = 0;       // elements outside tolerance (NaN mismatches included)
  uint64_t nan_mismatches = 0;   // NaN where none was expected, or a number where NaN was
  double max_abs_error = 0;
  double max_rel_error = 0;      // |got-expected| / |expected| over elements with expected != 0
  double rel_l2_error = 0;       // ||got-expected||_2 / ||expected||_2 (0 when both are 0)
  uint64_t first_mismatch = 0;   // flat index of the first mismatch
  double expected_at_first = 0;
  double got_at_first = 0;

  bool ok() const { return same_dtype && same_shape && mismatches == 0; }
  // "3 of 60 elements differ; max abs error 0.02 at [7]: expected 1.5, got 1.52"
  std::string Describe() const;
};

TensorComparison CompareTensors(const Tensor& expected, const Tensor& got, double rtol, double atol);

// Element i of `t` as double (float16/bfloat16 widened; bool 0/1).
double ElementAsDouble(const Tensor& t, uint64_t i);

}  // namespace vigil::runtime
