// CPU kernels of Pad (constant, reflect, edge, wrap; negative pads crop),
// DepthToSpace (DCR, CRD) and SpaceToDepth.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "backends/cpu/shape_ops_common.h"
#include "ops/op_params.h"

namespace vigil::cpu::shape_family {
namespace {

using Shape = std::vector<int64_t>;

using ops::PadMode;

// Begin pads then end pads, one pair per axis of `rank` (ops/op_params.h,
// shared with the other backends).
Result<Shape> ReadPads(KernelContext& ctx, int64_t rank) {
  Shape pads, axes;
  if (ctx.opset() >= 11) {
    VIGIL_ASSIGN_OR_RETURN(pads, ReadInts(ctx, 1, "pads"));
  }
  bool has_axes = ctx.opset() >= 18 && ctx.has_input(3);
  if (has_axes) {
    VIGIL_ASSIGN_OR_RETURN(axes, ReadInts(ctx, 3, "axes"));
  }
  return ops::ResolvePads(ctx.node(), ctx.opset(), rank, ctx.opset() >= 11 ? &pads : nullptr,
                          has_axes ? &axes : nullptr);
}

// The constant to pad with, as one element of the data's dtype: the 'value'
// attribute before opset 11, the optional constant_value input after.
Result<std::vector<uint8_t>> ReadPadValue(KernelContext& ctx, const runtime::Tensor& data, size_t eb) {
  std::vector<uint8_t> value(eb, 0);
  if (ctx.opset() < 11) {
    VIGIL_ASSIGN_OR_RETURN(float v, ops::FloatAttr(ctx.node(), "value", 0.0f));
    VIGIL_RETURN_IF_ERROR(VisitNumeric(ctx, 0, data.dtype(), true, [&](auto traits) {
      using Tr = decltype(traits);
      typename Tr::Storage s = Tr::FromDouble(v);
      std::memcpy(value.data(), &s, sizeof(s));
      return Status::Ok();
    }));
    return value;
  }
  const runtime::Tensor* c = ctx.input(2);
  if (!c || c->element_count() == 0) return value;
  if (c->dtype() != data.dtype() || c->element_count() != 1) {
    return ctx.Fail("constant_value {} must be one element of the data's dtype {}", c->Describe(),
                    ir::DataTypeName(data.dtype()));
  }
  std::memcpy(value.data(), c->raw_data(), eb);
  return value;
}

// Source index along one axis for each output position: the input of
// length `dim` is first cropped by negative pads, then extended by the
// positive ones according to `mode` (-1: the constant).
Result<std::vector<int64_t>> PadAxisMap(const KernelContext& ctx, int64_t dim, int64_t before, int64_t after,
                                        PadMode mode, size_t axis) {
  int64_t first = std::max<int64_t>(-before, 0);
  int64_t len = dim - first - std::max<int64_t>(-after, 0);
  if (len < 0) return ctx.Fail("pads {} and {} crop axis {} of size {} below zero", before, after, axis, dim);
  int64_t lead = std::max<int64_t>(before, 0), out = len + lead + std::max<int64_t>(after, 0);
  if (len == 0 && out > 0 && mode != PadMode::kConstant) {
    return ctx.Fail("cannot pad the empty axis {} in a non-constant mode", axis);
  }
  std::vector<int64_t> map(out);
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = o - lead;
    if (i < 0 || i >= len) {
      switch (mode) {
        case PadMode::kConstant: map[o] = -1; continue;
        case PadMode::kEdge: i = std::clamp<int64_t>(i, 0, len - 1); break;
        case PadMode::kWrap: i = ((i % len) + len) % len; break;
        case PadMode::kReflect: {
          // Mirror without repeating the edge: period 2(len-1).
          int64_t period = 2 * (len - 1);
          if (period == 0) {
            i = 0;
          } else {
            i = ((i % period) + period) % period;
            if (i >= len) i = period - i;
          }
          break;
        }
      }
    }
    map[o] = first + i;
  }
  return map;
}

Status Pad(KernelContext& ctx) {
  const runtime::Tensor& data = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(PadMode mode, ops::ReadPadMode(ctx.node()));
  int64_t rank = static_cast<int64_t>(data.rank());
  VIGIL_ASSIGN_OR_RETURN(Shape pads, ReadPads(ctx, rank));
  VIGIL_ASSIGN_OR_RETURN(std::vector<uint8_t> value, ReadPadValue(ctx, data, eb));
  constexpr int64_t kLimit = int64_t{1} << 32;  // keeps pad arithmetic far from overflow
  auto too_big = [](int64_t v) { return v > kLimit || v < -kLimit; };
  Shape out;
  for (int64_t a = 0; a < rank; ++a) {
    if (too_big(pads[a]) || too_big(pads[a + rank])) return ctx.Fail("pads [{}] are too large", fmt::join(pads, ","));
    out.push_back(data.dim(a) + pads[a] + pads[a + rank]);
  }
  // The output first: a refused allocation must come before index maps of its size.
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, data.dtype(), out));
  std::vector<std::vector<int64_t>> maps;
  for (int64_t a = 0; a < rank; ++a) {
    VIGIL_ASSIGN_OR_RETURN(auto map, PadAxisMap(ctx, data.dim(a), pads[a], pads[a + rank], mode, a));
    maps.push_back(std::move(map));
  }
  AxisMapCopy(eb, data.raw_data(), data.shape(), maps, value.data(), t->raw_data());
  return Status::Ok();
}

