// ONNX Attention (opsets 23, 24, 25) on the GPU, with the semantics of the CPU
// kernel (backends/cpu/attention.cpp), which is the oracle. Per batch b,
// query head h and query row i:
//
//   raw[j]    = scale * q . k[j]
//   capped[j] = softcap * tanh(raw[j] / softcap)   (softcap > 0)
//   score[j]  = capped[j] + attn_mask + causal + window + padding   (bias 0 or -inf, or a float mask's value)
//   p         = softmax(score), all 0 where every bias is -inf
//   y         = sum_j p[j] v[j]
//
// K and V are past_key / past_value followed by the new rows, head h reading
// key/value head h / (q_heads / kv_heads). The causal frontier sits at
// i + offset: offset is the past length, nonpad_kv_seqlen[b] - q_seq, or 0.
//
// A plain kernel, not a fast one: one block per query row (grid-striding
// over rows), one warp per key for the dot products (coalesced K reads),
// the row's scores kept in shared memory (or in a per-block slice of the
// stream's workspace when the row is too long), a block-wide max and sum,
// then one thread per output column for P.V. Arithmetic is in double for
// float32 inputs (the CPU computes in double; ONNX's float32 node tests
// allow 1e-3 relative) and in float for float16 / bfloat16, unless
// softmax_precision asks for float64. Each output is rounded once.
//
// nonpad_kv_seqlen (opset 24) is read on the device, so that a run stays
// asynchronous and can be recorded as a CUDA graph (a host-read graph input
// cannot). A count outside [0, kv_seq] cannot be reported from there: that
// batch's Y rows (and qk_matmul_output rows) are written as NaN and no key
// is read. The CPU kernel fails instead.
// fmt's constexpr formatting code mentions long double; with
// --expt-relaxed-constexpr nvcc warns about it (#20208) in any .cu file that
// formats a message, although none of it runs on the device.
#pragma nv_diag_suppress 20208

#include "backends/cuda/onnx_attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cuda/device_common.cuh"
#include "ops/attention_params.h"

namespace vigil::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
// A row's q and scores live in dynamic shared memory up to this size, else
// in the workspace (the default 48 KB per block, less the static part).
constexpr size_t kSharedScratchBytes = 40 * 1024;
// Blocks of a launch: enough to fill any GPU; with scores in the workspace,
// fewer, so that the workspace stays within this budget.
constexpr int64_t kMaxBlocks = 4096;
constexpr size_t kWorkspaceBudget = size_t{64} << 20;

template <typename Acc, typename T>
__device__ __forceinline__ Acc Load(T v) {
  return static_cast<Acc>(ToFloat(v));  // exact for every float dtype
}
template <typename T, typename Acc>
__device__ __forceinline__ T Store(Acc v) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(v);
  } else {
    // double -> float -> half could round twice; float16 / bfloat16 never
    // compute in double unless softmax_precision asks, and then once more
    // rounding of a value already far below their precision is harmless.
    return FromFloat<T>(static_cast<float>(v));
  }
}

__device__ __forceinline__ float AccTanh(float v) { return tanhf(v); }
__device__ __forceinline__ double AccTanh(double v) { return tanh(v); }
__device__ __forceinline__ float AccExp(float v) { return expf(v); }
__device__ __forceinline__ double AccExp(double v) { return exp(v); }

// The CPU's max: NaN anywhere makes the max NaN.
template <typename Acc>
__device__ __forceinline__ Acc NanMax(Acc a, Acc b) {
  return (isnan(a) || a > b) ? a : b;
}

