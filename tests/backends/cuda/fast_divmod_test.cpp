// FastDivmod (src/backends/cuda/fast_divmod.cuh), the division by a launch
// constant that the elementwise and data-movement kernels index with. The
// same code runs on the host, so it is checked here against `/` and `%`
// without a GPU: every divisor class (1, powers of two, their neighbours,
// odd, the largest) with dividends at both ends of the valid range.
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cuda/fast_divmod.cuh"

namespace vigil::cuda {
namespace {

void ExpectExact(uint32_t d, uint32_t n) {
  const FastDivmod f(d);
  uint32_t q = 0, r = 0;
  f.DivMod(n, &q, &r);
  ASSERT_EQ(q, n / d) << n << " / " << d;
  ASSERT_EQ(r, n % d) << n << " % " << d;
  ASSERT_EQ(f.Div(n), n / d);
  ASSERT_EQ(f.Mod(n), n % d);
}

TEST(FastDivmod, MatchesIntegerDivision) {
  const uint32_t kMax = static_cast<uint32_t>(kFastDivmodLimit - 1);
  std::vector<uint32_t> divisors = {1, 2, 3, 5, 7, 12, 13, 64, 127, 196, 197, 768, 3137, 65535, 65536, 65537,
                                    1u << 30, (1u << 30) + 1, kMax, 1u << 31};
  for (int s = 0; s <= 31; ++s) {
    divisors.push_back(1u << s);
    if (s >= 2) divisors.push_back((1u << s) - 1);
    if (s >= 1 && s < 31) divisors.push_back((1u << s) + 1);
  }
  std::mt19937 rng(42);
  std::uniform_int_distribution<uint32_t> any(0, kMax);
  for (uint32_t d : divisors) {
    for (uint32_t n : {0u, 1u, d - 1, d, d + 1, 2 * (d / 2) + 1, kMax, kMax - 1, kMax - d / 2}) {
      if (n > kMax) continue;
      ExpectExact(d, n);
    }
    for (int i = 0; i < 2000; ++i) ExpectExact(d, any(rng));
  }
  std::uniform_int_distribution<uint32_t> any_divisor(1, 1u << 31);
  for (int i = 0; i < 200000; ++i) ExpectExact(any_divisor(rng), any(rng));
}

TEST(FastDivmod, DefaultDividesByOne) {
  const FastDivmod f;
  EXPECT_EQ(f.Div(12345), 12345u);
  EXPECT_EQ(f.Mod(12345), 0u);
}

}  // namespace
}  // namespace vigil::cuda
