// Exhaustive checks of base/float16.h against references built from ldexp
// and double arithmetic: every half value widened; float -> half rounding to
// nearest even at every midpoint between adjacent halves, through the
// subnormals and into overflow; NaN kept; the same for bfloat16 over a sweep
// of float bit patterns.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "vigil/float16.h"

namespace vigil {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The value of half `h` by its definition: (-1)^s * 2^(e-15) * 1.m, or
// 2^-14 * 0.m for subnormals.
double HalfValue(uint16_t h) {
  const int sign = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0) v = std::ldexp(m, -24);
  else if (e == 31) v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else v = std::ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

double BfloatValue(uint16_t b) {
  const int sign = b >> 15, e = (b >> 7) & 0xFF, m = b & 0x7F;
  double v;
  if (e == 0) v = std::ldexp(m, -133);
  else if (e == 255) v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  else v = std::ldexp(128 + m, e - 134);
  return sign ? -v : v;
}

// Nearest-even rounding of |a| to a grid whose spacing is 2^(floor(log2 a) -
// mantissa_bits), never finer than `min_quantum` (the subnormal spacing).
double RoundToGrid(double a, int mantissa_bits, double min_quantum) {
  if (a == 0) return 0;
  double quantum = std::ldexp(1.0, std::ilogb(a) - mantissa_bits);
  quantum = std::max(quantum, min_quantum);
  return std::nearbyint(a / quantum) * quantum;  // a / quantum is exact in double
}

// Reference float -> half: round in double, then find the half by value.
uint16_t RefFloatToHalf(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return 0x7E00;  // any NaN; callers check only NaN-ness
  const double r = RoundToGrid(std::abs(static_cast<double>(f)), 10, std::ldexp(1.0, -24));
  if (r > 65504.0) return sign | 0x7C00;  // beyond the largest half: inf
  // The positive halves are sorted by value as integers.
  uint16_t lo = 0, hi = 0x7C00;
  while (lo < hi) {
    uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    if (HalfValue(mid) < r) lo = static_cast<uint16_t>(mid + 1);
    else hi = mid;
  }
  EXPECT_EQ(HalfValue(lo), r) << "reference: rounded value is not a half";
  return sign | lo;
}

uint16_t RefFloatToBfloat(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double r = RoundToGrid(std::abs(static_cast<double>(f)), 7, std::ldexp(1.0, -133));
  if (r > static_cast<double>(std::numeric_limits<float>::max())) return sign | 0x7F80;
  const float rf = static_cast<float>(r);  // exact: r has 8 significant bits
  return static_cast<uint16_t>(sign | (Bits(rf) >> 16));
}

TEST(Float16, EveryHalfWidensExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float got = Float16ToFloat(static_cast<uint16_t>(h));
    const double want = HalfValue(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
    ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;  // -0 stays -0
  }
}

TEST(Float16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t back = FloatToFloat16(Float16ToFloat(static_cast<uint16_t>(h)));
    if (std::isnan(HalfValue(static_cast<uint16_t>(h)))) {
      ASSERT_TRUE(std::isnan(HalfValue(back))) << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

// Between every pair of adjacent halves (subnormals included, and from the
// largest half towards inf): the exact midpoint goes to the even one, the
// floats just beside it to the nearer one.
TEST(Float16, RoundsToNearestEvenBetweenEveryAdjacentPair) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    const double a = HalfValue(static_cast<uint16_t>(h));
    const double b = h + 1 < 0x7C00 ? HalfValue(static_cast<uint16_t>(h + 1)) : 65536.0;  // next step: inf
    const float mid = static_cast<float>((a + b) / 2);
    ASSERT_EQ(static_cast<double>(mid), (a + b) / 2) << "midpoint not exact in float";
    const uint16_t even = (h & 1) ? static_cast<uint16_t>(h + 1) : static_cast<uint16_t>(h);
    for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(FloatToFloat16(s * mid), sign | even) << std::hex << h;
      ASSERT_EQ(FloatToFloat16(s * std::nextafter(mid, 0.0f)), sign | h) << std::hex << h;
      ASSERT_EQ(FloatToFloat16(s * std::nextafter(mid, INFINITY)), sign | (h + 1)) << std::hex << h;
    }
  }
}