template <typename Acc>
__device__ __forceinline__ Acc WarpSum(Acc v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

struct OnnxAttentionArgs {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* past_k = nullptr;  // null: no past (then past_v is null too)
  const void* past_v = nullptr;
  const void* mask = nullptr;    // null: no attn_mask
  bool mask_bool = false;        // bool (1 byte each), else Q's dtype
  int64_t mask_stride[4] = {};   // over [batch, q_heads, q_seq, keys]; 0 broadcasts
  int64_t mask_keys = 0;         // the mask's last dim
  bool mask_padded = false;      // opset 24: keys >= mask_keys are masked out
  const int64_t* valid_keys = nullptr;  // nonpad_kv_seqlen, or null
  void* y = nullptr;
  void* qk = nullptr;  // output 3, or null
  int qk_mode = 0;
  bool rank3 = false, causal = false;
  int64_t left_window = -1, right_window = -1;  // opset 25; -1: unbounded
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_seq = 0, kv_seq = 0, past_seq = 0, total_seq = 0;
  int64_t head_size = 0, v_head_size = 0;
  int64_t rows = 0;  // batch * q_heads * q_seq
  double scale = 1, softcap = 0;
  void* scratch = nullptr;  // per-block slices of head_size + total_seq Acc; null: shared memory
};

// Row t of the joined cache (past rows, then the new ones) of key/value head
// h, of `size` elements. The new rows are [B, S, H * size] (3-D) or
// [B, H, S, size].
template <typename T>
__device__ __forceinline__ const T* CacheRow(const OnnxAttentionArgs& a, const T* cur, const T* past, int64_t b,
                                             int64_t h, int64_t t, int64_t size) {
  if (t < a.past_seq) return past + ((b * a.kv_heads + h) * a.past_seq + t) * size;
  const int64_t s = t - a.past_seq;
  return cur + (a.rank3 ? ((b * a.kv_seq + s) * a.kv_heads + h) * size : ((b * a.kv_heads + h) * a.kv_seq + s) * size);
}

// attn_mask as an additive bias for (b, h, i, j), as the CPU's MaskBias.
template <typename T, typename Acc>
__device__ __forceinline__ Acc MaskAt(const OnnxAttentionArgs& a, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (!a.mask) return Acc(0);
  if (a.mask_padded && j >= a.mask_keys) return -INFINITY;
  const int64_t at = b * a.mask_stride[0] + h * a.mask_stride[1] + i * a.mask_stride[2] + j * a.mask_stride[3];
  if (a.mask_bool) return static_cast<const uint8_t*>(a.mask)[at] ? Acc(0) : Acc(-INFINITY);
  return Load<Acc>(static_cast<const T*>(a.mask)[at]);
}

// Every thread's `v` summed over the block (every thread gets the sum). The
// barrier first also ends the block's reads of `red` before it is rewritten.
template <typename Acc>
__device__ __forceinline__ Acc BlockSum(Acc v, Acc* red) {
  v = WarpSum(v);
  __syncthreads();
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  Acc sum = 0;
  for (int w = 0; w < kWarps; ++w) sum += red[w];
  return sum;
}

template <typename T, typename Acc>
__global__ void __launch_bounds__(kThreads) OnnxAttentionRowKernel(OnnxAttentionArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ Acc red[kWarps];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t slice = a.head_size + a.total_seq;
  Acc* buf = a.scratch ? static_cast<Acc*>(a.scratch) + blockIdx.x * slice : reinterpret_cast<Acc*>(smem);
  Acc* qv = buf;
  Acc* score = buf + a.head_size;
  const T* q_all = static_cast<const T*>(a.q);
  const T *k_all = static_cast<const T*>(a.k), *past_k = static_cast<const T*>(a.past_k);
  const T *v_all = static_cast<const T*>(a.v), *past_v = static_cast<const T*>(a.past_v);
  const int64_t group = a.q_heads / a.kv_heads;
  const Acc scale = static_cast<Acc>(a.scale), softcap = static_cast<Acc>(a.softcap);

  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const int64_t i = row % a.q_seq, bh = row / a.q_seq;
    const int64_t h = bh % a.q_heads, b = bh / a.q_heads, kvh = h / group;
    T* y = static_cast<T*>(a.y) +
           (a.rank3 ? ((b * a.q_seq + i) * a.q_heads + h) * a.v_head_size : row * a.v_head_size);
    T* qk = a.qk ? static_cast<T*>(a.qk) + row * a.total_seq : nullptr;
    int64_t valid = -1;  // -1: no nonpad_kv_seqlen
    if (a.valid_keys) {
      valid = a.valid_keys[b];
      if (valid < 0 || valid > a.kv_seq) {  // the CPU fails; here the row says so
        for (int64_t e = tid; e < a.v_head_size; e += kThreads) y[e] = Store<T>(Acc(NAN));
        for (int64_t j = tid; qk && j < a.total_seq; j += kThreads) qk[j] = Store<T>(Acc(NAN));
        continue;  // the same for the whole block
      }
    }
    const int64_t offset = a.past_k ? a.past_seq : valid >= 0 ? valid - a.q_seq : 0;
    const int64_t pos = i + offset;

    __syncthreads();  // the previous row is done with buf
    const T* q = q_all + (a.rank3 ? ((b * a.q_seq + i) * a.q_heads + h) * a.head_size : row * a.head_size);
    for (int64_t e = tid; e < a.head_size; e += kThreads) qv[e] = Load<Acc>(q[e]);
    __syncthreads();

    // Scores, one warp per key; lane 0 applies softcap and bias.
    Acc local_max = -INFINITY;
    int open = 0;  // some key of this warp's has a bias other than -inf
    for (int64_t j = warp; j < a.total_seq; j += kWarps) {
      const T* k = CacheRow(a, k_all, past_k, b, kvh, j, a.head_size);
      Acc dot = 0;
      for (int64_t e = lane; e < a.head_size; e += 32) dot += qv[e] * Load<Acc>(k[e]);
      dot = WarpSum(dot);
      if (lane == 0) {
        const Acc raw = scale * dot;
        const Acc capped = softcap > 0 ? softcap * AccTanh(raw / softcap) : raw;
        Acc bias = MaskAt<T, Acc>(a, b, h, i, j);
        const bool blocked = (a.causal && j > pos) || (a.left_window >= 0 && pos - j > a.left_window) ||
                             (a.right_window >= 0 && j - pos > a.right_window) || (valid >= 0 && j >= valid);
        if (blocked) bias += Acc(-INFINITY);
        open |= !(bias == Acc(-INFINITY));
        const Acc s = capped + bias;
        score[j] = s;
        local_max = NanMax(local_max, s);
        if (qk && a.qk_mode < 3) qk[j] = Store<T>(a.qk_mode == 0 ? raw : a.qk_mode == 1 ? capped : s);
      }
    }
    if (lane == 0) red[warp] = local_max;
    const bool any_open = __syncthreads_or(open) != 0;  // also: scores and red are written
    Acc top = -INFINITY;
    for (int w = 0; w < kWarps; ++w) top = NanMax(top, red[w]);
    if (top == Acc(-INFINITY)) top = 0;

    Acc part = 0;
    for (int64_t j = tid; j < a.total_seq; j += kThreads) part += score[j] = AccExp(score[j] - top);
    Acc sum = BlockSum(part, red);
    if (sum == Acc(0)) sum = 1;
    for (int64_t j = tid; j < a.total_seq; j += kThreads) {
      const Acc p = any_open ? score[j] / sum : Acc(0);
      score[j] = p;
      if (qk && a.qk_mode == 3) qk[j] = Store<T>(p);
    }
    __syncthreads();

    // P.V, one thread per output column (V rows read coalesced).
    for (int64_t e = tid; e < a.v_head_size; e += kThreads) {
      Acc acc = 0;
      for (int64_t j = 0; j < a.total_seq; ++j) acc += score[j] * Load<Acc>(CacheRow(a, v_all, past_v, b, kvh, j, a.v_head_size)[e]);
      y[e] = Store<T>(acc);
    }
  }
}

