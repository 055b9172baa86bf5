// Rules for routing convolutions, plain C++ so that they are tested
// without a GPU. Three for float32 convolutions without TF32: which measure
// cuDNN's candidates on their first run (MemoryBoundLargeConv), which run
// as 3xTF32 with the session option tf32x3_convolutions (SplitConvPays),
// and which run as cuBLASLt products (GemmConvPays). One for stems on
// tensor cores: which run after space to depth (StemSpaceToDepthPays).
//
// Which exact float32 convolutions (TF32 off) measure cuDNN's candidate
// engines on their first run without --tune (conv_cudnn.cpp): the large
// (at least 2^28 multiply-adds: batch 64 of an ImageNet CNN, nothing at
// batch 1) that move more bytes than they compute, by the estimate below
// (at most 16 flops per byte, about where an H100's or H200's float32 FMA
// rate meets its memory bandwidth). Plain C++, so that the rule is tested
// without a GPU.
//
// Why: for those, cuDNN's first pick was often slow, and fusing the bias,
// residual and ReLU saves a pass over memory that counts. On an H200
// (batch 64, bench/results/exact_conv_measure_h200.md) MobileNetV2 ran
// 5.26 -> 4.50-4.55 ms. Measuring every narrow convolution (a reduction of
// at most 256) made it 4.27 ms and ResNet-50 5% faster, but ResNet-50's
// first result took 1.5 s instead of 0.73 (its fused float32 engines are
// compiled at run time): this rule adds about 0.1 s to it and leaves its
// speed as it was. At batch 1 the measured picks were slower (they are timed with the
// L2 cache flushed, and a batch-1 model lives in L2), which the size limit
// keeps out.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace vigil::cuda {

inline constexpr double kMaxMeasuredConvFlopsPerByte = 16;
inline constexpr double kMinMeasuredConvMacs = double(int64_t{1} << 28);

// The float32 flops per byte of a convolution with X [N, C, spatial...], W
// [M, C/group, kernel...] and the spatial `strides`, counting each input
// element read once (per stride step) and each output written once; the
// weights stay in cache: 2 * M * C/group * kernel / (4 * (C / strides + M)).
// 0 for malformed shapes.
inline double ConvFlopsPerByte(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                               const std::vector<int64_t>& strides) {
  if (x.size() < 2 || w.size() < 2 || x[1] <= 0 || w[0] <= 0) return 0;
  double reduction = 1, step = 1;
  for (size_t i = 1; i < w.size(); ++i) reduction *= double(w[i]);
  for (int64_t s : strides) step *= double(s > 0 ? s : 1);
  const double m = double(w[0]);
  return 2.0 * m * reduction / (4.0 * (double(x[1]) / step + m));
}

// Whether a float32 convolution with these logical NCHW dims is measured.
inline bool MemoryBoundLargeConv(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                 const std::vector<int64_t>& y, const std::vector<int64_t>& strides) {
  const double intensity = ConvFlopsPerByte(x, w, strides);
  if (!(intensity > 0 && intensity <= kMaxMeasuredConvFlopsPerByte) || y.empty()) return false;
  double macs = 1;
  for (int64_t d : y) macs *= double(d);
  for (size_t i = 1; i < w.size(); ++i) macs *= double(w[i]);
  return macs >= kMinMeasuredConvMacs;
}

// The other exact float32 convolutions measured on their first run: large
// (at least 2^28 multiply-adds) stride-1 windows of 3x3 or more over output
// images of at least 112x112 pixels, a UNet's full-resolution levels, which
// the layout pass leaves NCHW on cuDNN (conv_layout.h). There cuDNN's first
// pick was slow: a base-32 UNet at 224x224, batch 64, ran 27.5 ms with it
// and 24.9 ms with every convolution tuned (H200). ResNet-50's and
// MobileNetV2's convolutions are under 112x112 or strided.
inline constexpr double kMinMeasuredImagePixels = 112.0 * 112.0;

inline bool LargeImageConv(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                           const std::vector<int64_t>& y, const std::vector<int64_t>& strides) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || strides.size() != 2) return false;
  if (strides[0] != 1 || strides[1] != 1 || w[2] * w[3] < 9) return false;
  if (double(y[2]) * double(y[3]) < kMinMeasuredImagePixels) return false;
  double macs = 1;
  for (int64_t d : y) macs *= double(d);
  for (size_t i = 1; i < w.size(); ++i) macs *= double(w[i]);
  return macs >= kMinMeasuredConvMacs;
}

// How many images of the batch a measured convolution times its candidates
// on (its first N, a prefix of X and of Y in NCHW and NHWC alike): the
// fewest that still make at least 2^32 multiply-adds, which keep an H200
// busy for a dozen waves of tiles, so that the engines rank as on the whole
// batch; the whole batch where that is more than half of it. The winner is
// then built for the whole batch (conv_cudnn.cpp). Why: at batch 64 a
// base-32 UNet's six full-resolution convolutions took 0.85 s to measure
// whole, against 0.6 s for the rest of its first run.
inline constexpr double kMinMeasuredPartMacs = double(int64_t{1} << 32);

