// Division of 32-bit indices by a divisor fixed at launch, as a multiply-high,
// an add and a shift instead of a hardware-less integer division (CUDA has
// no divide instruction: `/` on 32 bits is a ~20-instruction sequence). The
// elementwise and data-movement kernels turn a linear index into coordinates
// with these. The method is Granlund and Montgomery's ("Division by
// invariant integers using multiplication", PLDI 1994), in the round-up form
// valid for dividends below 2^31.
//
// Host and device: the constructor runs on the host when a launch is
// planned; Div/DivMod run anywhere (a CPU-only test checks them against `/`).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define VIGIL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define VIGIL_HOST_DEVICE inline
#endif

namespace vigil::cuda {

// Dividends must be below 2^31 (kFastDivmodLimit); divisors in [1, 2^31].
inline constexpr uint64_t kFastDivmodLimit = uint64_t{1} << 31;

struct FastDivmod {
  uint32_t divisor = 1;
  uint32_t multiplier = 0;
  uint32_t shift = 0;

  FastDivmod() = default;
  // d in [1, 2^31]. With s = ceil(log2 d), m = floor(2^32 (2^s - d) / d) + 1
  // fits in 32 bits, and floor(n / d) = (mulhi(n, m) + n) >> s for n < 2^31
  // (the sum cannot overflow: mulhi(n, m) < n).
  explicit FastDivmod(uint32_t d) : divisor(d) {
    while ((uint64_t{1} << shift) < d) ++shift;
    multiplier = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }

  VIGIL_HOST_DEVICE uint32_t Div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const uint32_t hi = __umulhi(n, multiplier);
#else
    const auto hi = static_cast<uint32_t>((static_cast<uint64_t>(n) * multiplier) >> 32);
#endif
    return (hi + n) >> shift;
  }
  VIGIL_HOST_DEVICE uint32_t Mod(uint32_t n) const { return n - Div(n) * divisor; }
  VIGIL_HOST_DEVICE void DivMod(uint32_t n, uint32_t* q, uint32_t* r) const {
    *q = Div(n);
    *r = n - *q * divisor;
  }
};

}  // namespace vigil::cuda