// present_key / present_value: the joined cache [B, kv_heads, total, size],
// copied bit for bit (U: an unsigned type of the element's size).
template <typename U>
__global__ void JoinCacheKernel(OnnxAttentionArgs a, const U* cur, const U* past, U* out, int64_t size) {
  const int64_t n = a.batch * a.kv_heads * a.total_seq * size;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n; idx += step) {
    const int64_t e = idx % size, r = idx / size;
    const int64_t t = r % a.total_seq, bh = r / a.total_seq;
    out[idx] = CacheRow(a, cur, past, bh / a.kv_heads, bh % a.kv_heads, t, size)[e];
  }
}

Status LaunchJoinCache(const OnnxAttentionArgs& a, const runtime::Tensor& cur, const runtime::Tensor* past,
                       runtime::Tensor& out, int64_t size, cudaStream_t stream) {
  if (out.element_count() == 0 || size == 0) return Status::Ok();
  const bool known = DispatchBySize(static_cast<size_t>(ir::DataTypeBits(cur.dtype()) / 8), [&](auto tag) {
    using U = decltype(tag);
    JoinCacheKernel<U><<<BlocksFor(static_cast<int64_t>(out.element_count())), 256, 0, stream>>>(
        a, static_cast<const U*>(cur.raw_data()), past ? static_cast<const U*>(past->raw_data()) : nullptr,
        static_cast<U*>(out.raw_data()), size);
  });
  if (!known) return InternalError("Attention: no copy for dtype {}", ir::DataTypeName(cur.dtype()));
  VIGIL_CHECK_LAUNCH("JoinCacheKernel");
  return Status::Ok();
}

