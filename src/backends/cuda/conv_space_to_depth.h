// A stride-2 convolution with at most 4 input channels (an RGB stem: 3
// channels, 7x7, stride 2) rewritten as a stride-1 convolution over 16
// channels ("space to depth"), which cuDNN's tensor-core engines run well:
//   Z[n, u, v, (2p + q) * 4 + c] = X[n, 2u + p - pad_top, 2v + q - pad_left, c]
//   W'[m, a, b, (2p + q) * 4 + c] = W[m, 2a + p, 2b + q, c]
// (zero outside X or W and for c >= C), so that
//   Y[n, oh, ow, m] = sum over a < ceil(kH/2), b < ceil(kW/2) of Z[n, oh + a, ow + b, :] . W'[m, a, b, :],
// the same products as the original convolution, summed in another order
// (exact in integers). All tensors channels-last: int8 for the kernels
// below that name it; the others move 2- or 4-byte elements (float16,
// bfloat16, float32), for cuDNN's convolution over Z (conv_cudnn.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "base/status.h"

namespace vigil::cuda {

inline constexpr int64_t kSpaceToDepthChannels = 16;
// What the convolution kernel below takes: K = taps x 16 <= 256 (a window
// up to 8 x 8 before the rewrite), M a multiple of 16 up to 64.
inline constexpr int kSpaceToDepthMaxK = 256;
inline constexpr int kSpaceToDepthMaxM = 64;

struct SpaceToDepthGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // X [N, H, W, C], C <= 4
  int64_t m = 0, kh = 0, kw = 0;       // W [M, kH, kW, C]
  int64_t oh = 0, ow = 0;              // Y [N, OH, OW, M]
  int64_t pad_top = 0, pad_left = 0;
  // Z [N, OH + ceil(kH/2) - 1, OW + ceil(kW/2) - 1, 16] and W' [M, ceil(kH/2), ceil(kW/2), 16].
  int64_t zh() const { return oh + (kh + 1) / 2 - 1; }
  int64_t zw() const { return ow + (kw + 1) / 2 - 1; }
  int64_t z_elements() const { return n * zh() * zw() * kSpaceToDepthChannels; }
  int64_t w_elements() const { return m * ((kh + 1) / 2) * ((kw + 1) / 2) * kSpaceToDepthChannels; }
};

// The geometry of a convolution with logical X [N, C, H, W], W [M, C, kH,
// kW], Y [N, M, OH, OW] and the padding before its two spatial dims.
inline SpaceToDepthGeometry SpaceToDepthGeometryOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                   const std::vector<int64_t>& y,
                                                   const std::vector<int64_t>& pads_begin) {
  SpaceToDepthGeometry g;
  g.n = x[0];
  g.c = x[1];
  g.h = x[2];
  g.w = x[3];
  g.m = w[0];
  g.kh = w[2];
  g.kw = w[3];
  g.oh = y[2];
  g.ow = y[3];
  g.pad_top = pads_begin[0];
  g.pad_left = pads_begin[1];
  return g;
}

// Z from X; `z` 16-byte aligned.
Status LaunchSpaceToDepthInt8(const int8_t* x, int8_t* z, const SpaceToDepthGeometry& g, cudaStream_t stream);
// W' from W; `w2` 16-byte aligned.
Status LaunchSpaceToDepthFilterInt8(const int8_t* w, int8_t* w2, const SpaceToDepthGeometry& g, cudaStream_t stream);

// The same for `element_bytes` 2 or 4; `z` and `w2` 16-byte aligned.
Status LaunchSpaceToDepth(const void* x, void* z, const SpaceToDepthGeometry& g, int element_bytes,
                          cudaStream_t stream);
Status LaunchSpaceToDepthFilter(const void* w, void* w2, const SpaceToDepthGeometry& g, int element_bytes,
                                cudaStream_t stream);

// Whether LaunchSpaceToDepthConvInt8 takes `g`.
bool SpaceToDepthConvSupported(const SpaceToDepthGeometry& g);
// Y [N, OH, OW, M] int8 = saturate(round_half_even(float(Z (*) W') * scale[m] + bias[m])), Relu'd with
// `relu`: the stride-1 convolution over Z and W' on int8 tensor cores, exact
// int32 sums. `y` 16-byte aligned.
Status LaunchSpaceToDepthConvInt8(const int8_t* z, const int8_t* w2, const float* scale, const float* bias, int8_t* y,
                                  const SpaceToDepthGeometry& g, bool relu, cudaStream_t stream);

}  // namespace vigil::cuda
