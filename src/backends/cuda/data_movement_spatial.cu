// CUDA kernels of the data-movement ops that re-arrange space: Pad
// (constant, reflect, edge, wrap), DepthToSpace, SpaceToDepth and Trilu. Any
// dtype of 1, 2, 4 or 8 bytes; parameters resolved on the host through
// src/ops (op_params.h), as the CPU kernels do.
// fmt's constexpr formatting code mentions long double; with
// --expt-relaxed-constexpr nvcc warns about it (#20208) in any .cu file that
// formats a message, although none of it runs on the device.
#pragma nv_diag_suppress 20208

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>
#include <fmt/ranges.h>
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "vigil/float16.h"
#include "ops/op_params.h"
#include "ops/shape_ops_common.h"
#include "backends/cuda/data_movement_common.cuh"

namespace vigil::cuda {
namespace {

using namespace movement;

template <typename I>
struct TriluMap {  // kept where col - row >= k (upper) or <= k (lower); zero elsewhere
  I rows = 0, cols = 0;
  int64_t k = 0;
  bool upper = true;
  __device__ I operator()(I i) const {
    I t = i / cols;
    int64_t col = i - t * cols, row = t % rows;
    bool keep = upper ? col - row >= k : col - row <= k;
    return keep ? i : I(-1);
  }
};

// `v` stored as one element of `t` (integers round half to even and
// saturate, as the CPU kernel does), as the low bytes of a uint64.
template <typename T>
uint64_t IntBits(double v) {
  T r = 0;
  if (!std::isnan(v)) {
    double n = std::nearbyint(v);
    if (n <= static_cast<double>(std::numeric_limits<T>::min())) r = std::numeric_limits<T>::min();
    else if (n >= static_cast<double>(std::numeric_limits<T>::max())) r = std::numeric_limits<T>::max();
    else r = static_cast<T>(n);
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &r, sizeof(T));
  return bits;
}

bool ValueBits(ir::DataType t, double v, uint64_t* bits) {
  using D = ir::DataType;
  *bits = 0;
  switch (t) {
    case D::kFloat32: { float f = static_cast<float>(v); std::memcpy(bits, &f, 4); return true; }
    case D::kFloat64: std::memcpy(bits, &v, 8); return true;
    case D::kFloat16: *bits = FloatToFloat16(static_cast<float>(v)); return true;
    case D::kBfloat16: *bits = FloatToBfloat16(static_cast<float>(v)); return true;
    case D::kInt8: *bits = IntBits<int8_t>(v); return true;
    case D::kInt16: *bits = IntBits<int16_t>(v); return true;
    case D::kInt32: *bits = IntBits<int32_t>(v); return true;
    case D::kInt64: *bits = IntBits<int64_t>(v); return true;
    case D::kUint8: *bits = IntBits<uint8_t>(v); return true;
    case D::kUint16: *bits = IntBits<uint16_t>(v); return true;
    case D::kUint32: *bits = IntBits<uint32_t>(v); return true;
    case D::kUint64: *bits = IntBits<uint64_t>(v); return true;
    case D::kBool: *bits = v != 0; return true;
    default: return false;
  }
}

Status Pad(CudaKernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(PadMode mode, ops::ReadPadMode(ctx.node()));
  int64_t rank = static_cast<int64_t>(data.rank());
  if (rank > kMaxRank) return ctx.Unsupported("rank {} (at most {})", rank, kMaxRank);
  // Begin pads then end pads for every axis (ops/op_params.h, shared with the CPU kernel).
  Shape pads_input, axes_input;
  if (ctx.opset() >= 11) {
    VIGIL_ASSIGN_OR_RETURN(pads_input, HostInts(ctx, 1, "pads"));
  }
  const bool has_axes = ctx.opset() >= 18 && ctx.has_input(3);
  if (has_axes) {
    VIGIL_ASSIGN_OR_RETURN(axes_input, HostInts(ctx, 3, "axes"));
  }
  VIGIL_ASSIGN_OR_RETURN(Shape full, ops::ResolvePads(ctx.node(), ctx.opset(), rank,
                                                      ctx.opset() >= 11 ? &pads_input : nullptr,
                                                      has_axes ? &axes_input : nullptr));
  uint64_t fill = 0;
  if (ctx.opset() < 11) {
    VIGIL_ASSIGN_OR_RETURN(float v, ops::FloatAttr(ctx.node(), "value", 0.0f));
    if (!ValueBits(data.dtype(), v, &fill)) return ctx.Unsupported("dtype {} with a 'value' attribute", ir::DataTypeName(data.dtype()));
  } else if (const runtime::Tensor* c = ctx.input(2); c && c->element_count() > 0) {
    if (c->dtype() != data.dtype() || c->element_count() != 1) {
      return ctx.Fail("constant_value {} must be one element of the data's dtype {}", c->Describe(),
                      ir::DataTypeName(data.dtype()));
    }
    std::memcpy(&fill, c->raw_data(), eb);
  }
  constexpr int64_t kLimit = int64_t{1} << 32;
  Shape out, lead(rank), first(rank), len(rank);
  for (int64_t a = 0; a < rank; ++a) {
    int64_t before = full[a], after = full[a + rank];
    if (before > kLimit || before < -kLimit || after > kLimit || after < -kLimit) {
      return ctx.Fail("pads [{}] are too large", fmt::join(full, ","));
    }
    first[a] = std::max<int64_t>(-before, 0);
    len[a] = data.dim(a) - first[a] - std::max<int64_t>(-after, 0);
    if (len[a] < 0) return ctx.Fail("pads {} and {} crop axis {} of size {} below zero", before, after, a, data.dim(a));
    lead[a] = std::max<int64_t>(before, 0);
    out.push_back(data.dim(a) + before + after);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, data.dtype(), out));
  for (int64_t a = 0; a < rank; ++a) {
    if (len[a] == 0 && out[a] > 0 && mode != PadMode::kConstant) {
      return ctx.Fail("cannot pad the empty axis {} in a non-constant mode", a);
    }
  }
  Shape strides = Strides(data.shape());
  return LaunchMapCopy(ctx, "Pad", eb, data.raw_data(), data.element_count(), t->raw_data(), Count(out), fill,
                       [&](auto tag) {
                         using I = decltype(tag);
                         PadMap<I> m{static_cast<int>(rank), mode};
                         for (int d = 0; d < m.rank; ++d) {
                           m.dims[d] = I(out[d]), m.strides[d] = I(strides[d]), m.lead[d] = I(lead[d]);
                           m.first[d] = I(first[d]), m.len[d] = I(len[d]);
                         }
                         return m;
                       });
}

// DepthToSpace / SpaceToDepth: the output is the 6-D view `src6` of the
// input transposed by `perm`.
Status BlockPermute(CudaKernelContext& ctx, bool to_space) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t b, ops::RequiredIntAttr(ctx.node(), "blocksize"));
  if (b < 1 || b > (int64_t{1} << 20)) return ctx.Fail("blocksize is {}; it must be in [1, 2^20]", b);
  if (in.rank() != 4) return ctx.Fail("input {} must be 4-D (NCHW)", in.Describe());
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(ctx.node(), "mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return ctx.Fail("mode '{}' is not DCR or CRD", mode);
  bool dcr = mode == "DCR";
  int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
  Shape src6, perm, out;
  if (to_space) {
    if (c % (b * b) != 0) return ctx.Fail("channels {} of {} are not divisible by blocksize² {}", c, in.Describe(), b * b);
    int64_t oc = c / (b * b);
    out = {n, oc, h * b, w * b};
    src6 = dcr ? Shape{n, b, b, oc, h, w} : Shape{n, oc, b, b, h, w};
    perm = dcr ? Shape{0, 3, 4, 1, 5, 2} : Shape{0, 1, 4, 2, 5, 3};
  } else {
    if (h % b != 0 || w % b != 0) return ctx.Fail("height and width of {} are not divisible by blocksize {}", in.Describe(), b);
    out = {n, c * b * b, h / b, w / b};
    src6 = {n, c, h / b, b, w / b, b};
    perm = dcr ? Shape{0, 3, 5, 1, 2, 4} : Shape{0, 1, 3, 5, 2, 4};
  }
  Shape strides6 = Strides(src6), out6, src_strides;
  for (int64_t p : perm) {
    out6.push_back(src6[p]);
    src_strides.push_back(strides6[p]);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), out));
  return LaunchStrided(ctx, to_space ? "DepthToSpace" : "SpaceToDepth", eb, in.raw_data(), in.element_count(),
                       t->raw_data(), out6, src_strides, 0);
}