template <typename T, typename Acc>
Status LaunchRows(CudaKernelContext& ctx, OnnxAttentionArgs a) {
  const size_t slice_bytes = static_cast<size_t>(a.head_size + a.total_seq) * sizeof(Acc);
  int64_t blocks = std::min(a.rows, kMaxBlocks);
  size_t shared = slice_bytes;
  if (slice_bytes > kSharedScratchBytes) {
    shared = 0;
    blocks = std::max<int64_t>(1, std::min<int64_t>(blocks, static_cast<int64_t>(kWorkspaceBudget / slice_bytes)));
    VIGIL_ASSIGN_OR_RETURN(a.scratch, ctx.stream_context().Workspace(slice_bytes * static_cast<size_t>(blocks)));
  }
  OnnxAttentionRowKernel<T, Acc><<<static_cast<unsigned>(blocks), kThreads, shared, ctx.stream()>>>(a);
  VIGIL_CHECK_LAUNCH("OnnxAttentionRowKernel");
  return Status::Ok();
}

// --- the op -------------------------------------------------------------------

const char* InputName(size_t i) {
  static const char* const kNames[] = {"Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"};
  return i < 7 ? kNames[i] : "?";
}

// Inputs 0..5's dtypes against Q's, with the CPU kernel's errors where it
// fails and Unsupported where only this kernel cannot (V or a float mask of
// another float dtype than Q's).
Status CheckDtypes(const CudaKernelContext& ctx) {
  const runtime::Tensor& q = *ctx.input(0);
  if (!IsCudaFloat(q.dtype())) return ctx.Unsupported("input 0 (Q) is {}; the CUDA kernel takes float32, float16 or bfloat16", q.Describe());
  auto must_match = [&](size_t i, size_t same) -> Status {
    const runtime::Tensor* t = ctx.input(i);
    if (!t || t->dtype() == ctx.input(same)->dtype()) return Status::Ok();
    return ctx.Fail("input {} ({}) is {}, {} is {}; their dtypes must match", i, InputName(i), t->Describe(),
                    InputName(same), ctx.input(same)->Describe());
  };
  VIGIL_RETURN_IF_ERROR(must_match(1, 0));
  VIGIL_RETURN_IF_ERROR(must_match(4, 0));
  VIGIL_RETURN_IF_ERROR(must_match(5, 2));
  if (ctx.input(2)->dtype() != q.dtype()) {
    return ctx.Unsupported("input 2 (V) is {}, Q is {}; the CUDA kernel takes V of Q's dtype",
                           ctx.input(2)->Describe(), q.Describe());
  }
  const runtime::Tensor* mask = ctx.input(3);
  if (mask && mask->dtype() != ir::DataType::kBool && mask->dtype() != q.dtype()) {
    return ctx.Unsupported("input 3 (attn_mask) is {}; the CUDA kernel takes a bool mask or one of Q's dtype {}",
                           mask->Describe(), ir::DataTypeName(q.dtype()));
  }
  return Status::Ok();
}

