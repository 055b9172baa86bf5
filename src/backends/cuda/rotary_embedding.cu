// ONNX RotaryEmbedding (opset 23) on the GPU, with the semantics of the CPU
// kernel (backends/cpu/rotary_embedding.cpp): each head's first rotary_dim
// elements form rotary_dim / 2 pairs, (x[k], x[k + rotary_dim / 2]) or,
// interleaved, (x[2k], x[2k + 1]), and each pair (a, b) becomes
// (cos[k] a - sin[k] b, sin[k] a + cos[k] b) with the token's cache row:
// cos_cache[position_ids[b, s]] (2-D caches) or cos_cache[b, s] (3-D caches,
// no position_ids). The other elements are copied. One thread per output
// element; double arithmetic for float32 (as the CPU), float otherwise;
// rounded once.
//
// position_ids are read on the device, not on the host: they are usually a
// graph input or computed on the device, and a host read would cost a
// synchronising copy per run and keep the run from being recorded as a CUDA
// graph. A position outside the caches cannot be reported from the device;
// the token's rotated elements are then written as NaN (its other elements
// are copied) and the caches are not read. The CPU kernel fails instead.
// Shapes and dtypes are checked on the host, with the CPU kernel's errors.
#pragma nv_diag_suppress 20208  // fmt mentions long double (see data_movement.cu)

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "backends/cuda/onnx_attention.h"
#include "ops/attention_params.h"

namespace vigil::cuda {
namespace {

struct RotaryArgs {
  int64_t total = 0;  // elements of X
  int64_t seq = 0, heads = 0, head_size = 0, rotary_dim = 0;
  int64_t positions = 0;  // rows of the 2-D caches (with position_ids)
  bool rank3 = false, interleaved = false;
  const int64_t* ids = nullptr;  // position_ids [batch, seq], or null (3-D caches)
};

template <typename T, typename Acc>
__device__ __forceinline__ T StoreAs(Acc v) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else {
    return FromFloat<T>(static_cast<float>(v));
  }
}

template <typename T, typename Acc>
__global__ void RotaryKernel(const T* __restrict__ x, const T* __restrict__ cos_cache, const T* __restrict__ sin_cache,
                             T* __restrict__ y, RotaryArgs a) {
  const int64_t half = a.rotary_dim / 2;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < a.total; idx += step) {
    const int64_t e = idx % a.head_size, r = idx / a.head_size;
    if (e >= a.rotary_dim) {
      y[idx] = x[idx];
      continue;
    }
    // r is (b, s, h) for 3-D X [B, S, H * D], (b, h, s) for 4-D [B, H, S, D].
    const int64_t s = a.rank3 ? (r / a.heads) % a.seq : r % a.seq;
    const int64_t b = a.rank3 ? r / a.heads / a.seq : r / a.seq / a.heads;
    const int64_t token = b * a.seq + s;
    int64_t cache_row = token;
    if (a.ids) {
      cache_row = a.ids[token];
      if (cache_row < 0 || cache_row >= a.positions) {
        y[idx] = StoreAs<T, Acc>(Acc(NAN));
        continue;
      }
    }
    // This element is the first or the second of its pair k.
    const bool first = a.interleaved ? e % 2 == 0 : e < half;
    const int64_t k = a.interleaved ? e / 2 : first ? e : e - half;
    const int64_t partner = a.interleaved ? (first ? idx + 1 : idx - 1) : (first ? idx + half : idx - half);
    const Acc c = static_cast<Acc>(ToFloat(cos_cache[cache_row * half + k]));
    const Acc sn = static_cast<Acc>(ToFloat(sin_cache[cache_row * half + k]));
    const Acc self = static_cast<Acc>(ToFloat(x[idx])), other = static_cast<Acc>(ToFloat(x[partner]));
    y[idx] = StoreAs<T, Acc>(first ? c * self - sn * other : sn * other + c * self);
  }
}

