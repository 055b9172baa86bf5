// The gather of conv_gemm.h: rows of P [rows, kH*kW*C] from X (im2col in
// NHWC, zeros for the padding), and the shape test of the product path.
#include "backends/cuda/conv_gemm.h"

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/fast_divmod.cuh"
#include "base/dev_switch.h"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// Index arithmetic of the gather, in copy units (U bytes each): thread i
// writes unit i of the slice of P, which is unit `u` of tap (kh, kw) of row
// row0 + r, and reads the C elements of X at that tap (or writes zeros).
struct GatherArgs {
  FastDivmod tap_units;  // units per tap (C elements)
  FastDivmod taps;       // kH * kW
  FastDivmod kernel_w;
  FastDivmod out_w;
  FastDivmod out_h;
  int32_t in_h, in_w, stride_h, stride_w, pad_top, pad_left, dilation_h, dilation_w;
  uint32_t row0;
  uint32_t total;  // units in the slice
};

// Writes are contiguous across a warp; reads are within each tap's run of C
// elements, which lie contiguously in X.
template <typename U>
__global__ void ConvGather(const U* __restrict__ x, U* __restrict__ p, GatherArgs a) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.total; i += step) {
    uint32_t t, u, r, tap, kh, kw, q, ox, n, oy;
    a.tap_units.DivMod(i, &t, &u);
    a.taps.DivMod(t, &r, &tap);
    a.kernel_w.DivMod(tap, &kh, &kw);
    a.out_w.DivMod(a.row0 + r, &q, &ox);
    a.out_h.DivMod(q, &n, &oy);
    const int32_t iy = static_cast<int32_t>(oy) * a.stride_h - a.pad_top + static_cast<int32_t>(kh) * a.dilation_h;
    const int32_t ix = static_cast<int32_t>(ox) * a.stride_w - a.pad_left + static_cast<int32_t>(kw) * a.dilation_w;
    U v{};
    if (iy >= 0 && iy < a.in_h && ix >= 0 && ix < a.in_w) {
      const int64_t pixel = (static_cast<int64_t>(n) * a.in_h + iy) * a.in_w + ix;
      v = x[pixel * a.tap_units.divisor + u];
    }
    p[i] = v;
  }
}

bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <typename U>
Status Launch(const GemmConvShape& s, size_t elem_bytes, const void* x, void* p, int64_t row0, int64_t rows,
              cudaStream_t stream) {
  const int64_t tap_units = s.channels * static_cast<int64_t>(elem_bytes) / static_cast<int64_t>(sizeof(U));
  const int64_t total = rows * s.kernel_h * s.kernel_w * tap_units;
  if (total >= static_cast<int64_t>(kFastDivmodLimit)) {
    return InternalError("convolution gather: {} rows of {} elements are over 2^31 copy units", rows, s.depth());
  }
  auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
  GatherArgs a{FastDivmod(static_cast<uint32_t>(tap_units)),
               FastDivmod(static_cast<uint32_t>(s.kernel_h * s.kernel_w)),
               FastDivmod(static_cast<uint32_t>(s.kernel_w)),
               FastDivmod(static_cast<uint32_t>(s.out_w)),
               FastDivmod(static_cast<uint32_t>(s.out_h)),
               i32(s.in_h), i32(s.in_w), i32(s.stride_h), i32(s.stride_w), i32(s.pad_top), i32(s.pad_left),
               i32(s.dilation_h), i32(s.dilation_w),
               static_cast<uint32_t>(row0),
               static_cast<uint32_t>(total)};
  ConvGather<U><<<BlocksFor(total, kThreads), kThreads, 0, stream>>>(static_cast<const U*>(x), static_cast<U*>(p), a);
  VIGIL_CHECK_LAUNCH("ConvGather");
  return Status::Ok();
}

