// Sigmoid, Tanh and Softmax over float32 with an exp the compiler can vectorise:
// the references (StableSigmoid in elementwise_activation.cpp, SoftmaxKernel
// in softmax.cpp) call the C library's exp per element, which no -O2 build
// vectorises. Same formulas; exp differs by at most a few units in the last
// place.
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/fast/fast_kernels.h"

namespace vigil::cpu::fast {
namespace {

inline uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// All-ones where `c`, else zero: selects written as bit masks, because GCC
// at -O2 turns a float ?: into a branch and then vectorises nothing.
inline uint32_t Mask(bool c) { return 0u - static_cast<uint32_t>(c); }
inline uint32_t Select(uint32_t mask, uint32_t a, uint32_t b) { return (a & mask) | (b & ~mask); }

// exp(-(a + a_lo)) for a >= 0 (or NaN, taken as beyond 104) and |a_lo| below
// a's last place (the rounding error of a difference, carried exactly):
// -a = n ln2 + r with |r| <= ln2 / 2, exp(r) by a
// degree-7 polynomial (Cephes' expf coefficients), times 2^n applied in two
// halves so that results down to the smallest subnormal are reached without
// forming an invalid exponent; exp(-104) rounds to 0.
inline float ExpNegative(float a, float a_lo = 0.0f) {
  // Beyond 104 (+inf and NaN too: a >= 0, so the bit patterns order as the
  // values) exp(-a) rounds to 0: clamp, and drop the low part with it.
  const uint32_t k104 = 0x42D00000u;  // Bits(104.0f)
  const uint32_t big = Mask(Bits(a) > k104);
  a = FromBits(Select(big, k104, Bits(a)));
  a_lo = FromBits(Select(big, 0u, Bits(a_lo)));
  const float z = -a;
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float t = z * 1.44269504088896341f + kRound;
  const float n = t - kRound;
  const int32_t ni = static_cast<int32_t>(Bits(t) - Bits(kRound));  // n as an integer, in [-150, 0]
  float r = z - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  r = r - a_lo;  // the argument's low part: exp(-(a + a_lo))
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t n1 = ni / 2, n2 = ni - n1;  // each >= -75: 2^n1 and 2^n2 are normal floats
  return p * FromBits(static_cast<uint32_t>(n1 + 127) << 23) * FromBits(static_cast<uint32_t>(n2 + 127) << 23);
}

}  // namespace

// Built for AVX-512, AVX2 and the baseline, picked at load by the CPU
// (GCC's target_clones), with the loops inlined into each clone (flatten:
// else the shared loop instance runs at the baseline's width). The same
// IEEE operations in wider vectors: this file is built without FMA
// contraction (CMakeLists.txt), so every clone gives the same results.
// Measured here (AMD EPYC, AVX-512): 1.5 -> 0.28 ns per element.
#define VIGIL_WIDE_VECTORS __attribute__((target_clones("avx512f", "avx2", "default"), flatten))

VIGIL_WIDE_VECTORS void SigmoidFloat(const float* x, float* y, uint64_t n) {
  const uint32_t kInf = Bits(std::numeric_limits<float>::infinity()), kOne = Bits(1.0f);
  // Captured by value: by reference, the loop reloads x and y from the
  // parameters' memory every element and GCC does not vectorise it.
  auto one = [x, y, kInf, kOne](uint64_t i) {
    const uint32_t ux = Bits(x[i]);
    const uint32_t ua = ux & 0x7fffffffu;  // |x|
    const float e = ExpNegative(FromBits(ua));
    const float num = FromBits(Select(Mask((ux >> 31) != 0), Bits(e), kOne));  // x < 0 (or -0): e, else 1
    const float v = num / (1.0f + e);
    y[i] = FromBits(Select(Mask(ua > kInf), ux, Bits(v)));  // a NaN stays
  };
  ForEachIndexBlocked(n, one);
}

// tanh(x): for |x| >= 0.625, (1 - e) / (1 + e) with e = exp(-2|x|) (no
// cancellation: e <= 0.29); below, x + x^3 P(x^2) with the minimax
// coefficients of Cephes' tanhf. Both are computed and one is selected, so
// that the loop vectorises; the sign is x's, a NaN stays.
VIGIL_WIDE_VECTORS void TanhFloat(const float* x, float* y, uint64_t n) {
  const uint32_t kInf = Bits(std::numeric_limits<float>::infinity()), kSplit = Bits(0.625f);
  auto one = [x, y, kInf, kSplit](uint64_t i) {
    const uint32_t ux = Bits(x[i]);
    const uint32_t ua = ux & 0x7fffffffu;
    const float a = FromBits(ua);
    const float e = ExpNegative(a + a);
    const float big = (1.0f - e) / (1.0f + e);
    const float s = a * a;
    float p = -5.70498872745e-3f;
    p = p * s + 2.06390887954e-2f;
    p = p * s - 5.37397155531e-2f;
    p = p * s + 1.33314422036e-1f;
    p = p * s - 3.33332819422e-1f;
    const float small = p * s * a + a;
    const uint32_t v = Select(Mask(ua >= kSplit), Bits(big), Bits(small)) | (ux & 0x80000000u);
    y[i] = FromBits(Select(Mask(ua > kInf), ux, v));
  };
  ForEachIndexBlocked(n, one);
}

VIGIL_WIDE_VECTORS bool SoftmaxLineFloat(const float* x, float* y, int64_t n) {
  if (n <= 0) return true;
  float max = x[0];
  uint32_t nan = 0;
  for (int64_t k = 0; k < n; ++k) {
    const float v = x[k];
    max = v > max ? v : max;
    nan |= Mask(v != v);
  }
  const float inf = std::numeric_limits<float>::infinity();
  if (nan || max == inf || max == -inf) return false;  // NaN lines, and lines an exp(inf - inf) would reach
  // y = exp(x - max), then the sum of y in double: 8 running sums side by side.
  const uint64_t count = static_cast<uint64_t>(n);
  auto one = [x, y, max](uint64_t k) {
    // max - x (>= 0; +inf for an -inf element) as a float and its exact
    // rounding error (Knuth's two-sum), so that exp sees the difference the
    // reference takes in double.
    const float d = max - x[k], back = d - max, lo = (max - (d - back)) - (x[k] + back);
    y[k] = ExpNegative(d, lo);
  };
  ForEachIndexBlocked(count, one);
  double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    for (uint64_t k = 0; k < 8; ++k) part[k] += y[i + k];
  }
  for (; i < count; ++i) part[0] += y[i];
  const double sum = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
  const float inv = static_cast<float>(1.0 / sum);
  ForEachIndexBlocked(count, [y, inv](uint64_t k) { y[k] *= inv; });
  return true;
}

}  // namespace vigil::cpu::fast