// The caches' shapes against X and position_ids, as the CPU's CacheRows
// (less the positions' values, checked on the device).
Status CheckCaches(const CudaKernelContext& ctx, const ops::RotaryDims& d, RotaryArgs& a) {
  const runtime::Tensor &cos = *ctx.input(1), &sin = *ctx.input(2);
  const int64_t half = d.rotary_dim / 2;
  if (cos.shape() != sin.shape()) {
    return ctx.Fail("input 1 (cos_cache) is {} and input 2 (sin_cache) is {}; their shapes must match",
                    cos.Describe(), sin.Describe());
  }
  const runtime::Tensor* ids = ctx.input(3);
  if (!ids) {
    if (cos.shape() != std::vector<int64_t>{d.batch, d.seq, half}) {
      return ctx.Fail("input 1 (cos_cache) is {}; without position_ids it must be [batch, seq, rotary_dim / 2] = "
                      "[{},{},{}]", cos.Describe(), d.batch, d.seq, half);
    }
    return Status::Ok();
  }
  if (ids->dtype() != ir::DataType::kInt64 || ids->shape() != std::vector<int64_t>{d.batch, d.seq}) {
    return ctx.Fail("input 3 (position_ids) is {}; it must be int64[{},{}] (batch, seq)", ids->Describe(), d.batch,
                    d.seq);
  }
  if (cos.rank() != 2 || cos.dim(1) != half) {
    return ctx.Fail("input 1 (cos_cache) is {}; with position_ids it must be [max_position + 1, rotary_dim / 2 = {}]",
                    cos.Describe(), half);
  }
  a.ids = static_cast<const int64_t*>(ids->raw_data());
  a.positions = cos.dim(0);
  return Status::Ok();
}

Status RotaryEmbedding(CudaKernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is missing; X, cos_cache and sin_cache are required", i);
  }
  const runtime::Tensor& x = *ctx.input(0);
  for (size_t i = 0; i < 3; ++i) {
    const ir::DataType dt = ctx.input(i)->dtype();
    if (!IsCudaFloat(dt)) {
      return ctx.Unsupported("input {} is {}; the CUDA kernel takes float32, float16 or bfloat16",
                             i, ctx.input(i)->Describe());
    }
    if (dt != x.dtype()) {
      return ctx.Fail("input {} is {}, input 0 (X) is {}; their dtypes must match", i, ctx.input(i)->Describe(),
                      x.Describe());
    }
  }
  VIGIL_ASSIGN_OR_RETURN(ops::RotaryAttrs attrs, ops::ReadRotaryAttrs(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(ops::RotaryDims d, ops::ResolveRotaryDims(ctx.node(), attrs, x.shape()));
  RotaryArgs a;
  VIGIL_RETURN_IF_ERROR(CheckCaches(ctx, d, a));
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  a.total = static_cast<int64_t>(x.element_count());
  if (a.total == 0) return Status::Ok();
  a.seq = d.seq;
  a.heads = d.heads;
  a.head_size = d.head_size;
  a.rotary_dim = d.rotary_dim;
  a.rank3 = d.rank3;
  a.interleaved = attrs.interleaved;
  DispatchFloat(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, float>, double, float>;
    RotaryKernel<T, Acc><<<BlocksFor(a.total), 256, 0, ctx.stream()>>>(
        static_cast<const T*>(x.raw_data()), static_cast<const T*>(ctx.input(1)->raw_data()),
        static_cast<const T*>(ctx.input(2)->raw_data()), static_cast<T*>(y->raw_data()), a);
  });
  VIGIL_CHECK_LAUNCH("RotaryKernel");
  return Status::Ok();
}

// X, cos_cache and sin_cache of one float dtype (position_ids, int64, is
// checked at run time as the CPU kernel does).
bool SupportsRotaryEmbedding(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  return AllInputsFloat(node, types, why_not, /*skip_mask=*/1u << 3);
}

const CudaKernelDef kRotaryKernels[] = {
    {"", "RotaryEmbedding", 23, kLatest, RotaryEmbedding, SupportsRotaryEmbedding},
};

}  // namespace

std::span<const CudaKernelDef> RotaryEmbeddingCudaKernels() { return kRotaryKernels; }

}  // namespace vigil::cuda
