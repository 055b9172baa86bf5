// CUDA kernels of the normalisation family, with the semantics of the CPU
// kernels (backends/cpu/normalization.cpp, layer_group_norm.cpp); Softmax
// is in softmax.cu:
//   BatchNormalization (inference only), elementwise with per-channel (or,
//     spatial=0 before opset 9, per-element) parameters.
//   InstanceNormalization, GroupNormalization, LayerNormalization: one warp
//     per contiguous segment (an (n, c) plane, an (n, group), a row from
//     `axis`) of up to 1024 elements (held in registers), else one block per
//     segment; two-pass mean and variance in float, then scale and shift;
//     LayerNormalization's optional Mean and InvStdDev outputs are written.
//     RMSNormalization is LayerNormalization without centring or B.
//     LayerNormalization rows of a multiple of 16 bytes with Scale/B of X's
//     dtype along the row take a vectorised kernel first (16-byte loads,
//     the row in registers, a warp or a block per row).
// Parameter inputs may each have any float dtype (read through LoadParam).
// LpNormalization has no CPU kernel nor shape inference in vigil: not here.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "backends/cuda/normalization_common.cuh"

namespace vigil::cuda {
namespace {

// --- BatchNormalization ------------------------------------------------------------------

struct BatchNormArgs {
  const void* scale;
  const void* bias;
  const void* mean;
  const void* var;
  int scale_code, bias_code, mean_code, var_code;
  float epsilon;
  int64_t total;
  int64_t inner;     // elements per channel of one image
  int64_t channels;  // per-channel parameters: index (i / inner) % channels
  int64_t sample;    // per-element parameters (spatial=0): index i % sample
  bool per_element;
};

template <typename T>
__global__ void BatchNormKernel(const T* __restrict__ x, T* __restrict__ y, BatchNormArgs a) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < a.total; i += step) {
    const int64_t c = a.per_element ? i % a.sample : (i / a.inner) % a.channels;
    const float scale = LoadParam(a.scale, a.scale_code, c) / sqrtf(LoadParam(a.var, a.var_code, c) + a.epsilon);
    const float shift = LoadParam(a.bias, a.bias_code, c) - LoadParam(a.mean, a.mean_code, c) * scale;
    y[i] = FromFloat<T>(ToFloat(x[i]) * scale + shift);
  }
}

Status BatchNormalization(CudaKernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(int64_t training, ops::IntAttr(ctx.node(), "training_mode", 0));
  for (size_t i = 1; i < ctx.num_outputs(); ++i) {
    if (ctx.output_wanted(i)) training = 1;
  }
  if (training != 0) return ctx.Unsupported("training mode is not supported; only inference is");
  for (size_t i = 0; i < 5; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} is missing", i);
  }
  const runtime::Tensor& x = *ctx.input(0);
  if (x.rank() < 2) return ctx.Fail("input 0 (X) is {}, BatchNormalization needs rank >= 2", x.Describe());
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  VIGIL_ASSIGN_OR_RETURN(int64_t spatial, ops::IntAttr(ctx.node(), "spatial", 1));
  BatchNormArgs a{};
  a.per_element = ctx.opset() < 9 && spatial == 0;
  a.total = static_cast<int64_t>(x.element_count());
  a.sample = x.dim(0) == 0 ? 0 : a.total / x.dim(0);
  a.channels = x.dim(1);
  a.inner = a.channels == 0 ? 0 : a.sample / a.channels;
  a.epsilon = epsilon;
  const int64_t params = a.per_element ? a.sample : a.channels;
  const void* p[5] = {};
  int codes[5] = {};
  for (size_t i = 1; i <= 4; ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (!IsCudaFloat(t->dtype())) return BadDtype(ctx, i);
    if (static_cast<int64_t>(t->element_count()) != params) {
      return ctx.Fail("input {} is {}, expected {} elements", i, t->Describe(), params);
    }
    p[i] = t->raw_data();
    codes[i] = CodeOf(t->dtype());
  }
  a.scale = p[1], a.bias = p[2], a.mean = p[3], a.var = p[4];
  a.scale_code = codes[1], a.bias_code = codes[2], a.mean_code = codes[3], a.var_code = codes[4];
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  if (a.total == 0) return Status::Ok();
  return FloatDispatch(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        BatchNormKernel<T><<<BlocksFor(a.total), 256, 0, ctx.stream()>>>(static_cast<const T*>(x.raw_data()),
                                                                        static_cast<T*>(y->raw_data()), a);
        VIGIL_CHECK_LAUNCH("BatchNormKernel");
        return Status::Ok();
      },
      [&] { return BadDtype(ctx, 0); });
}