Status ReadMask(const CudaKernelContext& ctx, const ops::AttentionDims& d, OnnxAttentionArgs& a) {
  const runtime::Tensor* mask = ctx.input(3);
  if (!mask) return Status::Ok();
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ops::ResolveAttentionMask(ctx.node(), ctx.opset(), d, mask->shape()));
  // As the CPU kernel: a mask of no elements (a last dim of 0, opset 24)
  // masks nothing.
  if (mask->element_count() == 0) return Status::Ok();
  a.mask = mask->raw_data();
  a.mask_bool = mask->dtype() == ir::DataType::kBool;
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    a.mask_stride[i] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  a.mask_keys = dims[3];
  a.mask_padded = ctx.opset() >= 24;
  return Status::Ok();
}

// nonpad_kv_seqlen's dtype and shape (its values are checked on the device).
Status ReadValidKeys(const CudaKernelContext& ctx, const ops::AttentionDims& d, OnnxAttentionArgs& a) {
  const runtime::Tensor* t = ctx.input(6);
  if (!t) return Status::Ok();
  if (ctx.has_input(4)) {
    return ctx.Fail("nonpad_kv_seqlen (an external KV cache) cannot be combined with past_key and past_value");
  }
  if (t->dtype() != ir::DataType::kInt64 || t->shape() != std::vector<int64_t>{d.batch}) {
    return ctx.Fail("input 6 (nonpad_kv_seqlen) is {}; it must be int64[{}] (one count per batch)", t->Describe(),
                    d.batch);
  }
  a.valid_keys = static_cast<const int64_t*>(t->raw_data());
  return Status::Ok();
}