TEST(Float16, TinyOverflowInfAndNan) {
  EXPECT_EQ(FloatToFloat16(std::ldexp(1.0f, -25)), 0);        // half the smallest subnormal: tie to 0
  EXPECT_EQ(FloatToFloat16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 1);
  EXPECT_EQ(FloatToFloat16(std::numeric_limits<float>::denorm_min()), 0);
  EXPECT_EQ(FloatToFloat16(-std::numeric_limits<float>::denorm_min()), 0x8000);
  EXPECT_EQ(FloatToFloat16(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToFloat16(65519.996f), 0x7BFF);
  EXPECT_EQ(FloatToFloat16(65520.0f), 0x7C00);
  EXPECT_EQ(FloatToFloat16(1e10f), 0x7C00);
  EXPECT_EQ(FloatToFloat16(-std::numeric_limits<float>::max()), 0xFC00);
  EXPECT_EQ(FloatToFloat16(INFINITY), 0x7C00);
  EXPECT_EQ(FloatToFloat16(-INFINITY), 0xFC00);
  // Every NaN payload, including those whose high mantissa bits are zero.
  for (uint32_t m = 1; m < (1u << 23); m += (m < 4096 ? 1 : 4093)) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint16_t h = FloatToFloat16(FromBits(sign | 0x7F800000u | m));
      ASSERT_TRUE(std::isnan(HalfValue(h))) << std::hex << m;
      ASSERT_EQ((h & 0x8000) != 0, sign != 0);
    }
  }
}

// Every 2039th float bit pattern (all exponents, both signs) against the reference.
TEST(Float16, SweepOfFloatBitPatterns) {
  for (uint64_t b = 0; b < (1ull << 32); b += 2039) {
    const float f = FromBits(static_cast<uint32_t>(b));
    const uint16_t got = FloatToFloat16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(HalfValue(got))) << std::hex << b;
      continue;
    }
    ASSERT_EQ(got, RefFloatToHalf(f)) << std::hex << b << " (" << f << ")";
  }
}

TEST(Bfloat16, EveryBfloatWidensExactly) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float got = Bfloat16ToFloat(static_cast<uint16_t>(b));
    const double want = BfloatValue(static_cast<uint16_t>(b));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << b;
      continue;
    }
    ASSERT_EQ(static_cast<double>(got), want) << std::hex << b;
    ASSERT_EQ(FloatToBfloat16(got), b) << std::hex << b;  // round trip
  }
}

TEST(Bfloat16, SweepOfFloatBitPatterns) {
  for (uint64_t b = 0; b < (1ull << 32); b += 2029) {
    const float f = FromBits(static_cast<uint32_t>(b));
    const uint16_t got = FloatToBfloat16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(Bfloat16ToFloat(got))) << std::hex << b;
      ASSERT_EQ((got & 0x8000) != 0, (b & 0x80000000u) != 0);
      continue;
    }
    ASSERT_EQ(got, RefFloatToBfloat(f)) << std::hex << b << " (" << f << ")";
  }
}

TEST(Bfloat16, MidpointsTiesAndOverflow) {
  // Every exponent: the midpoint after each even and each odd mantissa.
  for (uint32_t e = 0; e < 255; ++e)
    for (uint32_t m : {0u, 1u, 0x7Eu, 0x7Fu})
      for (uint32_t sign : {0u, 0x8000u}) {
        const uint32_t b = sign | (e << 7) | m;
        const uint32_t mid = (b << 16) | 0x8000u;
        const uint16_t up = static_cast<uint16_t>(b + 1), down = static_cast<uint16_t>(b);
        ASSERT_EQ(FloatToBfloat16(FromBits(mid)), (m & 1) ? up : down) << std::hex << b;
        ASSERT_EQ(FloatToBfloat16(FromBits(mid - 1)), down) << std::hex << b;
        ASSERT_EQ(FloatToBfloat16(FromBits(mid + 1)), up) << std::hex << b;
      }
  EXPECT_EQ(FloatToBfloat16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf
  EXPECT_EQ(FloatToBfloat16(INFINITY), 0x7F80);
  EXPECT_EQ(FloatToBfloat16(-INFINITY), 0xFF80);
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(FromBits(0x7F800001u)))));  // payload only in low bits
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(FromBits(0xFFFFFFFFu)))));
}

}  // namespace
}  // namespace vigil