bool SupportsBatchNorm(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto training = ops::IntAttr(node, "training_mode", 0);
  if (!training.ok() || training.value() != 0) {
    if (why_not) *why_not = "training_mode=1 is not supported";
    return false;
  }
  return OnlyFirstOutput(node, why_not, "training outputs (running/saved statistics) are not supported") &&
         FloatInputs(node, types, why_not, 2);
}

// --- segment normalisation: Instance, Group, Layer ---------------------------------------

enum class ParamMode : int {
  kGroup,      // per group or per channel of an (n, group) segment
  kContiguous, // LayerNormalization with Scale/B indexed by the position in the row
  kBroadcast,  // LayerNormalization with Scale/B broadcast to X some other way
};

struct SegmentArgs {
  int64_t segments = 0;
  int64_t length = 0;
  float epsilon = 0;
  ParamMode mode = ParamMode::kGroup;
  // kGroup: segment s is image s / groups, group s % groups of `per_group`
  // channels of `inner` elements each.
  int64_t groups = 1, per_group = 1, inner = 1;
  bool per_channel = false;
  // kBroadcast: X's shape with the strides of Scale and B.
  IndexMap scale_map, bias_map;
  const void* scale = nullptr;
  const void* bias = nullptr;  // null: no B
  int scale_code = kF32, bias_code = kF32;
  void* mean_out = nullptr;  // LayerNormalization's optional outputs
  void* inv_out = nullptr;
  int stat_code = kF32;
  bool rms = false;  // RMSNormalization: no centring (the mean is taken as 0)
};

__device__ __forceinline__ void ParamIndex(const SegmentArgs& a, int64_t s, int64_t j, int64_t* ks, int64_t* kb) {
  switch (a.mode) {
    case ParamMode::kGroup: {
      const int64_t g = s % a.groups;
      *ks = *kb = a.per_channel ? g * a.per_group + j / a.inner : g;
      break;
    }
    case ParamMode::kContiguous: *ks = *kb = j; break;
    default:
      *ks = a.scale_map.Offset(s * a.length + j);
      *kb = a.bias ? a.bias_map.Offset(s * a.length + j) : 0;
      break;
  }
}

template <typename T>
__global__ void SegmentNormKernel(const T* __restrict__ x, T* __restrict__ y, SegmentArgs a) {
  __shared__ float shared[32];
  for (int64_t s = blockIdx.x; s < a.segments; s += gridDim.x) {
    const T* xs = x + s * a.length;
    T* ys = y + s * a.length;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < a.length; j += blockDim.x) sum += ToFloat(xs[j]);
    const float block_mean = BlockAll(sum, SumOp{}, shared) / static_cast<float>(a.length);  // NaN when empty
    const float mean = a.rms ? 0.0f : block_mean;
    float sq = 0.0f;
    for (int64_t j = threadIdx.x; j < a.length; j += blockDim.x) {
      const float d = ToFloat(xs[j]) - mean;
      sq += d * d;
    }
    const float var = BlockAll(sq, SumOp{}, shared) / static_cast<float>(a.length);
    const float inv = 1.0f / sqrtf(var + a.epsilon);
    if (threadIdx.x == 0) {
      if (a.mean_out) StoreParam(a.mean_out, a.stat_code, s, mean);
      if (a.inv_out) StoreParam(a.inv_out, a.stat_code, s, inv);
    }
    for (int64_t j = threadIdx.x; j < a.length; j += blockDim.x) {
      int64_t ks, kb;
      ParamIndex(a, s, j, &ks, &kb);
      float v = (ToFloat(xs[j]) - mean) * inv * LoadParam(a.scale, a.scale_code, ks);
      if (a.bias) v += LoadParam(a.bias, a.bias_code, kb);
      ys[j] = FromFloat<T>(v);
    }
  }
}

