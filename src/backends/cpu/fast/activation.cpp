// Sigmoid, Tanh, Erf and Softmax over float32 in loops the compiler can
// vectorise (Erf: polynomials, below). Sigmoid, Tanh and Softmax with an exp:
// the references (StableSigmoid in elementwise_activation.cpp, SoftmaxKernel
// in softmax.cpp) call the C library's exp per element, which no -O2 build
// vectorises. Same formulas; exp differs by at most a few units in the last
// place.
#include <cstdint>
#include <cstring>
#include <limits>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/wide_vectors.h"

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

// VIGIL_WIDE_VECTORS (wide_vectors.h). Measured here (AMD EPYC, AVX-512):
// 1.5 -> 0.28 ns per element.

namespace {

// sigmoid(x), as SigmoidFloat computes it for each element.
inline float SigmoidOne(float xv) {
  const uint32_t kInf = Bits(std::numeric_limits<float>::infinity()), kOne = Bits(1.0f);
  const uint32_t ux = Bits(xv);
  const uint32_t ua = ux & 0x7fffffffu;  // |x|
  const float e = ExpNegative(FromBits(ua));
  const float num = FromBits(Select(Mask((ux >> 31) != 0), Bits(e), kOne));  // x < 0 (or -0): e, else 1
  const float v = num / (1.0f + e);
  return FromBits(Select(Mask(ua > kInf), ux, Bits(v)));  // a NaN stays
}

}  // namespace

VIGIL_WIDE_VECTORS void SigmoidFloat(const float* x, float* y, uint64_t n) {
  // Captured by value: by reference, the loop reloads x and y from the
  // parameters' memory every element and GCC does not vectorise it.
  auto one = [x, y](uint64_t i) { y[i] = SigmoidOne(x[i]); };
  ForEachIndexBlocked(n, one);
}

VIGIL_WIDE_VECTORS void SiluFloat(const float* x, float* y, uint64_t n) {
  auto one = [x, y](uint64_t i) {
    const float v = x[i];
    y[i] = v * SigmoidOne(v);
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

// Horner's rule over the float coefficients c[K] + c[K+1] t + ... + c[N-1]
// t^(N-1-K), unrolled at compile time (a loop here keeps GCC from
// vectorising the loop over elements).
template <size_t K = 0, size_t N>
inline float Horner(const float (&c)[N], float t) {
  if constexpr (K + 1 == N) {
    return c[K];
  } else {
    return Horner<K + 1>(c, t) * t + c[K];
  }
}

// erf(x) on |x|: x P(x^2) below 0.875, a polynomial in |x| - 1.4375 up to
// 2 and one in |x| - 2.96875 up to 3.9375, then 1; the sign is x's, a NaN
// stays. Least-squares fits to erf on Chebyshev nodes (made here with
// numpy and Python's math.erf), each checked on 4 million floats of its
// range in float32 arithmetic: within 2 units in the last place of the
// correctly rounded erf below 0.875 and 1 above. All three are computed and
// one selected, so that the loop vectorises.
namespace {

// erf(x) as ErfFloat computes it for each element.
inline float ErfOne(float xv) {
  static constexpr float kSmall[] = {1.128379107e+00f, -3.761257529e-01f, 1.128273904e-01f,
                                     -2.680274472e-02f, 5.050332285e-03f, -6.304723793e-04f};
  static constexpr float kMid[] = {9.579405785e-01f,  1.428980231e-01f,  -2.054159045e-01f, 1.492248476e-01f,
                                   -3.878314048e-02f, -2.247778513e-02f, 2.111017145e-02f,  -3.241761355e-03f,
                                   -3.346098820e-03f, 1.457560691e-03f,  1.482801454e-04f};
  static constexpr float kFar[] = {9.999731183e-01f,  1.677268738e-04f,  -4.981419188e-04f, 9.317686781e-04f,
                                   -1.214936725e-03f, 1.152746612e-03f,  -8.249480743e-04f, 4.505413235e-04f,
                                   -1.430148986e-04f, -2.001455323e-05f, 2.517949906e-05f};
  const uint32_t kInf = Bits(std::numeric_limits<float>::infinity()), kMidFrom = Bits(0.875f),
                 kFarFrom = Bits(2.0f), kOneFrom = Bits(3.9375f), kOne = Bits(1.0f);
  const uint32_t ux = Bits(xv);
  const uint32_t ua = ux & 0x7fffffffu;
  const float a = FromBits(ua);
  const float small = a * Horner(kSmall, a * a);
  const float mid = Horner(kMid, a - 1.4375f);
  const float far = Horner(kFar, a - 2.96875f);
  uint32_t v = Select(Mask(ua >= kMidFrom), Bits(mid), Bits(small));
  v = Select(Mask(ua >= kFarFrom), Bits(far), v);
  v = Select(Mask(ua >= kOneFrom), kOne, v) | (ux & 0x80000000u);
  return FromBits(Select(Mask(ua > kInf), ux, v));
}

}  // namespace

VIGIL_WIDE_VECTORS void ErfFloat(const float* x, float* y, uint64_t n) {
  auto one = [x, y](uint64_t i) { y[i] = ErfOne(x[i]); };
  ForEachIndexBlocked(n, one);
}

// 0.5 x (1 + erf(x / sqrt(2))) in the reference Gelu's order of operations
// (elementwise_activation.cpp), with ErfOne for the C library's erff.
VIGIL_WIDE_VECTORS void GeluFloat(const float* x, float* y, uint64_t n) {
  auto one = [x, y](uint64_t i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + ErfOne(v * 0.70710678118654752440f));
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
