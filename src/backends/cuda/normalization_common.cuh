// Helpers shared by the normalisation kernels (normalization.cu) and Softmax
// (softmax.cu): dtype dispatch, warp reductions and support predicates.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"

namespace vigil::cuda {
namespace {

// --- shared helpers ---------------------------------------------------------------

// The float dtypes as a small code, so that kernels can read parameters of
// a dtype other than X's.
enum FloatCode : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

int CodeOf(ir::DataType t) {
  return t == ir::DataType::kFloat16 ? kF16 : t == ir::DataType::kBfloat16 ? kBF16 : kF32;
}

__device__ __forceinline__ float LoadParam(const void* p, int code, int64_t i) {
  switch (code) {
    case kF16: return __half2float(static_cast<const __half*>(p)[i]);
    case kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}
__device__ __forceinline__ void StoreParam(void* p, int code, int64_t i, float v) {
  switch (code) {
    case kF16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    case kBF16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

// max that propagates NaN (fmaxf would drop it).
__device__ __forceinline__ float NanMax(float a, float b) { return isnan(a) || isnan(b) ? a + b : fmaxf(a, b); }

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return NanMax(a, b); }
};

// The reduction of v over the block (blockDim a multiple of 32, at most
// 1024); every thread gets the same result. `shared` holds 32 floats.
template <typename Op>
__device__ float BlockAll(float v, Op op, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warps = blockDim.x / 32;
  if (warps == 1) return v;
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  float r = shared[0];
  for (int w = 1; w < warps; ++w) r = op(r, shared[w]);
  __syncthreads();
  return r;
}

int BlockSizeFor(int64_t n) {
  if (n <= 256) return 32;
  if (n <= 2048) return 128;
  if (n <= 16384) return 256;
  return 512;
}

unsigned GridFor(int64_t blocks) { return static_cast<unsigned>(std::min<int64_t>(blocks, 65535LL * 32)); }

template <typename F, typename G>
Status FloatDispatch(ir::DataType t, F&& f, G&& otherwise) {
  switch (t) {
    case ir::DataType::kFloat32: return f(float{});
    case ir::DataType::kFloat16: return f(__half{});
    case ir::DataType::kBfloat16: return f(__nv_bfloat16{});
    default: return otherwise();
  }
}

Status BadDtype(const CudaKernelContext& ctx, size_t i) {
  return ctx.Unsupported("dtype {} of input {}", ir::DataTypeName(ctx.input(i)->dtype()), i);
}

// Support predicates: each present input of a float dtype (they may differ),
// rank of X known to be at most 8 (and at least min_rank where known).
bool FloatInputs(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not, size_t min_rank) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].empty()) continue;
    ir::DataType t = InputDtype(types, i);
    if (!IsCudaFloat(t)) {
      if (why_not) {
        *why_not = t == ir::DataType::kUndefined ? fmt::format("the dtype of input {} is not known at load time", i)
                                                 : fmt::format("dtype {} of input {}", ir::DataTypeName(t), i);
      }
      return false;
    }
  }
  if (!types.inputs.empty() && types.inputs[0] && types.inputs[0]->shape.rank_known) {
    const size_t rank = types.inputs[0]->shape.dims.size();
    if (rank > static_cast<size_t>(kMaxRank) || rank < min_rank) {
      if (why_not) *why_not = fmt::format("rank {} of input 0", rank);
      return false;
    }
  }
  return true;
}

bool OnlyFirstOutput(const ir::Node& node, std::string* why_not, const char* what) {
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (!node.outputs[i].empty()) {
      if (why_not) *why_not = what;
      return false;
    }
  }
  return true;
}

// Warp-per-row kernels (Softmax, the segment norms): rows per block, and the
// longest row they take (32 values per lane).
constexpr int kWarpRowsPerBlock = 4;
constexpr int64_t kMaxWarpRow = 1024;

}  // namespace
}  // namespace vigil::cuda