// Segments of at most 32 * kPerLane elements: one warp per segment, several
// per block, the segment read once into registers (LayerNormalization rows:
// 768 in ViT-B/16). The same two-pass statistics as SegmentNormKernel.
template <typename T, int kPerLane>
__global__ void SegmentNormWarpKernel(const T* __restrict__ x, T* __restrict__ y, SegmentArgs a) {
  const int lane = threadIdx.x % 32;
  const int64_t warps_per_block = blockDim.x / 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps_per_block;
  for (int64_t s = blockIdx.x * warps_per_block + threadIdx.x / 32; s < a.segments; s += step) {
    const T* xs = x + s * a.length;
    T* ys = y + s * a.length;
    float v[kPerLane];
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int64_t k = lane + j * 32;
      v[j] = k < a.length ? ToFloat(xs[k]) : 0.0f;
      sum += v[j];
    }
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    const float mean = a.rms ? 0.0f : sum / static_cast<float>(a.length);
    float sq = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const float d = v[j] - mean;
      if (lane + j * 32 < a.length) sq += d * d;
    }
    for (int o = 16; o > 0; o >>= 1) sq += __shfl_xor_sync(0xffffffffu, sq, o);
    const float inv = 1.0f / sqrtf(sq / static_cast<float>(a.length) + a.epsilon);
    if (lane == 0) {
      if (a.mean_out) StoreParam(a.mean_out, a.stat_code, s, mean);
      if (a.inv_out) StoreParam(a.inv_out, a.stat_code, s, inv);
    }
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int64_t k = lane + j * 32;
      if (k >= a.length) continue;
      int64_t ks, kb;
      ParamIndex(a, s, k, &ks, &kb);
      float r = (v[j] - mean) * inv * LoadParam(a.scale, a.scale_code, ks);
      if (a.bias) r += LoadParam(a.bias, a.bias_code, kb);
      ys[k] = FromFloat<T>(r);
    }
  }
}

template <typename T, int kPerLane>
void LaunchSegmentWarp(const T* x, T* y, const SegmentArgs& a, cudaStream_t stream) {
  const int64_t blocks = (a.segments + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock;
  SegmentNormWarpKernel<T, kPerLane><<<GridFor(blocks), 32 * kWarpRowsPerBlock, 0, stream>>>(x, y, a);
}

// --- LayerNormalization fast path: 16-byte vectors, row in registers -------------------
//
// The common transformer case (rows of 768 fp16, Scale and B of X's dtype
// indexed by the position in the row) is memory-bound: X is read once and Y
// written once. The generic kernels above read 2-byte elements and resolve
// the parameter dtype and index mode per element, which makes them
// instruction-bound. Here every thread loads whole 16-byte vectors of X,
// Scale and B, keeps its part of the row in registers for the two-pass
// statistics, and writes 16-byte vectors.

template <typename T>
struct alignas(16) Pack {
  static constexpr int kCount = 16 / sizeof(T);
  T v[kCount];
};

struct VecRowArgs {
  int64_t rows = 0;
  int64_t vecs = 0;    // 16-byte vectors per row
  int64_t length = 0;  // elements per row
  float epsilon = 0;
  void* mean_out = nullptr;
  void* inv_out = nullptr;
  int stat_code = kF32;
};

// Sum over the threads of one row: its warp (kWarp) or its whole block.
template <bool kWarp>
__device__ __forceinline__ float RowSum(float v, float* shared) {
  if constexpr (kWarp) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
  } else {
    return BlockAll(v, SumOp{}, shared);
  }
}

