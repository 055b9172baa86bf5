// LayerNormalization over float32 rows, beside the reference
// (layer_group_norm.cpp): the same statistics in double and the same double
// arithmetic per element, (x - mean) * inv * scale [+ bias], rounded once,
// but the sums run in 8 interleaved partial sums (which vectorise) instead
// of one chain, and the rows run on the thread pool (kComputeGrain). Partial sums change a
// double sum in its last bits, so an output may differ from the
// reference's by one unit in the last place, rarely.
#include <cmath>

#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/wide_vectors.h"
#include "backends/cpu/parallel.h"

namespace vigil::cpu::fast {
namespace {

constexpr int kLanes = 8;

// sum over j of f(x[j]) in double: kLanes interleaved partial sums, added
// pairwise, then the tail in order.
template <typename F>
inline double LaneSum(const float* x, int64_t n, const F& f) {
  double part[kLanes] = {};
  const int64_t body = n / kLanes * kLanes;
  for (int64_t j = 0; j < body; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) part[k] += f(static_cast<double>(x[j + k]));
  }
  double sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  for (int64_t j = body; j < n; ++j) sum += f(static_cast<double>(x[j]));
  return sum;
}

VIGIL_WIDE_VECTORS void NormalizeRow(const float* x, float* y, int64_t n, const double* scale, const double* bias,
                                     double epsilon) {
  const double mean = LaneSum(x, n, [](double v) { return v; }) / static_cast<double>(n);
  const double variance =
      LaneSum(x, n, [mean](double v) { return (v - mean) * (v - mean); }) / static_cast<double>(n);
  const double inv = 1.0 / std::sqrt(variance + epsilon);
  if (bias) {
    for (int64_t j = 0; j < n; ++j) {
      y[j] = static_cast<float>((static_cast<double>(x[j]) - mean) * inv * scale[j] + bias[j]);
    }
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>((static_cast<double>(x[j]) - mean) * inv * scale[j]);
  }
}

}  // namespace

bool LayerNormRowsFloat(const float* x, float* y, int64_t rows, int64_t inner, const double* scale,
                        const double* bias, double epsilon) {
  if (inner < 1) return false;
  ParallelFor(rows, ItemsPerGrain(inner, kComputeGrain), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) NormalizeRow(x + r * inner, y + r * inner, inner, scale, bias, epsilon);
  });
  return true;
}

}  // namespace vigil::cpu::fast
