// The patch gather of conv_patch.h: P [rows, kH*kW*C] from X, and the
// shape test that decides which convolutions take the patch path.
#include "backends/cuda/conv_patch.h"

#include <cstdlib>
#include <string_view>

#include "base/dev_switch.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/fast_divmod.cuh"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 256;

// Index arithmetic of the gather, in copy units (U bytes each): thread i
// copies unit i of P, which is unit `u` of run `kh` of row (n, oy, ox).
struct GatherArgs {
  FastDivmod run_units;  // units per run of kW*C elements
  FastDivmod kernel_h;
  FastDivmod out_w;
  FastDivmod out_h;
  uint32_t in_h;
  int64_t x_row_units;  // units per row of X (W*C elements)
  uint32_t total;       // units in P
};

// P's layout is exactly (row, kh, u), so the destination is unit i itself;
// the source run starts at X[n, oy*kH + kh, ox*kW, 0]. Reads within a run
// and all writes are contiguous across a warp.
template <typename U>
__global__ void PatchGather(const U* __restrict__ x, U* __restrict__ p, GatherArgs a) {
  const uint32_t step = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < a.total; i += step) {
    uint32_t t, u, row, kh, r, ox, n, oy;
    a.run_units.DivMod(i, &t, &u);
    a.kernel_h.DivMod(t, &row, &kh);
    a.out_w.DivMod(row, &r, &ox);
    a.out_h.DivMod(r, &n, &oy);
    const int64_t x_row = static_cast<int64_t>(n) * a.in_h + static_cast<int64_t>(oy) * a.kernel_h.divisor + kh;
    p[i] = x[x_row * a.x_row_units + static_cast<int64_t>(ox) * a.run_units.divisor + u];
  }
}

// 16- and 8-byte copy units: CUDA's uint4 and uint2 are aligned to their
// size, so each unit is one vector load and one vector store.
using Unit16 = uint4;
using Unit8 = uint2;

bool Aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <typename U>
Status Launch(const PatchShape& s, size_t elem_bytes, const void* x, void* p, cudaStream_t stream) {
  const int64_t unit = sizeof(U);
  const int64_t run_units = s.kernel_w * s.channels * static_cast<int64_t>(elem_bytes) / unit;
  const int64_t total = s.rows() * s.kernel_h * run_units;
  GatherArgs a{FastDivmod(static_cast<uint32_t>(run_units)),
               FastDivmod(static_cast<uint32_t>(s.kernel_h)),
               FastDivmod(static_cast<uint32_t>(s.out_w)),
               FastDivmod(static_cast<uint32_t>(s.out_h)),
               static_cast<uint32_t>(s.in_h),
               s.in_w * s.channels * static_cast<int64_t>(elem_bytes) / unit,
               static_cast<uint32_t>(total)};
  PatchGather<U><<<BlocksFor(total, kThreads), kThreads, 0, stream>>>(static_cast<const U*>(x), static_cast<U*>(p), a);
  VIGIL_CHECK_LAUNCH("PatchGather");
  return Status::Ok();
}

// Every count the gather indexes stays below 2^31 (FastDivmod's range).
bool FitsIndexing(const PatchShape& s) {
  auto positive = [](int64_t v) { return v > 0 && static_cast<uint64_t>(v) < kFastDivmodLimit; };
  if (!positive(s.batch) || !positive(s.in_h) || !positive(s.in_w) || !positive(s.channels) ||
      !positive(s.kernel_h) || !positive(s.kernel_w) || !positive(s.out_h) || !positive(s.out_w) ||
      !positive(s.out_channels)) {
    return false;
  }
  // Products in double first, so that a huge dim cannot overflow int64.
  const double x_elems = double(s.batch) * double(s.in_h) * double(s.in_w) * double(s.channels);
  const double p_elems = double(s.batch) * double(s.out_h) * double(s.out_w) * double(s.kernel_h) *
                         double(s.kernel_w) * double(s.channels);
  return x_elems < double(kFastDivmodLimit) && p_elems < double(kFastDivmodLimit);
}

}  // namespace

std::optional<PatchShape> PatchShapeOf(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                       const std::vector<int64_t>& y, int64_t group,
                                       const std::vector<int64_t>& strides, const std::vector<int64_t>& pads_begin,
                                       const std::vector<int64_t>& pads_end, const std::vector<int64_t>& dilations) {
  if (x.size() != 4 || w.size() != 4 || y.size() != 4 || strides.size() != 2 || pads_begin.size() != 2 ||
      pads_end.size() != 2 || dilations.size() != 2) {
    return std::nullopt;
  }
  const int64_t kh = w[1], kw = w[2];
  if (group != 1 || w[3] != x[3] || y[0] != x[0] || y[3] != w[0]) return std::nullopt;
  if (strides[0] != kh || strides[1] != kw || dilations[0] != 1 || dilations[1] != 1) return std::nullopt;
  if (pads_begin[0] != 0 || pads_begin[1] != 0 || pads_end[0] != 0 || pads_end[1] != 0) return std::nullopt;
  if (kh <= 0 || kw <= 0 || kh * kw <= 1) return std::nullopt;
  if (y[1] != x[1] / kh || y[2] != x[2] / kw) return std::nullopt;
  PatchShape s{x[0], x[1], x[2], x[3], kh, kw, y[1], y[2], y[3]};
  if (!FitsIndexing(s)) return std::nullopt;
  return s;
}

bool PatchGemmEnabled() {
  return DevSwitchOn("VIGIL_PATCH_GEMM");
}

int PatchGatherUnitBytes(const PatchShape& s, ir::DataType dtype, const void* x, const void* p) {
  const int elem = ir::DataTypeBits(dtype) / 8;
  // A unit must divide a run (kW*C elements) and a row of X (W*C elements,
  // so that every run starts on a unit) and both base addresses.
  const int64_t run_bytes = s.kernel_w * s.channels * elem, row_bytes = s.in_w * s.channels * elem;
  for (int unit : {16, 8, 4}) {
    if (unit > elem && run_bytes % unit == 0 && row_bytes % unit == 0 && Aligned(x, unit) && Aligned(p, unit)) {
      return unit;
    }
  }
  return elem;
}

Status LaunchPatchGather(const PatchShape& s, ir::DataType dtype, const void* x, void* p, cudaStream_t stream) {
  const int elem = ir::DataTypeBits(dtype) / 8;
  if (elem != 2 && elem != 4) {
    return InternalError("patch gather: dtype {} is not a 2- or 4-byte type", ir::DataTypeName(dtype));
  }
  if (!FitsIndexing(s) || s.out_h != s.in_h / s.kernel_h || s.out_w != s.in_w / s.kernel_w) {
    return InternalError("patch gather: X [{}, {}, {}, {}] in {}x{} patches -> [{}, {}] is not a patch shape",
                         s.batch, s.in_h, s.in_w, s.channels, s.kernel_h, s.kernel_w, s.out_h, s.out_w);
  }
  switch (PatchGatherUnitBytes(s, dtype, x, p)) {
    case 16: return Launch<Unit16>(s, elem, x, p, stream);
    case 8: return Launch<Unit8>(s, elem, x, p, stream);
    case 4: return Launch<uint32_t>(s, elem, x, p, stream);
    default: return Launch<uint16_t>(s, elem, x, p, stream);
  }
}

}  // namespace vigil::cuda