// kWarp: a warp per row, blockDim / 32 rows per block; else a block per row.
// Each thread holds up to kVecs vectors of its row (vector t + i * threads).
template <typename T, int kVecs, bool kWarp>
__global__ void LayerNormVecKernel(const T* __restrict__ x, T* __restrict__ y, const T* __restrict__ scale,
                                   const T* __restrict__ bias, VecRowArgs a) {
  constexpr int kN = Pack<T>::kCount;
  __shared__ float shared[32];
  const int threads = kWarp ? 32 : blockDim.x;
  const int t = kWarp ? threadIdx.x % 32 : threadIdx.x;
  const int64_t rows_per_block = kWarp ? blockDim.x / 32 : 1;
  const int64_t first = blockIdx.x * rows_per_block + (kWarp ? threadIdx.x / 32 : 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * rows_per_block;
  const auto* sv = reinterpret_cast<const Pack<T>*>(scale);
  const auto* bv = reinterpret_cast<const Pack<T>*>(bias);
  const float n = static_cast<float>(a.length);
  // Every thread of a block runs the same number of iterations (BlockAll
  // synchronises), so the loop bound is uniform per row group.
  for (int64_t row = first; row < a.rows; row += step) {
    const auto* xv = reinterpret_cast<const Pack<T>*>(x) + row * a.vecs;
    auto* yv = reinterpret_cast<Pack<T>*>(y) + row * a.vecs;
    float v[kVecs][kN];
    float sum = 0.0f;
    // Scale and B are loaded with X, before the two reductions, so that
    // their latency overlaps X's instead of following the statistics.
    Pack<T> sp[kVecs], bp[kVecs];
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int64_t k = t + static_cast<int64_t>(i) * threads;
      Pack<T> p;
      if (k < a.vecs) {
        p = xv[k];
        sp[i] = sv[k];
        if (bias) bp[i] = bv[k];
      }
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        v[i][e] = k < a.vecs ? ToFloat(p.v[e]) : 0.0f;
        sum += v[i][e];
      }
    }
    const float mean = RowSum<kWarp>(sum, shared) / n;
    float sq = 0.0f;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      if (t + static_cast<int64_t>(i) * threads >= a.vecs) continue;
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        const float d = v[i][e] - mean;
        sq += d * d;
      }
    }
    const float inv = 1.0f / sqrtf(RowSum<kWarp>(sq, shared) / n + a.epsilon);
    if (t == 0) {
      if (a.mean_out) StoreParam(a.mean_out, a.stat_code, row, mean);
      if (a.inv_out) StoreParam(a.inv_out, a.stat_code, row, inv);
    }
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int64_t k = t + static_cast<int64_t>(i) * threads;
      if (k >= a.vecs) continue;
      Pack<T> out;
#pragma unroll
      for (int e = 0; e < kN; ++e) {
        float r = (v[i][e] - mean) * inv * ToFloat(sp[i].v[e]);
        if (bias) r += ToFloat(bp[i].v[e]);
        out.v[e] = FromFloat<T>(r);
      }
      yv[k] = out;
    }
  }
}

// Vectors per thread the register-resident kernels take: up to 8 a lane in
// the warp-per-row kernel (rows of up to 256 vectors: 1024 float32 or 2048
// float16 elements; BERT's float32 768 is 6), up to 4 in the block-per-row
// one (4 * 256 vectors: 8192 float16 elements). A warp per row needs no
// barrier between the two reductions and keeps more loads in flight per
// thread; the block kernel is for rows too long for one warp's registers.
constexpr int64_t kMaxWarpVecs = 8;
constexpr int64_t kMaxVecsPerThread = 4;
constexpr int kVecBlockThreads = 256;

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, bool kWarp>
void LaunchLayerNormVec(int vecs_per_thread, unsigned grid, int threads, const T* x, T* y, const T* s, const T* b,
                        const VecRowArgs& a, cudaStream_t stream) {
  switch (vecs_per_thread) {
    case 1: LayerNormVecKernel<T, 1, kWarp><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
    case 2: LayerNormVecKernel<T, 2, kWarp><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
    case 3: LayerNormVecKernel<T, 3, kWarp><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
    case 4: LayerNormVecKernel<T, 4, kWarp><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
    default:
      if constexpr (kWarp) {  // 5 to 8: the warp kernel only (kMaxWarpVecs)
        switch (vecs_per_thread) {
          case 5: LayerNormVecKernel<T, 5, true><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
          case 6: LayerNormVecKernel<T, 6, true><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
          case 7: LayerNormVecKernel<T, 7, true><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
          default: LayerNormVecKernel<T, 8, true><<<grid, threads, 0, stream>>>(x, y, s, b, a); break;
        }
      }
      break;
  }
}