Result<int64_t> BlockSize(const KernelContext& ctx, const runtime::Tensor& in) {
  VIGIL_ASSIGN_OR_RETURN(int64_t b, ops::RequiredIntAttr(ctx.node(), "blocksize"));
  // A blocksize beyond 2^20 is absurd and would overflow b*b below.
  if (b < 1 || b > (int64_t{1} << 20)) return ctx.Fail("blocksize is {}; it must be in [1, 2^20]", b);
  if (in.rank() != 4) return ctx.Fail("input {} must be 4-D (NCHW)", in.Describe());
  return b;
}

// out (contiguous, `out6`) = the 6-D view `src6` of the input transposed by `perm`.
Status PermuteCopy(KernelContext& ctx, const runtime::Tensor& in, size_t eb, const Shape& src6, const Shape& perm,
                   Shape out_shape) {
  Shape strides6 = Strides(src6), out6, src_strides;
  for (int64_t p : perm) {
    out6.push_back(src6[p]);
    src_strides.push_back(strides6[p]);
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(0, in.dtype(), std::move(out_shape)));
  StridedCopy(eb, out6, in.raw_data(), src_strides, t->raw_data());
  return Status::Ok();
}

Status DepthToSpace(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx, in));
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(ctx.node(), "mode", "DCR"));
  int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
  if (c % (b * b) != 0) return ctx.Fail("channels {} of {} are not divisible by blocksize² {}", c, in.Describe(), b * b);
  int64_t oc = c / (b * b);
  Shape out{n, oc, h * b, w * b};
  // DCR: depth is (block row, block col, channel); CRD: (channel, block row, block col).
  if (mode == "DCR") return PermuteCopy(ctx, in, eb, {n, b, b, oc, h, w}, {0, 3, 4, 1, 5, 2}, out);
  if (mode == "CRD") return PermuteCopy(ctx, in, eb, {n, oc, b, b, h, w}, {0, 1, 4, 2, 5, 3}, out);
  return ctx.Fail("mode '{}' is not DCR or CRD", mode);
}

Status SpaceToDepth(KernelContext& ctx) {
  const runtime::Tensor& in = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(size_t eb, MovableElementBytes(ctx, 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t b, BlockSize(ctx, in));
  VIGIL_ASSIGN_OR_RETURN(std::string mode, ops::StringAttr(ctx.node(), "mode", "DCR"));
  int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
  if (h % b != 0 || w % b != 0) return ctx.Fail("height and width of {} are not divisible by blocksize {}", in.Describe(), b);
  Shape src6{n, c, h / b, b, w / b, b}, out{n, c * b * b, h / b, w / b};
  // The inverse of DepthToSpace in the same mode (mode exists from opset 25).
  if (mode == "DCR") return PermuteCopy(ctx, in, eb, src6, {0, 3, 5, 1, 2, 4}, out);
  if (mode == "CRD") return PermuteCopy(ctx, in, eb, src6, {0, 1, 3, 5, 2, 4}, out);
  return ctx.Fail("mode '{}' is not DCR or CRD", mode);
}

const KernelDef kSpatialKernels[] = {
    {"", "Pad", 1, kLatest, WithInputs<Pad, 1>},
    {"", "DepthToSpace", 1, kLatest, WithInputs<DepthToSpace, 1>},
    {"", "SpaceToDepth", 1, kLatest, WithInputs<SpaceToDepth, 1>},
};

}  // namespace

std::span<const KernelDef> SpatialKernels() { return kSpatialKernels; }

}  // namespace vigil::cpu::shape_family
