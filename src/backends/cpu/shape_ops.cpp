// CPU kernels of the shape-op family: the family's kernel list and the
// helpers its kernels share. The kernels live in shape_ops_layout.cpp,
// shape_ops_indexing.cpp, shape_ops_spatial.cpp and resize.cpp.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/shape_ops_common.h"
#include "backends/cpu/kernel_families.h"
#include "backends/cpu/parallel.h"

namespace vigil::cpu {
namespace shape_family {

size_t ElementBytes(ir::DataType dtype) {
  int bits = ir::DataTypeBits(dtype);
  return bits >= 8 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

Result<size_t> MovableElementBytes(const KernelContext& ctx, size_t i) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("input {} is missing", i);
  size_t bytes = ElementBytes(t->dtype());
  if (bytes == 0) return ctx.UnsupportedDtype(i);
  return bytes;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

Result<std::vector<int64_t>> ReadInts(const KernelContext& ctx, size_t i, std::string_view what) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("input {} ({}) is missing", i, what);
  uint64_t n = t->element_count();
  std::vector<int64_t> out(n);
  if (t->dtype() == ir::DataType::kInt64) {
    if (n) std::memcpy(out.data(), t->raw_data(), n * sizeof(int64_t));
  } else if (t->dtype() == ir::DataType::kInt32) {
    const int32_t* p = t->data<int32_t>();
    for (uint64_t k = 0; k < n; ++k) out[k] = p[k];
  } else {
    return ctx.Fail("input {} ({}) has dtype {}; it must be int64 or int32", i, what, ir::DataTypeName(t->dtype()));
  }
  return out;
}

runtime::Tensor ViewWithShape(const runtime::Tensor& in, std::vector<int64_t> shape) {
  return runtime::Tensor::Shared(in.dtype(), std::move(shape), const_cast<void*>(in.raw_data()), in.storage());
}

namespace {

// StridedCopyT where the source's contiguous axis `a` is not the innermost
// (a transpose such as NHWC -> NCHW): each pair of a and innermost
// positions is copied in kTile x kTile tiles, so that reads and writes both
// run along whole cache lines instead of reading one element per line.
template <typename W>
void TiledStridedCopyT(const std::vector<int64_t>& shape, const W* src, const std::vector<int64_t>& strides, size_t a,
                       W* dst) {
  constexpr int64_t kTile = 16;
  const size_t rank = shape.size(), last = rank - 1;
  std::vector<int64_t> dst_strides(rank, 1);
  for (size_t i = rank - 1; i-- > 0;) dst_strides[i] = dst_strides[i + 1] * shape[i + 1];
  std::vector<size_t> outer;
  uint64_t outer_count = 1;
  for (size_t i = 0; i < last; ++i) {
    if (i == a) continue;
    outer.push_back(i);
    outer_count *= static_cast<uint64_t>(shape[i]);
  }
  const int64_t na = shape[a], nl = shape[last], sl = strides[last], da = dst_strides[a];
  // Outer positions split across the pool's threads (parallel.h), each
  // starting its odometer at its first position.
  ParallelFor(static_cast<int64_t>(outer_count), ItemsPerGrain(na * nl), [&](int64_t first, int64_t last_row) {
    std::vector<int64_t> idx(outer.size(), 0);
    int64_t soff = 0, doff = 0;
    for (size_t k = outer.size(), rest = static_cast<size_t>(first); k-- > 0;) {
      const size_t ax = outer[k];
      idx[k] = static_cast<int64_t>(rest % static_cast<size_t>(shape[ax]));
      rest /= static_cast<size_t>(shape[ax]);
      soff += idx[k] * strides[ax];
      doff += idx[k] * dst_strides[ax];
    }
    for (int64_t o = first; o < last_row; ++o) {
      for (int64_t i0 = 0; i0 < na; i0 += kTile) {
        const int64_t i1 = std::min(i0 + kTile, na);
        for (int64_t j0 = 0; j0 < nl; j0 += kTile) {
          const int64_t j1 = std::min(j0 + kTile, nl);
          for (int64_t i = i0; i < i1; ++i) {
            W* d = dst + doff + i * da;
            const W* s = src + soff + i;
            for (int64_t j = j0; j < j1; ++j) d[j] = s[j * sl];
          }
        }
      }
      for (size_t k = outer.size(); k-- > 0;) {  // advance the outer index like an odometer
        const size_t ax = outer[k];
        soff += strides[ax];
        doff += dst_strides[ax];
        if (++idx[k] < shape[ax]) break;
        soff -= strides[ax] * shape[ax];
        doff -= dst_strides[ax] * shape[ax];
        idx[k] = 0;
      }
    }
  });
}

template <typename W>
void StridedCopyT(const std::vector<int64_t>& shape, const W* src, const std::vector<int64_t>& strides, W* dst) {
  auto total = runtime::ElementCount(shape);
  if (!total || *total == 0) return;
  size_t rank = shape.size();
  if (rank == 0) {
    *dst = *src;
    return;
  }
  int64_t inner = shape[rank - 1], inner_stride = strides[rank - 1];
  if (inner_stride != 1 && inner > 1) {
    for (size_t a = 0; a + 1 < rank; ++a) {
      if (strides[a] == 1 && shape[a] > 1) return TiledStridedCopyT(shape, src, strides, a, dst);
    }
  }
  // Rows split across the pool's threads (parallel.h), each starting its
  // odometer at its first row.
  const int64_t rows = static_cast<int64_t>(*total) / inner;
  ParallelFor(rows, ItemsPerGrain(inner), [&](int64_t first,
                                                                                           int64_t last) {
    std::vector<int64_t> idx(rank - 1, 0);
    int64_t offset = 0;
    for (size_t a = rank - 1, rest = static_cast<size_t>(first); a-- > 0;) {
      idx[a] = static_cast<int64_t>(rest % static_cast<size_t>(shape[a]));
      rest /= static_cast<size_t>(shape[a]);
      offset += idx[a] * strides[a];
    }
    W* d = dst + first * inner;
    for (int64_t row = first; row < last; ++row) {
      const W* s = src + offset;
      if (inner_stride == 1) {
        std::memcpy(d, s, static_cast<size_t>(inner) * sizeof(W));  // rows kept whole (a head split)
      } else {
        for (int64_t i = 0; i < inner; ++i) d[i] = s[i * inner_stride];
      }
      d += inner;
      for (size_t a = rank - 1; a-- > 0;) {  // advance the outer index like an odometer
        offset += strides[a];
        if (++idx[a] < shape[a]) break;
        offset -= strides[a] * shape[a];
        idx[a] = 0;
      }
    }
  });
}

template <typename W>
void AxisMapCopyT(const W* src, const std::vector<int64_t>& src_shape, const std::vector<std::vector<int64_t>>& maps,
                  const void* fill_ptr, W* dst) {
  size_t rank = maps.size();
  W fill{};
  if (fill_ptr) std::memcpy(&fill, fill_ptr, sizeof(W));
  if (rank == 0) {
    *dst = *src;
    return;
  }
  // Per-axis element offsets into src, -1 for a fill position.
  std::vector<int64_t> strides = Strides(src_shape);
  std::vector<std::vector<int64_t>> offs(rank);
  uint64_t total = 1;
  for (size_t a = 0; a < rank; ++a) {
    for (int64_t m : maps[a]) offs[a].push_back(m < 0 ? -1 : m * strides[a]);
    total *= maps[a].size();
  }
  if (total == 0) return;
  const std::vector<int64_t>& inner = offs[rank - 1];
  std::vector<size_t> idx(rank - 1, 0);
  for (uint64_t row = 0, rows = total / inner.size(); row < rows; ++row) {
    int64_t base = 0;
    bool filled = false;
    for (size_t a = 0; a + 1 < rank; ++a) {
      int64_t o = offs[a][idx[a]];
      if (o < 0) filled = true;
      base += o;
    }
    for (size_t i = 0; i < inner.size(); ++i) dst[i] = filled || inner[i] < 0 ? fill : src[base + inner[i]];
    dst += inner.size();
    for (size_t a = rank - 1; a-- > 0;) {
      if (++idx[a] < offs[a].size()) break;
      idx[a] = 0;
    }
  }
}

}  // namespace

void StridedCopy(size_t elem_bytes, const std::vector<int64_t>& shape, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst) {
  ByElementBytes(elem_bytes, [&](auto w) {
    using W = decltype(w);
    StridedCopyT(shape, static_cast<const W*>(src), src_strides, static_cast<W*>(dst));
  });
}

void AxisMapCopy(size_t elem_bytes, const void* src, const std::vector<int64_t>& src_shape,
                 const std::vector<std::vector<int64_t>>& maps, const void* fill, void* dst) {
  ByElementBytes(elem_bytes, [&](auto w) {
    using W = decltype(w);
    AxisMapCopyT(static_cast<const W*>(src), src_shape, maps, fill, static_cast<W*>(dst));
  });
}

Result<double> ElementAsDouble(const KernelContext& ctx, size_t input, uint64_t i) {
  const runtime::Tensor* t = ctx.input(input);
  if (!t || i >= t->element_count()) return ctx.Fail("input {} has no element {}", input, i);
  double out = 0;
  VIGIL_RETURN_IF_ERROR(VisitNumeric(ctx, input, t->dtype(), true, [&](auto traits) {
    using Tr = decltype(traits);
    out = Tr::ToDouble(t->data<typename Tr::Storage>()[i]);
    return Status::Ok();
  }));
  return out;
}

}  // namespace shape_family

std::span<const KernelDef> ShapeOpKernels() {
  static const std::vector<KernelDef> kAll = [] {
    std::vector<KernelDef> all;
    for (auto part : {shape_family::LayoutKernels(), shape_family::IndexingKernels(),
                      shape_family::SpatialKernels(), shape_family::ResizeKernels()}) {
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }();
  return kAll;
}

}  // namespace vigil::cpu