// Runs the vectorised kernel when it applies (contiguous parameters of X's
// dtype, 16-byte aligned rows and pointers, a row that fits in registers);
// sets *done. Otherwise leaves *done false for the generic kernels.
Status TryLayerNormVec(CudaKernelContext& ctx, const runtime::Tensor& x, runtime::Tensor& y,
                       const runtime::Tensor& scale, const runtime::Tensor* bias, const SegmentArgs& a, bool* done) {
  *done = false;
  if (a.mode != ParamMode::kContiguous || a.segments == 0 || a.length == 0) return Status::Ok();
  if (scale.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype())) return Status::Ok();
  const int64_t esize = ir::DataTypeBits(x.dtype()) / 8;
  if (esize == 0 || (a.length * esize) % 16 != 0) return Status::Ok();
  if (!Aligned16(x.raw_data()) || !Aligned16(y.raw_data()) || !Aligned16(scale.raw_data()) ||
      (bias && !Aligned16(bias->raw_data()))) {
    return Status::Ok();
  }
  VecRowArgs v;
  v.rows = a.segments;
  v.length = a.length;
  v.vecs = a.length * esize / 16;
  v.epsilon = a.epsilon;
  v.mean_out = a.mean_out;
  v.inv_out = a.inv_out;
  v.stat_code = a.stat_code;
  const bool warp = v.vecs <= 32 * kMaxWarpVecs;
  if (!warp && v.vecs > kVecBlockThreads * kMaxVecsPerThread) return Status::Ok();
  const int64_t threads_per_row = warp ? 32 : kVecBlockThreads;
  const int per_thread = static_cast<int>((v.vecs + threads_per_row - 1) / threads_per_row);
  // A block-per-row launch with fewer vectors than threads uses fewer threads.
  const int64_t busy = (v.vecs + per_thread - 1) / per_thread;
  const int block_threads = warp ? 32 * kWarpRowsPerBlock
                                 : static_cast<int>(std::min<int64_t>(kVecBlockThreads, (busy + 31) / 32 * 32));
  const unsigned grid = GridFor(warp ? (v.rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock : v.rows);
  *done = true;
  return FloatDispatch(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        const T* xs = static_cast<const T*>(x.raw_data());
        T* ys = static_cast<T*>(y.raw_data());
        const T* ss = static_cast<const T*>(scale.raw_data());
        const T* bs = bias ? static_cast<const T*>(bias->raw_data()) : nullptr;
        if (warp) {
          LaunchLayerNormVec<T, true>(per_thread, grid, block_threads, xs, ys, ss, bs, v, ctx.stream());
        } else {
          LaunchLayerNormVec<T, false>(per_thread, grid, block_threads, xs, ys, ss, bs, v, ctx.stream());
        }
        VIGIL_CHECK_LAUNCH("LayerNormVecKernel");
        return Status::Ok();
      },
      [&] { return BadDtype(ctx, 0); });
}

Status LaunchSegments(CudaKernelContext& ctx, const runtime::Tensor& x, runtime::Tensor& y, const SegmentArgs& a) {
  if (a.segments == 0) return Status::Ok();
  return FloatDispatch(
      x.dtype(),
      [&](auto tag) -> Status {
        using T = decltype(tag);
        const T* xs = static_cast<const T*>(x.raw_data());
        T* ys = static_cast<T*>(y.raw_data());
        if (a.length > 0 && a.length <= kMaxWarpRow) {
          if (a.length <= 256) {
            LaunchSegmentWarp<T, 8>(xs, ys, a, ctx.stream());
          } else {
            LaunchSegmentWarp<T, 32>(xs, ys, a, ctx.stream());
          }
          VIGIL_CHECK_LAUNCH("SegmentNormWarpKernel");
          return Status::Ok();
        }
        SegmentNormKernel<T><<<GridFor(a.segments), BlockSizeFor(a.length), 0, ctx.stream()>>>(
            static_cast<const T*>(x.raw_data()), static_cast<T*>(y.raw_data()), a);
        VIGIL_CHECK_LAUNCH("SegmentNormKernel");
        return Status::Ok();
      },
      [&] { return BadDtype(ctx, 0); });
}

// A per-channel or per-group parameter input: a float dtype with `count` elements.
Status CheckParam(const CudaKernelContext& ctx, size_t i, int64_t count) {
  const runtime::Tensor* t = ctx.input(i);
  if (!t) return ctx.Fail("input {} is missing", i);
  if (!IsCudaFloat(t->dtype())) return BadDtype(ctx, i);
  if (static_cast<int64_t>(t->element_count()) != count) {
    return ctx.Fail("input {} is {}, expected {} elements", i, t->Describe(), count);
  }
  return Status::Ok();
}