inline int64_t MeasuredImages(const std::vector<int64_t>& w, const std::vector<int64_t>& y) {
  if (y.size() < 2 || w.size() < 2 || y[0] <= 1) return y.empty() ? 0 : y[0];
  double per_image = 1;
  for (size_t i = 1; i < y.size(); ++i) per_image *= double(y[i]);
  for (size_t i = 1; i < w.size(); ++i) per_image *= double(w[i]);
  if (!(per_image > 0)) return y[0];
  const double part = std::ceil(kMinMeasuredPartMacs / per_image);
  return 2 * part <= double(y[0]) ? int64_t(part) : y[0];
}

// Which float32 convolutions run as 3xTF32 when the session option
// tf32x3_convolutions is on (TF32 off; split_tf32.h): X is split into
// [x_hi | x_lo | x_hi] along its channels, W into [w_hi | w_hi | w_lo], and
// one TF32 tensor-core convolution of 3C input channels computes
// x_hi·w_hi + x_lo·w_hi + x_hi·w_lo. The split costs a pass that reads X
// once and writes it three times, and the convolution reads three times
// the input; what the tensor cores save grows with the multiply-adds per
// input element, M * kernel taps / strides, so a large convolution splits
// only with at least 256 of them. A small one (under 2^27 multiply-adds:
// every convolution of a CNN at batch 1) is bound by launches, not bytes,
// and splits whatever its shape: in NHWC that also saves the transposes
// cuDNN's exact float32 engines run around themselves. Under 2^20 nothing
// splits. Measured on an H200: bench/results/conv_tf32x3_h200.md.
inline constexpr double kMinSplitConvMacsPerInput = 256;
inline constexpr double kMinSplitConvMacs = double(int64_t{1} << 20);
inline constexpr double kSmallSplitConvMacs = double(int64_t{1} << 27);

// Whether a float32 convolution (group 1) with these logical NCHW dims runs
// split.
inline bool SplitConvPays(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                          const std::vector<int64_t>& y, const std::vector<int64_t>& strides) {
  if (x.size() < 3 || w.size() != x.size() || y.size() != x.size() || w[0] <= 0) return false;
  double per_input = double(w[0]), macs = 1;
  for (size_t i = 2; i < w.size(); ++i) per_input *= double(w[i]);
  for (int64_t s : strides) per_input /= double(s > 0 ? s : 1);
  for (int64_t d : y) macs *= double(d);
  for (size_t i = 1; i < w.size(); ++i) macs *= double(w[i]);
  if (!(macs >= kMinSplitConvMacs)) return false;
  return macs < kSmallSplitConvMacs || per_input >= kMinSplitConvMacsPerInput;
}

// Which exact float32 channels-last convolutions (group 1, 2-D) run as
// cuBLASLt products (conv_gemm.h) rather than through cuDNN: all but those
// with a kernel larger than 1x1, stride 1 and at least 8192 output pixels
// (N*OH*OW). For those cuDNN's Winograd and FFT engines do fewer
// multiplications than a product: on an H200 (batch 64, GPU time,
// tools/device/conv_gemm_probe.py) ResNet-50's 3x3 128 -> 128 on 28x28 took
// 0.21 ms channels-last through cuDNN and 0.34 ms as the product alone, its
// 256 -> 256 on 14x14 (12544 pixels) 0.23 and 0.33; on 7x7 (3136 pixels)
// the product won, 0.32 against 0.50, as every strided and 1x1 one did, and
// every convolution at batch 1.
inline constexpr double kMinCudnnConvPixels = 8192;

// Whether a convolution with these logical NCHW dims runs as a product.
inline bool GemmConvPays(const std::vector<int64_t>& w, const std::vector<int64_t>& y,
                         const std::vector<int64_t>& strides) {
  if (w.size() != 4 || y.size() != 4 || strides.size() != 2) return false;
  const bool pointwise = w[2] == 1 && w[3] == 1;
  const bool strided = strides[0] > 1 || strides[1] > 1;
  const double pixels = double(y[0]) * double(y[2]) * double(y[3]);
  return pointwise || strided || pixels < kMinCudnnConvPixels;
}

// Which stems on tensor cores (float16, bfloat16, or float32 with TF32; at
// most 4 input channels, stride 2: conv_space_to_depth.h) run as a stride-1
// convolution over 16 channels after space to depth: windows of at least
// 49 taps (7x7) over at least 2^15 output pixels (N*OH*OW). The rewrite
// trades cuDNN's slow engines for 3 channels against more multiply-adds
// (ceil(kH/2) * ceil(kW/2) * 16 per output instead of kH * kW * C): on an
// H200 (float16, tools/device/variants_ab.sh, bench/results/conv_gemm_h200.md)
// ResNet-50's 7x7 stem made the model 7.6% faster at batch 64 (802,816
// pixels), 4.5% at 16, 2% at 8, the same at 2 and 4, and 2% slower at 1
// (12,544 pixels); MobileNetV2's 3x3 stem made it 1-2% slower at batch 1
// and 64.
inline constexpr int64_t kMinStemTaps = 49;
inline constexpr double kMinStemPixels = 32768;

// Whether a stem with these logical NCHW dims (W [M, C, kH, kW], Y [N, M,
// OH, OW]) is rewritten.
inline bool StemSpaceToDepthPays(const std::vector<int64_t>& w, const std::vector<int64_t>& y) {
  if (w.size() != 4 || y.size() != 4) return false;
  return w[2] * w[3] >= kMinStemTaps && double(y[0]) * double(y[2]) * double(y[3]) >= kMinStemPixels;
}

}  // namespace vigil::cuda