Status DepthToSpace(CudaKernelContext& ctx) { return BlockPermute(ctx, true); }
Status SpaceToDepth(CudaKernelContext& ctx) { return BlockPermute(ctx, false); }

Status Trilu(CudaKernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, InputElementBytes(ctx, 0));
  if (in.rank() < 2) return ctx.Fail("input {} must have rank >= 2", in.Describe());
  int64_t k = 0;
  if (ctx.has_input(1)) {
    VIGIL_ASSIGN_OR_RETURN(Shape kv, HostInts(ctx, 1, "k"));
    if (kv.size() != 1) return ctx.Fail("k must be a single value, got {} values", kv.size());
    k = kv[0];
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t upper, ops::IntAttr(ctx.node(), "upper", 1));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * out, ctx.Output(0, in.dtype(), in.shape()));
  int64_t rows = in.dim(in.rank() - 2), cols = in.dim(in.rank() - 1);
  return LaunchMapCopy(ctx, "Trilu", eb, in.raw_data(), in.element_count(), out->raw_data(), in.element_count(), 0,
                       [&](auto tag) {
                         using I = decltype(tag);
                         return TriluMap<I>{I(rows), I(cols), k, upper != 0};
                       });
}

bool SupportsPadMode(const ir::Node& n, std::string* w) {
  return AttrIn(n, "mode", "constant", {"constant", "reflect", "edge", "wrap"}, w);
}