// InstanceNormalization is GroupNormalization with one channel per group and
// per-channel parameters.
Status GroupLikeNorm(CudaKernelContext& ctx, int64_t groups, bool per_channel) {
  const runtime::Tensor& x = *ctx.input(0);
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  const int64_t batch = x.dim(0), channels = x.dim(1);
  if (groups < 1 || channels % groups != 0) {
    return ctx.Fail("num_groups {} must be at least 1 and divide the {} channels of input 0 (X) {}", groups,
                    channels, x.Describe());
  }
  const int64_t params = per_channel ? channels : groups;
  VIGIL_RETURN_IF_ERROR(CheckParam(ctx, 1, params));
  VIGIL_RETURN_IF_ERROR(CheckParam(ctx, 2, params));
  SegmentArgs a;
  a.mode = ParamMode::kGroup;
  a.epsilon = epsilon;
  a.groups = groups;
  a.per_group = channels / groups;
  a.inner = batch * channels == 0 ? 0 : static_cast<int64_t>(x.element_count()) / (batch * channels);
  a.per_channel = per_channel;
  a.segments = batch * groups;
  a.length = a.per_group * a.inner;
  a.scale = ctx.input(1)->raw_data();
  a.bias = ctx.input(2)->raw_data();
  a.scale_code = CodeOf(ctx.input(1)->dtype());
  a.bias_code = CodeOf(ctx.input(2)->dtype());
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  if (x.element_count() == 0) return Status::Ok();
  return LaunchSegments(ctx, x, *y, a);
}

Status InstanceNormalization(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x || x->rank() < 2) return ctx.Fail("input 0 (X) must be present with rank >= 2");
  return GroupLikeNorm(ctx, x->dim(1), true);
}

Status GroupNormalization(CudaKernelContext& ctx) {
  const runtime::Tensor* x = ctx.input(0);
  if (!x || x->rank() < 2) return ctx.Fail("input 0 (X) must be present with rank >= 2");
  VIGIL_ASSIGN_OR_RETURN(int64_t groups, ops::RequiredIntAttr(ctx.node(), "num_groups"));
  return GroupLikeNorm(ctx, groups, ctx.opset() >= 21);
}

// Scale or B of LayerNormalization broadcast to X: its strides over X's
// shape, false when it does not broadcast unidirectionally.
bool ParamMap(const std::vector<int64_t>& p, const std::vector<int64_t>& x, IndexMap* map) {
  if (p.size() > x.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    const int64_t pd = p[p.size() - 1 - i], xd = x[x.size() - 1 - i];
    if (pd != xd && pd != 1) return false;
  }
  return BroadcastMap(p, x, map);
}

// Whether a map over X reads element j of the row for every row (varies
// only along dims from axis, and fully).
bool RowContiguous(const IndexMap& m, int64_t axis, int64_t row_length, const std::vector<int64_t>& p) {
  int64_t count = 1;
  for (int64_t d : p) count *= d;
  for (int64_t d = 0; d < axis; ++d) {
    if (m.strides[d] != 0) return false;
  }
  return count == row_length;
}

