// Launching a gather kernel directly on a poisoned buffer (the CUDA build's
// test program compiles the gathers in): conv_patch_test.cpp and
// conv_gemm_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "base/status.h"
#include "runtime/tensor.h"

namespace vigil::cuda::testing {

// Copies x to the device `shift` bytes into its allocation, fills P's
// allocation with 0xFF bytes (P starts `shift` bytes in, a guard of 64 bytes
// follows `want`), runs `launch(x_device, p_device)`, and checks P against
// `want` byte for byte and the guard untouched.
template <typename Launch>
void ExpectGatherWrites(const runtime::Tensor& x, const std::vector<uint8_t>& want, size_t shift,
                        const std::string& what, Launch launch) {
  constexpr size_t kGuard = 64;
  void *xd = nullptr, *pd = nullptr;
  ASSERT_EQ(cudaMalloc(&xd, x.byte_size() + shift), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&pd, want.size() + shift + kGuard), cudaSuccess);
  uint8_t* xs = static_cast<uint8_t*>(xd) + shift;
  uint8_t* ps = static_cast<uint8_t*>(pd) + shift;
  EXPECT_EQ(cudaMemcpy(xs, x.raw_data(), x.byte_size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(pd, 0xFF, want.size() + shift + kGuard), cudaSuccess);
  Status st = launch(static_cast<const void*>(xs), static_cast<void*>(ps));
  EXPECT_TRUE(st.ok()) << what << ": " << st.ToString();
  std::vector<uint8_t> got(want.size() + kGuard);
  EXPECT_EQ(cudaMemcpy(got.data(), ps, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(xd);
  cudaFree(pd);
  size_t wrong = 0;
  for (size_t i = 0; i < want.size(); ++i) wrong += got[i] != want[i];
  EXPECT_EQ(wrong, 0u) << what << ": bytes of P that differ from the host's gather (0xFF: not written)";
  for (size_t i = want.size(); i < got.size(); ++i) {
    ASSERT_EQ(got[i], 0xFF) << what << ": byte " << i - want.size() << " past P was written";
  }
}

}  // namespace vigil::cuda::testing