bool SupportsPadOld(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!MovableRanked(node, types, why_not) || !SupportsPadMode(node, why_not)) return false;
  uint64_t bits;
  ir::DataType t = InputDtype(types, 0);
  if (!ValueBits(t, 0.0, &bits)) {
    Why(why_not, fmt::format("dtype {} of input 0 (with the 'value' attribute)", ir::DataTypeName(t)));
    return false;
  }
  return true;
}

bool SupportsPad(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return MovableRanked(n, t, w) && SupportsPadMode(n, w);
}
bool SupportsBlocks(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return AnyMovable(n, t, w) && AttrIn(n, "mode", "DCR", {"DCR", "CRD"}, w);
}

const CudaKernelDef kDataMovementSpatialKernels[] = {
    {"", "Pad", 1, 10, WithInputs<Pad, 1>, SupportsPadOld},
    {"", "Pad", 11, kLatest, WithInputs<Pad, 1>, SupportsPad, HostInput(1) | HostInput(2) | HostInput(3)},
    {"", "DepthToSpace", 1, kLatest, WithInputs<DepthToSpace, 1>, SupportsBlocks},
    {"", "SpaceToDepth", 1, kLatest, WithInputs<SpaceToDepth, 1>, SupportsBlocks},
    {"", "Trilu", 14, kLatest, WithInputs<Trilu, 1>, AnyMovable, HostInput(1)},
};

}  // namespace

std::span<const CudaKernelDef> DataMovementSpatialCudaKernels() { return kDataMovementSpatialKernels; }

}  // namespace vigil::cuda