// LayerNormalization, and RMSNormalization (`rms`: no centring, no B, no
// statistics outputs).
Status LayerLikeNorm(CudaKernelContext& ctx, bool rms) {
  const runtime::Tensor* xp = ctx.input(0);
  if (!xp || !ctx.has_input(1)) return ctx.Fail("inputs X and Scale are required");
  const runtime::Tensor& x = *xp;
  if (x.rank() > static_cast<size_t>(kMaxRank)) return ctx.Unsupported("rank {} > {}", x.rank(), kMaxRank);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(ctx.node(), "axis", -1));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(ctx.node(), axis_attr, static_cast<int64_t>(x.rank())));
  VIGIL_ASSIGN_OR_RETURN(float epsilon, ops::FloatAttr(ctx.node(), "epsilon", 1e-5f));
  VIGIL_ASSIGN_OR_RETURN(int64_t stash, ops::IntAttr(ctx.node(), "stash_type", 1));
  const auto stash_type = static_cast<ir::DataType>(stash);
  SegmentArgs a;
  a.rms = rms;
  a.epsilon = epsilon;
  a.segments = 1;
  a.length = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(x.rank()); ++d) (d < axis ? a.segments : a.length) *= x.dim(d);
  const runtime::Tensor* params[2] = {ctx.input(1), rms ? nullptr : ctx.input(2)};
  IndexMap* maps[2] = {&a.scale_map, &a.bias_map};
  bool contiguous = true;
  for (int i = 0; i < 2; ++i) {
    if (!params[i]) continue;
    if (!IsCudaFloat(params[i]->dtype())) return BadDtype(ctx, i + 1);
    if (!ParamMap(params[i]->shape(), x.shape(), maps[i])) {
      return ctx.Fail("input {} is {}, which does not broadcast to input 0 (X) {}", i + 1, params[i]->Describe(),
                      x.Describe());
    }
    contiguous = contiguous && RowContiguous(*maps[i], axis, a.length, params[i]->shape());
  }
  a.mode = contiguous ? ParamMode::kContiguous : ParamMode::kBroadcast;
  a.scale = params[0]->raw_data();
  a.scale_code = CodeOf(params[0]->dtype());
  if (params[1]) {
    a.bias = params[1]->raw_data();
    a.bias_code = CodeOf(params[1]->dtype());
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), x.shape()));
  std::vector<int64_t> stat_shape = x.shape();
  for (size_t d = static_cast<size_t>(axis); d < stat_shape.size(); ++d) stat_shape[d] = 1;
  void** stat_out[2] = {&a.mean_out, &a.inv_out};
  for (size_t i = 1; i <= 2 && !rms; ++i) {
    if (i >= ctx.num_outputs() || !ctx.output_wanted(i)) continue;
    if (!IsCudaFloat(stash_type)) {
      return ctx.Unsupported("stash_type {} for the Mean/InvStdDev outputs", stash);
    }
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(i, stash_type, stat_shape));
    *stat_out[i - 1] = t->raw_data();
  }
  a.stat_code = CodeOf(stash_type);
  bool done = false;
  if (!rms) {
    VIGIL_RETURN_IF_ERROR(TryLayerNormVec(ctx, x, *y, *params[0], params[1], a, &done));
  }
  if (done) return Status::Ok();
  return LaunchSegments(ctx, x, *y, a);
}

Status LayerNormalization(CudaKernelContext& ctx) { return LayerLikeNorm(ctx, false); }
Status RMSNormalization(CudaKernelContext& ctx) { return LayerLikeNorm(ctx, true); }

bool SupportsLayerNorm(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  if (!FloatInputs(node, types, why_not, 1)) return false;
  // The statistics are computed in float whatever stash_type says; only the
  // dtype of the optional Mean/InvStdDev outputs depends on it.
  auto stash = ops::IntAttr(node, "stash_type", 1);
  const auto type = static_cast<ir::DataType>(stash.ok() ? stash.value() : 0);
  const bool stats = (node.outputs.size() > 1 && !node.outputs[1].empty()) ||
                     (node.outputs.size() > 2 && !node.outputs[2].empty());
  if (!IsCudaFloat(type) && (stats || type != ir::DataType::kFloat64)) {
    if (why_not) *why_not = "stash_type other than float32/float16/bfloat16 with Mean/InvStdDev outputs";
    return false;
  }
  return true;
}

bool SupportsChannelNorm(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  return FloatInputs(node, types, why_not, 2);
}

const CudaKernelDef kNormalizationKernels[] = {
    {"", "BatchNormalization", 1, kLatest, BatchNormalization, SupportsBatchNorm},
    {"", "InstanceNormalization", 1, kLatest, InstanceNormalization, SupportsChannelNorm},
    {"", "LayerNormalization", 17, kLatest, LayerNormalization, SupportsLayerNorm},
    {"", "RMSNormalization", 23, kLatest, RMSNormalization, SupportsLayerNorm},
    // The kernel reads the opset: scale/bias per group in 18, per channel in 21.
    {"", "GroupNormalization", 18, kLatest, GroupNormalization, SupportsChannelNorm},
};

}  // namespace

std::span<const CudaKernelDef> NormalizationCudaKernels() { return kNormalizationKernels; }

}  // namespace vigil::cuda