// Every count the gather indexes with 32 bits stays below 2^31, and every
// coordinate it computes (padding included) fits an int32.
bool FitsIndexing(const GemmConvShape& s) {
  const int64_t small = int64_t{1} << 20;  // kernel, stride, padding and dilation
  for (int64_t v : {s.batch, s.in_h, s.in_w, s.channels, s.out_h, s.out_w, s.out_channels}) {
    if (v <= 0 || static_cast<uint64_t>(v) >= kFastDivmodLimit) return false;
  }
  for (int64_t v : {s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.dilation_h, s.dilation_w}) {
    if (v <= 0 || v > small) return false;
  }
  if (s.pad_top < 0 || s.pad_left < 0 || s.pad_top > small || s.pad_left > small) return false;
  // Products in double first, so that a huge dim cannot overflow int64.
  const double x_elems = double(s.batch) * double(s.in_h) * double(s.in_w) * double(s.channels);
  const double y_elems = double(s.batch) * double(s.out_h) * double(s.out_w) * double(s.out_channels);
  const double coords = double(s.out_h) * double(s.stride_h) + double(s.kernel_h) * double(s.dilation_h) +
                        double(s.out_w) * double(s.stride_w) + double(s.kernel_w) * double(s.dilation_w);
  return x_elems < double(kFastDivmodLimit) && y_elems < double(kFastDivmodLimit) &&
         double(s.rows()) < double(kFastDivmodLimit) && double(s.depth()) < double(kFastDivmodLimit) &&
         coords < double(kFastDivmodLimit);
}

}  // namespace

std::optional<GemmConvShape> GemmConvShapeOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                             const std::vector<int64_t>& y, int64_t group,
                                             const std::vector<int64_t>& strides,
                                             const std::vector<int64_t>& pads_begin,
                                             const std::vector<int64_t>& pads_end,
                                             const std::vector<int64_t>& dilations) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || strides.size() != 2 || pads_begin.size() != 2 ||
      pads_end.size() != 2 || dilations.size() != 2) {
    return std::nullopt;
  }
  if (group != 1 || w[3] != x[3] || y[0] != x[0] || y[3] != w[0]) return std::nullopt;
  GemmConvShape s{x[0], x[1], x[2], x[3], w[1], w[2], strides[0], strides[1], pads_begin[0], pads_begin[1],
                  dilations[0], dilations[1], y[1], y[2], y[3]};
  if (!FitsIndexing(s) || pads_end[0] < 0 || pads_end[1] < 0) return std::nullopt;
  // The output size the convolution gives (floor), which Y must have.
  auto out = [](int64_t in, int64_t pre, int64_t post, int64_t k, int64_t d, int64_t st) {
    const int64_t span = in + pre + post - d * (k - 1) - 1;
    return span < 0 ? int64_t{0} : span / st + 1;
  };
  if (y[1] != out(s.in_h, s.pad_top, pads_end[0], s.kernel_h, s.dilation_h, s.stride_h) ||
      y[2] != out(s.in_w, s.pad_left, pads_end[1], s.kernel_w, s.dilation_w, s.stride_w)) {
    return std::nullopt;
  }
  return s;
}

bool GemmConvEnabled() { return DevSwitchOn("VIGIL_CONV_GEMM"); }

Status LaunchConvGather(const GemmConvShape& s, ir::DataType dtype, const void* x, void* p, int64_t row0,
                        int64_t rows, cudaStream_t stream) {
  const int elem = ir::DataTypeBits(dtype) / 8;
  if (elem != 2 && elem != 4) {
    return InternalError("convolution gather: dtype {} is not a 2- or 4-byte type", ir::DataTypeName(dtype));
  }
  if (!FitsIndexing(s) || row0 < 0 || rows < 0 || row0 + rows > s.rows()) {
    return InternalError("convolution gather: rows [{}, {}) of X [{}, {}, {}, {}] by a {}x{} kernel into [{}, {}]",
                         row0, row0 + rows, s.batch, s.in_h, s.in_w, s.channels, s.kernel_h, s.kernel_w, s.out_h,
                         s.out_w);
  }
  if (rows == 0) return Status::Ok();
  // The widest unit that divides a tap's run of C elements and both base
  // addresses (P's rows are whole runs, so they stay aligned too).
  const int64_t run_bytes = s.channels * elem;
  for (int unit : {16, 8, 4}) {
    if (unit > elem && run_bytes % unit == 0 && Aligned(x, unit) && Aligned(p, unit)) {
      if (unit == 16) return Launch<uint4>(s, elem, x, p, row0, rows, stream);
      if (unit == 8) return Launch<uint2>(s, elem, x, p, row0, rows, stream);
      return Launch<uint32_t>(s, elem, x, p, row0, rows, stream);
    }
  }
  if (elem == 4) return Launch<uint32_t>(s, elem, x, p, row0, rows, stream);
  return Launch<uint16_t>(s, elem, x, p, row0, rows, stream);
}

}  // namespace vigil::cuda
