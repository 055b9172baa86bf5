// Helpers shared by the CPU kernels of the shape-op and tensor-generator
// families: element-size dispatch for data movement, strided and index-map
// copies, integer inputs, and per-dtype arithmetic traits. Not a public header.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernel.h"
#include "vigil/float16.h"

namespace vigil::cpu::shape_family {

// Bytes per element for dtypes stored as whole bytes (no strings, no 4-bit
// types); 0 otherwise. Data movement only needs this, not the dtype.
size_t ElementBytes(ir::DataType dtype);

// Input i's element size; Unsupported for strings and packed sub-byte types.
Result<size_t> MovableElementBytes(const KernelContext& ctx, size_t i);

// Row-major strides, in elements.
std::vector<int64_t> Strides(const std::vector<int64_t>& shape);

// The values of integer input i (int32 or int64) as int64; `what` names it
// in errors ("shape", "axes").
Result<std::vector<int64_t>> ReadInts(const KernelContext& ctx, size_t i, std::string_view what);

// A tensor with `shape` that shares `in`'s data and storage (no copy).
runtime::Tensor ViewWithShape(const runtime::Tensor& in, std::vector<int64_t> shape);

// Word types for copying elements of 1, 2, 4, 8 and 16 (complex128) bytes.
struct Word128 {
  uint64_t lo, hi;
};

// Calls f(W{}) with the word type W of `bytes`-sized elements, so that copies
// move whole elements rather than bytes.
template <typename F>
void ByElementBytes(size_t bytes, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    case 8: f(uint64_t{}); break;
    case 16: f(Word128{}); break;
    default: break;  // ElementBytes gives no other sizes
  }
}

// dst (contiguous, `shape`) = src read with element strides `src_strides`
// (which may be 0 for broadcasting).
void StridedCopy(size_t elem_bytes, const std::vector<int64_t>& shape, const void* src,
                 const std::vector<int64_t>& src_strides, void* dst);

// dst[i0,...,ik] = src[maps[0][i0], ..., maps[k][ik]] where every map entry
// is a valid source index along its axis, or -1 for "write `fill`" (fill
// points to one element; may be null when no map has -1). The output shape
// is the maps' lengths.
void AxisMapCopy(size_t elem_bytes, const void* src, const std::vector<int64_t>& src_shape,
                 const std::vector<std::vector<int64_t>>& maps, const void* fill, void* dst);

// Arithmetic traits: Storage is how an element is stored, Compute what it is
// computed in (float for the 16-bit floats); Load/Store convert between
// them; FromDouble converts a computed double back (integers round half to
// even and saturate, as numpy's saturate_cast in the ONNX reference).
template <typename T>
struct PlainTraits {
  using Storage = T;
  using Compute = T;
  static Compute Load(Storage v) { return v; }
  static Storage Store(Compute v) { return v; }
  static double ToDouble(Storage v) { return static_cast<double>(v); }
  static Storage FromDouble(double v) {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(v);
    } else {
      if (std::isnan(v)) return 0;
      double r = std::nearbyint(v);
      if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
      if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
      return static_cast<T>(r);
    }
  }
};

struct Float16Traits {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t v) { return Float16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToFloat16(v); }
  static double ToDouble(uint16_t v) { return Float16ToFloat(v); }
  static uint16_t FromDouble(double v) { return FloatToFloat16(static_cast<float>(v)); }
};

struct Bfloat16Traits {
  using Storage = uint16_t;
  using Compute = float;
  static float Load(uint16_t v) { return Bfloat16ToFloat(v); }
  static uint16_t Store(float v) { return FloatToBfloat16(v); }
  static double ToDouble(uint16_t v) { return Bfloat16ToFloat(v); }
  static uint16_t FromDouble(double v) { return FloatToBfloat16(static_cast<float>(v)); }
};

// bool is one byte, 0 or 1; arithmetic on it (ScatterND add) works on ints.
struct BoolTraits {
  using Storage = uint8_t;
  using Compute = int;
  static int Load(uint8_t v) { return v != 0; }
  static uint8_t Store(int v) { return v != 0; }
  static double ToDouble(uint8_t v) { return v != 0; }
  static uint8_t FromDouble(double v) { return v != 0; }
};

// Calls f(Traits{}) for `dtype`; Unsupported (naming input `input`) for other
// dtypes. `with_bool` admits bool.
template <typename F>
Status VisitNumeric(const KernelContext& ctx, size_t input, ir::DataType dtype, bool with_bool, F&& f) {
  using D = ir::DataType;
  switch (dtype) {
    case D::kFloat32: return f(PlainTraits<float>{});
    case D::kFloat64: return f(PlainTraits<double>{});
    case D::kFloat16: return f(Float16Traits{});
    case D::kBfloat16: return f(Bfloat16Traits{});
    case D::kInt8: return f(PlainTraits<int8_t>{});
    case D::kInt16: return f(PlainTraits<int16_t>{});
    case D::kInt32: return f(PlainTraits<int32_t>{});
    case D::kInt64: return f(PlainTraits<int64_t>{});
    case D::kUint8: return f(PlainTraits<uint8_t>{});
    case D::kUint16: return f(PlainTraits<uint16_t>{});
    case D::kUint32: return f(PlainTraits<uint32_t>{});
    case D::kUint64: return f(PlainTraits<uint64_t>{});
    case D::kBool:
      if (with_bool) return f(BoolTraits{});
      break;
    default: break;
  }
  return ctx.UnsupportedDtype(input);
}

// The element of `t` at flat index i as double, for any numeric dtype or
// bool (used for small control inputs: depth, k, constant values).
Result<double> ElementAsDouble(const KernelContext& ctx, size_t input, uint64_t i);

// Wraps a kernel so that a missing one of its first N inputs (a required
// input named "" in the model) is an error instead of a null dereference.
template <KernelFn Fn, size_t N>
Status WithInputs(KernelContext& ctx) {
  for (size_t i = 0; i < N; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("required input {} is missing", i);
  }
  return Fn(ctx);
}

// Per-file kernel lists, assembled by ShapeOpKernels().
std::span<const KernelDef> LayoutKernels();    // Reshape, ..., Concat, Split, Expand, Tile
std::span<const KernelDef> IndexingKernels();  // Slice, Gather*, Scatter*, TensorScatter, NonZero, OneHot, Trilu
std::span<const KernelDef> SpatialKernels();   // Pad, DepthToSpace, SpaceToDepth
std::span<const KernelDef> ResizeKernels();    // Resize, Upsample

}  // namespace vigil::cpu::shape_family