Status OnnxAttention(CudaKernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.Fail("input {} ({}) is missing; Q, K and V are required", i, InputName(i));
  }
  VIGIL_ASSIGN_OR_RETURN(ops::AttentionAttrs attrs, ops::ReadAttentionAttrs(ctx.node(), ctx.opset()));
  VIGIL_RETURN_IF_ERROR(CheckDtypes(ctx));
  const runtime::Tensor &q = *ctx.input(0), &k = *ctx.input(1), &v = *ctx.input(2);
  const runtime::Tensor *past_key = ctx.input(4), *past_value = ctx.input(5);
  VIGIL_ASSIGN_OR_RETURN(ops::AttentionDims d,
                         ops::ResolveAttentionDims(ctx.node(), ctx.opset(), attrs, q.shape(), k.shape(), v.shape(),
                                                   past_key ? &past_key->shape() : nullptr,
                                                   past_value ? &past_value->shape() : nullptr));
  OnnxAttentionArgs a;
  VIGIL_RETURN_IF_ERROR(ReadMask(ctx, d, a));
  VIGIL_RETURN_IF_ERROR(ReadValidKeys(ctx, d, a));
  a.q = q.raw_data();
  a.k = k.raw_data();
  a.v = v.raw_data();
  a.past_k = past_key ? past_key->raw_data() : nullptr;
  a.past_v = past_value ? past_value->raw_data() : nullptr;
  a.rank3 = d.rank3;
  a.causal = attrs.is_causal;
  a.left_window = attrs.left_window;
  a.right_window = attrs.right_window;
  a.batch = d.batch;
  a.q_heads = d.q_heads;
  a.kv_heads = d.kv_heads;
  a.q_seq = d.q_seq;
  a.kv_seq = d.kv_seq;
  a.past_seq = d.past_seq;
  a.total_seq = d.total_seq;
  a.head_size = d.head_size;
  a.v_head_size = d.v_head_size;
  a.rows = d.batch * d.q_heads * d.q_seq;
  a.scale = attrs.scale ? double{*attrs.scale} : 1.0 / std::sqrt(static_cast<double>(d.head_size));
  a.softcap = attrs.softcap;
  a.qk_mode = static_cast<int>(attrs.qk_mode);

  for (size_t out = 1; out <= 2; ++out) {
    if (!ctx.output_wanted(out)) continue;
    const runtime::Tensor& cur = out == 1 ? k : v;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * present,
                           ctx.Output(out, cur.dtype(), out == 1 ? d.present_key_shape() : d.present_value_shape()));
    VIGIL_RETURN_IF_ERROR(LaunchJoinCache(a, cur, out == 1 ? past_key : past_value, *present,
                                          out == 1 ? d.head_size : d.v_head_size, ctx.stream()));
  }
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, q.dtype(), d.y_shape()));
  a.y = y->raw_data();
  if (ctx.output_wanted(3)) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * qk, ctx.Output(3, q.dtype(), d.qk_shape()));
    a.qk = qk->raw_data();
  }
  if (a.rows == 0) return Status::Ok();  // Y and qk are empty

  const bool wide = q.dtype() == ir::DataType::kFloat32 || attrs.softmax_precision == ir::DataType::kFloat64;
  switch (q.dtype()) {
    case ir::DataType::kFloat32: return LaunchRows<float, double>(ctx, a);
    case ir::DataType::kFloat16: return wide ? LaunchRows<__half, double>(ctx, a) : LaunchRows<__half, float>(ctx, a);
    case ir::DataType::kBfloat16:
      return wide ? LaunchRows<__nv_bfloat16, double>(ctx, a) : LaunchRows<__nv_bfloat16, float>(ctx, a);
    default: return ctx.Unsupported("input 0 (Q) is {}", q.Describe());  // CheckDtypes refused it already
  }
}

// What the kernel takes: Q float32 / float16 / bfloat16, K, V and the caches
// of Q's dtype, the mask bool or of Q's dtype. Everything else the CPU runs
// (or rejects with its own error).
bool SupportsOnnxAttention(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not) {
  auto refuse = [&](std::string why) {
    if (why_not) *why_not = std::move(why);
    return false;
  };
  auto present = [&](size_t i) { return i < node.inputs.size() && !node.inputs[i].empty(); };
  const ir::DataType q = InputDtype(types, 0);
  if (!IsCudaFloat(q)) {
    return refuse(q == ir::DataType::kUndefined ? std::string("the dtype of input 0 (Q) is not known at load time")
                                                : fmt::format("dtype {} of input 0 (Q)", ir::DataTypeName(q)));
  }
  for (size_t i : {size_t{1}, size_t{2}, size_t{4}, size_t{5}}) {
    if (!present(i)) continue;
    const ir::DataType t = InputDtype(types, i);
    if (t != q) {
      return refuse(fmt::format("input {} ({}) has dtype {}; the CUDA kernel needs Q's dtype {}", i, InputName(i),
                                t == ir::DataType::kUndefined ? "unknown" : ir::DataTypeName(t), ir::DataTypeName(q)));
    }
  }
  if (present(3)) {
    const ir::DataType t = InputDtype(types, 3);
    if (t != ir::DataType::kBool && t != q) {
      return refuse(fmt::format("attn_mask of dtype {}; the CUDA kernel takes a bool mask or one of Q's dtype {}",
                                t == ir::DataType::kUndefined ? "unknown" : ir::DataTypeName(t), ir::DataTypeName(q)));
    }
  }
  return true;
}

const CudaKernelDef kOnnxAttentionKernels[] = {
    {"", "Attention", 23, kLatest, OnnxAttention, SupportsOnnxAttention},
};

}  // namespace

std::span<const CudaKernelDef> OnnxAttentionCudaKernels() { return kOnnxAttentionKernels; }

}  // namespace vigil::cuda
