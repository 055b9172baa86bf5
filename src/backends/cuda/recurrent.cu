// CUDA kernels of the recurrent ops RNN, GRU and LSTM (opsets 7 and later),
// with the semantics of the CPU kernels (backends/cpu/recurrent.cpp):
// directions forward/reverse/bidirectional, optional B, sequence_lens
// (int32/int64, read on the device), initial_h, initial_c, P, layout 0/1
// (opset >= 14), clip, input_forget, GRU linear_before_reset 0/1, and every
// activation function the CPU knows (with its alpha/beta rules).
//
// The input projection of all time steps and both directions is one matrix
// product, X[seq*batch, input] * W[nd*gates*hidden, input]^T (cuBLASLt via
// RowMajorGemm). Then, per time step, queued on the stream without any
// synchronisation: per direction a product H_{t-1} * R^T, and one gate
// kernel for both directions that adds the biases, applies the activations,
// updates the state and writes Y. GRU without linear_before_reset needs a
// second product ((r . H_{t-1}) * Rh^T) and a second kernel per step. The
// recurrence (states, R and its products) runs in float32 whatever the
// dtype, so that float16/bfloat16 rounding does not compound over time; only
// X * W^T is computed (float32-accumulated) in the input dtype. Scratch memory is allocated stream-ordered
// (cudaMallocAsync/cudaFreeAsync), since RowMajorGemm uses the workspace.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/device_common.cuh"
#include "backends/cuda/matmul_cublaslt.h"
#include "ops/recurrent_params.h"

namespace vigil::cuda {
namespace {

using ir::DataType;

// ---- activations ------------------------------------------------------------------

enum ActKind : int { kRelu, kTanh, kSigmoid, kAffine, kLeakyRelu, kThresholdedRelu, kScaledTanh, kHardSigmoid,
                     kElu, kSoftsign, kSoftplus };

struct Act {
  int kind = kTanh;
  float alpha = 0;
  float beta = 0;
};

// The attributes name the same functions as ops::RecurrentActKind, in the same order.
static_assert(kRelu == static_cast<int>(ops::RecurrentActKind::kRelu) &&
              kSigmoid == static_cast<int>(ops::RecurrentActKind::kSigmoid) &&
              kHardSigmoid == static_cast<int>(ops::RecurrentActKind::kHardSigmoid) &&
              kSoftplus == static_cast<int>(ops::RecurrentActKind::kSoftplus));

__device__ __forceinline__ float ApplyAct(const Act& a, float x) {
  switch (a.kind) {
    case kRelu: return x > 0.0f ? x : 0.0f;
    case kTanh: return tanhf(x);
    case kSigmoid: return 1.0f / (1.0f + expf(-x));
    case kAffine: return a.alpha * x + a.beta;
    case kLeakyRelu: return x >= 0.0f ? x : a.alpha * x;
    case kThresholdedRelu: return x >= a.alpha ? x : 0.0f;
    case kScaledTanh: return a.alpha * tanhf(a.beta * x);
    case kHardSigmoid: {
      float v = a.alpha * x + a.beta;
      v = v < 0.0f ? 0.0f : v;  // std::max/std::min order of the CPU
      return 1.0f < v ? 1.0f : v;
    }
    case kElu: return x >= 0.0f ? x : a.alpha * (expf(x) - 1.0f);
    case kSoftsign: return x / (1.0f + fabsf(x));
    case kSoftplus: return x > 30.0f ? x : log1pf(expf(x));
    default: return x;
  }
}

// ---- configuration ------------------------------------------------------------------

enum Cell : int { kRnn = 0, kGru = 1, kLstm = 2 };
static_assert(kRnn == static_cast<int>(ops::RecurrentCell::kRnn) && kGru == static_cast<int>(ops::RecurrentCell::kGru) &&
              kLstm == static_cast<int>(ops::RecurrentCell::kLstm));

inline constexpr int kMaxActs = 6;  // 3 functions per direction, 2 directions

struct Spec {
  Cell cell = kRnn;
  int64_t gates = 1;
  int64_t num_dir = 1;
  bool reverse = false;
  int64_t layout = 0;  // read only at opset >= 14
  bool has_clip = false;
  float clip = 0;
  bool input_forget = false;
  bool linear_before_reset = false;
  int acts_per_dir = 1;
  Act acts[kMaxActs];
};

// Reads the attributes as the CPU kernel does (ops/recurrent_params.h); an
// error status, naming the node, says why the node is invalid.
Status ParseSpec(const ir::Node& node, Cell cell, bool read_layout, Spec* spec) {
  VIGIL_ASSIGN_OR_RETURN(ops::RecurrentAttrs attrs,
                         ops::ReadRecurrentAttrs(node, static_cast<ops::RecurrentCell>(cell), read_layout));
  if (attrs.acts.size() > static_cast<size_t>(kMaxActs)) {
    return InvalidInputError("{}: {} activation functions (at most {})", ops::NodeLabel(node), attrs.acts.size(),
                             kMaxActs);
  }
  spec->cell = cell;
  spec->gates = attrs.gates;
  spec->num_dir = attrs.num_dir;
  spec->reverse = attrs.reverse;
  spec->layout = attrs.layout;
  spec->has_clip = attrs.clip.has_value();
  spec->clip = attrs.clip.value_or(0.0f);
  spec->input_forget = attrs.input_forget;
  spec->linear_before_reset = attrs.linear_before_reset;
  for (size_t k = 0; k < attrs.acts.size(); ++k) {
    const ops::RecurrentActivation& a = attrs.acts[k];
    spec->acts[k] = Act{static_cast<int>(a.kind), static_cast<float>(a.alpha), static_cast<float>(a.beta)};
  }
  spec->acts_per_dir = static_cast<int>(attrs.acts_per_dir);
  return Status::Ok();
}

// ---- device kernels -----------------------------------------------------------------

// Everything a step kernel needs besides its buffers, passed by value.
struct StepParams {
  int64_t seq = 0, batch = 0, hidden = 0, num_dir = 1, gates = 1;
  // Per-direction strides in elements of the float state and product
  // buffers (each direction's slice starts 256-byte aligned, as cuBLASLt's
  // plans assume).
  int64_t state_stride = 0;  // hf, cf, rh, hr2
  int64_t hr_stride = 0;     // hr
  int layout = 0;
  int reverse = 0;
  const void* lens = nullptr;  // [batch] int32 or int64 on the device; null: all seq
  int lens64 = 0;
  int has_clip = 0;
  float clip = 0;
  int input_forget = 0;
  int acts_per_dir = 1;
  Act acts[kMaxActs];
};

template <typename T>
struct StepBuffers {
  const T* xw = nullptr;    // [seq*batch rows, nd*gates*hidden]: X * W^T
  const float* hr = nullptr;   // nd x [batch, n1]: H * R^T (GRU lbr=0: z and r parts only)
  const float* hr2 = nullptr;  // nd x [batch, hidden]: (r . H) * Rh^T (GRU lbr=0)
  const T* bias = nullptr;     // [nd, 2*gates*hidden] or null
  const T* peep = nullptr;     // [nd, 3*hidden] or null
  float* hf = nullptr;         // nd x [batch, hidden]: the state, also the products' operand
  float* cf = nullptr;         // nd x [batch, hidden]: the cell state (LSTM)
  float* rh = nullptr;         // nd x [batch, hidden]: r . H (GRU lbr=0)
  T* y = nullptr;              // Y or null
};

__device__ __forceinline__ float ClipTo(const StepParams& p, float v) {
  if (!p.has_clip) return v;
  v = v < -p.clip ? -p.clip : v;  // std::max(v, -c) then std::min(., c), as the CPU (keeps NaN)
  return p.clip < v ? p.clip : v;
}

// The time index that direction d of batch b processes at step s; false
// when that sequence has already ended.
__device__ __forceinline__ bool StepTime(const StepParams& p, int64_t d, int64_t b, int64_t s, int64_t* t) {
  int64_t len = p.seq;
  if (p.lens) {
    len = p.lens64 ? static_cast<const int64_t*>(p.lens)[b]
                   : static_cast<int64_t>(static_cast<const int32_t*>(p.lens)[b]);
    len = len < 0 ? 0 : len > p.seq ? p.seq : len;
  }
  if (s >= len) return false;
  *t = (p.reverse || d == 1) ? len - 1 - s : s;
  return true;
}

// X * W^T (+ the W bias and, where `with_rb`, the R bias) of gate g.
template <typename T>
__device__ __forceinline__ float InputPart(const StepParams& p, const StepBuffers<T>& buf, int64_t d, int64_t b,
                                           int64_t t, int64_t g, int64_t j, bool with_rb) {
  const int64_t gh = p.gates * p.hidden;
  const int64_t row = p.layout == 0 ? t * p.batch + b : b * p.seq + t;
  float v = ToFloat(buf.xw[row * p.num_dir * gh + d * gh + g * p.hidden + j]);
  if (buf.bias) {
    const T* bd = buf.bias + d * 2 * gh;
    v += ToFloat(bd[g * p.hidden + j]);
    if (with_rb) v += ToFloat(bd[gh + g * p.hidden + j]);
  }
  return v;
}

template <typename T>
__device__ __forceinline__ void StoreState(const StepParams& p, const StepBuffers<T>& buf, int64_t sidx, int64_t d,
                                           int64_t b, int64_t t, int64_t j, float h) {
  buf.hf[sidx] = h;
  if (buf.y) {
    const int64_t yi = p.layout == 0 ? ((t * p.num_dir + d) * p.batch + b) * p.hidden + j
                                     : ((b * p.seq + t) * p.num_dir + d) * p.hidden + j;
    buf.y[yi] = FromFloat<T>(h);
  }
}

// One time step of every direction for RNN, LSTM and GRU with
// linear_before_reset; for GRU without it, phase 0 writes r . H and phase 1
// finishes the step.
template <typename T>
__global__ void CellStepKernel(StepParams p, StepBuffers<T> buf, int cell, int lbr, int phase, int64_t s) {
  const int64_t hs = p.hidden, n = p.num_dir * p.batch * hs;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = idx % hs, b = (idx / hs) % p.batch, d = idx / (hs * p.batch);
    const int64_t sidx = d * p.state_stride + b * hs + j;  // in hf, cf, rh, hr2
    const Act* act = p.acts + d * p.acts_per_dir;
    int64_t t = 0;
    const bool active = StepTime(p, d, b, s, &t);
    if (cell == kGru && !lbr && phase == 0) {
      if (!active) {
        buf.rh[sidx] = 0.0f;
        continue;
      }
      const float r = ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 1, j, true) +
                                                     buf.hr[d * p.hr_stride + b * 2 * hs + hs + j]));
      buf.rh[sidx] = r * buf.hf[sidx];
      continue;
    }
    if (!active) continue;  // this sequence has ended: its state stays
    float h = 0.0f;
    if (cell == kRnn) {
      h = ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 0, j, true) + buf.hr[d * p.hr_stride + b * hs + j]));
    } else if (cell == kGru) {
      const int64_t n1 = lbr ? 3 * hs : 2 * hs;
      const float* hr = buf.hr + d * p.hr_stride + b * n1;
      const float hp = buf.hf[sidx];
      const float z = ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 0, j, true) + hr[j]));
      float cand;
      if (lbr) {
        const float r = ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 1, j, true) + hr[hs + j]));
        const float rbh = buf.bias ? ToFloat(buf.bias[d * 6 * hs + 5 * hs + j]) : 0.0f;
        cand = ApplyAct(act[1], ClipTo(p, InputPart(p, buf, d, b, t, 2, j, false) + r * (hr[2 * hs + j] + rbh)));
      } else {
        cand = ApplyAct(act[1], ClipTo(p, InputPart(p, buf, d, b, t, 2, j, true) + buf.hr2[sidx]));
      }
      h = (1.0f - z) * cand + z * hp;
    } else {  // LSTM, gate order i, o, f, c
      const float* hr = buf.hr + d * p.hr_stride + b * 4 * hs;
      const float cp = buf.cf[sidx];
      float pi = 0.0f, po = 0.0f, pf = 0.0f;
      if (buf.peep) {
        const T* pd = buf.peep + d * 3 * hs;
        pi = ToFloat(pd[j]);
        po = ToFloat(pd[hs + j]);
        pf = ToFloat(pd[2 * hs + j]);
      }
      const float i = ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 0, j, true) + hr[j] + pi * cp));
      const float f = p.input_forget
                          ? 1.0f - i
                          : ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 2, j, true) + hr[2 * hs + j] +
                                                           pf * cp));
      const float cand = ApplyAct(act[1], ClipTo(p, InputPart(p, buf, d, b, t, 3, j, true) + hr[3 * hs + j]));
      const float c = f * cp + i * cand;
      const float o = ApplyAct(act[0], ClipTo(p, InputPart(p, buf, d, b, t, 1, j, true) + hr[hs + j] + po * c));
      buf.cf[sidx] = c;
      h = o * ApplyAct(act[2], c);
    }
    StoreState(p, buf, sidx, d, b, t, j, h);
  }
}

// Loads initial_h (and initial_c) into the direction-major state buffers;
// zeros where absent.
template <typename T>
__global__ void InitStateKernel(const T* h0, const T* c0, float* hf, float* cf, int64_t stride, int64_t nd,
                                int64_t batch, int64_t hs, int layout) {
  const int64_t n = nd * batch * hs;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = i % hs, b = (i / hs) % batch, d = i / (hs * batch);
    const int64_t src = layout == 0 ? i : (b * nd + d) * hs + j;
    const int64_t dst = d * stride + b * hs + j;
    hf[dst] = h0 ? ToFloat(h0[src]) : 0.0f;
    if (cf) cf[dst] = c0 ? ToFloat(c0[src]) : 0.0f;
  }
}

// Writes a direction-major float state to Y_h / Y_c in the node's layout.
template <typename T>
__global__ void StoreStateKernel(const float* state, int64_t stride, T* out, int64_t nd, int64_t batch, int64_t hs,
                                 int layout) {
  const int64_t n = nd * batch * hs;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = i % hs, b = (i / hs) % batch, d = i / (hs * batch);
    out[layout == 0 ? i : (b * nd + d) * hs + j] = FromFloat<T>(state[d * stride + b * hs + j]);
  }
}

// R [nd, gates*hidden, hidden] to float, each direction's slice aligned:
// rows below n1 into r1, the rest (GRU's Rh without linear_before_reset)
// into r2.
template <typename T>
__global__ void ConvertRKernel(const T* r, float* r1, int64_t r1_stride, float* r2, int64_t r2_stride, int64_t nd,
                               int64_t gh, int64_t hs, int64_t n1) {
  const int64_t per_dir = gh * hs, n = nd * per_dir;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t d = i / per_dir, rem = i - d * per_dir;
    const float v = ToFloat(r[i]);
    if (rem < n1 * hs) r1[d * r1_stride + rem] = v;
    else r2[d * r2_stride + rem - n1 * hs] = v;
  }
}

// ---- host side ----------------------------------------------------------------------

// Scratch device memory, allocated and freed in the order of ctx's stream
// (RowMajorGemm owns the stream context's workspace). Freed on every path.
class StreamScratch {
 public:
  explicit StreamScratch(cudaStream_t stream) : stream_(stream) {}
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  ~StreamScratch() {
    if (ptr_) (void)cudaFreeAsync(ptr_, stream_);
  }
  Status Allocate(size_t bytes) {
    VIGIL_CUDA_CALL(cudaMallocAsync(&ptr_, bytes, stream_));
    return Status::Ok();
  }
  Status Free() {
    void* p = ptr_;
    ptr_ = nullptr;
    if (p != nullptr) {
      VIGIL_CUDA_CALL(cudaFreeAsync(p, stream_));
    }
    return Status::Ok();
  }
  char* data() const { return static_cast<char*>(ptr_); }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
};

size_t AlignUp(size_t bytes) { return (bytes + 255) / 256 * 256; }

struct Dims {
  int64_t seq = 0, batch = 0, input = 0, hidden = 0;
};

template <typename T>
Status Launch(CudaKernelContext& ctx, const Spec& spec, const Dims& dims, DataType dtype,
              const std::vector<runtime::Tensor*>& outs) {
  const int64_t nd = spec.num_dir, hs = dims.hidden, batch = dims.batch, seq = dims.seq;
  const int64_t gh = spec.gates * hs, rows = seq * batch, state = nd * batch * hs;
  const bool gru0 = spec.cell == kGru && !spec.linear_before_reset;
  cudaStream_t stream = ctx.stream();

  // Scratch: xw in T (X * W^T); the recurrence runs in float: R as float
  // (r1, and r2 for GRU's Rh), products hr (+ hr2), states hf, cf and GRU's
  // r . H in rh, each direction's slice 256-byte aligned.
  const int64_t n1 = gru0 ? 2 * hs : gh;  // columns of the first recurrent product
  auto aligned_floats = [](int64_t count) {
    return static_cast<int64_t>(AlignUp(static_cast<size_t>(count) * sizeof(float)) / sizeof(float));
  };
  const int64_t state_stride = aligned_floats(batch * hs), hr_stride = aligned_floats(batch * n1);
  const int64_t r1_stride = aligned_floats(n1 * hs), r2_stride = aligned_floats(hs * hs);
  size_t offset = 0;
  auto carve = [&](size_t bytes) {
    const size_t at = offset;
    offset += AlignUp(bytes);
    return at;
  };
  auto floats = [](int64_t count) { return static_cast<size_t>(count) * sizeof(float); };
  const size_t xw_at = carve(static_cast<size_t>(rows * nd * gh) * sizeof(T));
  const size_t hr_at = carve(floats(nd * hr_stride));
  const size_t hr2_at = carve(gru0 ? floats(nd * state_stride) : 0);
  const size_t rh_at = carve(gru0 ? floats(nd * state_stride) : 0);
  const size_t r1_at = carve(floats(nd * r1_stride));
  const size_t r2_at = carve(gru0 ? floats(nd * r2_stride) : 0);
  const size_t hf_at = carve(floats(nd * state_stride));
  const size_t cf_at = carve(spec.cell == kLstm ? floats(nd * state_stride) : 0);
  StreamScratch scratch(stream);
  VIGIL_RETURN_IF_ERROR(scratch.Allocate(offset));
  char* base = scratch.data();
  T* xw = reinterpret_cast<T*>(base + xw_at);
  float* hr = reinterpret_cast<float*>(base + hr_at);
  float* hr2 = reinterpret_cast<float*>(base + hr2_at);
  float* rh = reinterpret_cast<float*>(base + rh_at);
  float* r1 = reinterpret_cast<float*>(base + r1_at);
  float* r2 = reinterpret_cast<float*>(base + r2_at);
  float* hf = reinterpret_cast<float*>(base + hf_at);
  float* cf = reinterpret_cast<float*>(base + cf_at);

  const T* x = static_cast<const T*>(ctx.input(0)->raw_data());
  const T* w = static_cast<const T*>(ctx.input(1)->raw_data());
  const T* r = static_cast<const T*>(ctx.input(2)->raw_data());
  auto optional = [&](size_t i) -> const T* {
    return ctx.has_input(i) ? static_cast<const T*>(ctx.input(i)->raw_data()) : nullptr;
  };
  const bool lstm = spec.cell == kLstm;

  InitStateKernel<T><<<BlocksFor(state), 256, 0, stream>>>(optional(5), lstm ? optional(6) : nullptr, hf,
                                                           lstm ? cf : nullptr, state_stride, nd, batch, hs,
                                                           static_cast<int>(spec.layout));
  VIGIL_CHECK_LAUNCH("RecurrentInitState");
  ConvertRKernel<T><<<BlocksFor(nd * gh * hs), 256, 0, stream>>>(r, r1, r1_stride, r2, r2_stride, nd, gh, hs, n1);
  VIGIL_CHECK_LAUNCH("RecurrentConvertR");

  // The input projection of every step and direction.
  if (rows > 0) {
    if (dims.input == 0) {
      VIGIL_CUDA_CALL(cudaMemsetAsync(xw, 0, static_cast<size_t>(rows * nd * gh) * sizeof(T), stream));
    } else {
      VIGIL_RETURN_IF_ERROR(RowMajorGemm(ctx, dtype, rows, nd * gh, dims.input, x, false, w, true, xw, 1.0f, 0.0f));
    }
  }

  StepParams p;
  p.seq = seq;
  p.batch = batch;
  p.hidden = hs;
  p.num_dir = nd;
  p.gates = spec.gates;
  p.state_stride = state_stride;
  p.hr_stride = hr_stride;
  p.layout = static_cast<int>(spec.layout);
  p.reverse = spec.reverse ? 1 : 0;
  if (ctx.has_input(4)) {
    p.lens = ctx.input(4)->raw_data();
    p.lens64 = ctx.input(4)->dtype() == DataType::kInt64 ? 1 : 0;
  }
  p.has_clip = spec.has_clip ? 1 : 0;
  p.clip = spec.clip;
  p.input_forget = spec.input_forget ? 1 : 0;
  p.acts_per_dir = spec.acts_per_dir;
  for (int k = 0; k < kMaxActs; ++k) p.acts[k] = spec.acts[k];

  StepBuffers<T> buf;
  buf.xw = xw;
  buf.hr = hr;
  buf.hr2 = hr2;
  buf.bias = optional(3);
  buf.peep = lstm ? optional(7) : nullptr;
  buf.hf = hf;
  buf.cf = cf;
  buf.rh = rh;
  buf.y = outs[0] ? static_cast<T*>(outs[0]->raw_data()) : nullptr;
  // Positions past a sequence's length stay zero in Y.
  if (buf.y && p.lens && outs[0]->byte_size() > 0) {
    VIGIL_CUDA_CALL(cudaMemsetAsync(buf.y, 0, outs[0]->byte_size(), stream));
  }

  const int cell = static_cast<int>(spec.cell), lbr = spec.linear_before_reset ? 1 : 0;
  constexpr DataType kF32 = DataType::kFloat32;
  for (int64_t s = 0; s < seq; ++s) {
    for (int64_t d = 0; d < nd; ++d) {
      VIGIL_RETURN_IF_ERROR(RowMajorGemm(ctx, kF32, batch, n1, hs, hf + d * state_stride, false, r1 + d * r1_stride,
                                         true, hr + d * hr_stride, 1.0f, 0.0f));
    }
    if (gru0) {
      CellStepKernel<T><<<BlocksFor(state), 256, 0, stream>>>(p, buf, cell, lbr, 0, s);
      VIGIL_CHECK_LAUNCH("RecurrentGruReset");
      for (int64_t d = 0; d < nd; ++d) {
        VIGIL_RETURN_IF_ERROR(RowMajorGemm(ctx, kF32, batch, hs, hs, rh + d * state_stride, false,
                                           r2 + d * r2_stride, true, hr2 + d * state_stride, 1.0f, 0.0f));
      }
    }
    CellStepKernel<T><<<BlocksFor(state), 256, 0, stream>>>(p, buf, cell, lbr, 1, s);
    VIGIL_CHECK_LAUNCH("RecurrentCellStep");
  }

  if (outs[1]) {
    StoreStateKernel<T><<<BlocksFor(state), 256, 0, stream>>>(hf, state_stride, static_cast<T*>(outs[1]->raw_data()),
                                                              nd, batch, hs, static_cast<int>(spec.layout));
    VIGIL_CHECK_LAUNCH("RecurrentStoreH");
  }
  if (outs[2]) {
    StoreStateKernel<T><<<BlocksFor(state), 256, 0, stream>>>(cf, state_stride, static_cast<T*>(outs[2]->raw_data()),
                                                              nd, batch, hs, static_cast<int>(spec.layout));
    VIGIL_CHECK_LAUNCH("RecurrentStoreC");
  }
  return scratch.Free();
}

Status CheckShape(const CudaKernelContext& ctx, size_t i, const char* name, const std::vector<int64_t>& want) {
  const runtime::Tensor* t = ctx.input(i);
  if (t->shape() != want) {
    runtime::Tensor expected = runtime::Tensor::View(t->dtype(), want, nullptr);
    return ctx.Fail("input {} ({}) is {}, expected {}", i, name, t->Describe(), expected.Describe());
  }
  return Status::Ok();
}

Status Recurrent(CudaKernelContext& ctx, Cell cell) {
  Spec spec;
  VIGIL_RETURN_IF_ERROR(ParseSpec(ctx.node(), cell, ctx.opset() >= 14, &spec));
  const runtime::Tensor* x = ctx.input(0);
  const runtime::Tensor* w = ctx.input(1);
  const runtime::Tensor* r = ctx.input(2);
  if (!x || !w || !r) return ctx.Fail("inputs X, W and R are required");
  if (x->rank() != 3) return ctx.Fail("input 0 (X) is {}, expected rank 3", x->Describe());
  if (r->rank() != 3) return ctx.Fail("input 2 (R) is {}, expected rank 3", r->Describe());
  const DataType dtype = x->dtype();
  if (!IsCudaFloat(dtype)) return ctx.Unsupported("dtype {} of input 0", ir::DataTypeName(dtype));
  Dims dims;
  dims.seq = x->dim(spec.layout == 0 ? 0 : 1);
  dims.batch = x->dim(spec.layout == 0 ? 1 : 0);
  dims.input = x->dim(2);
  dims.hidden = r->dim(2);
  VIGIL_ASSIGN_OR_RETURN(int64_t hidden_attr, ops::IntAttr(ctx.node(), "hidden_size", dims.hidden));
  if (hidden_attr != dims.hidden) {
    return ctx.Fail("hidden_size is {} but R ({}) implies {}", hidden_attr, r->Describe(), dims.hidden);
  }
  const int64_t nd = spec.num_dir, gh = spec.gates * dims.hidden;
  const bool lstm = cell == kLstm;
  VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 1, "W", {nd, gh, dims.input}));
  VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 2, "R", {nd, gh, dims.hidden}));
  if (ctx.has_input(3)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 3, "B", {nd, 2 * gh}));
  if (ctx.has_input(4)) {
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 4, "sequence_lens", {dims.batch}));
    const DataType lt = ctx.input(4)->dtype();
    if (lt != DataType::kInt32 && lt != DataType::kInt64) {
      return ctx.Unsupported("dtype {} of input 4 (sequence_lens)", ir::DataTypeName(lt));
    }
  }
  const std::vector<int64_t> state_shape = spec.layout == 0 ? std::vector<int64_t>{nd, dims.batch, dims.hidden}
                                                            : std::vector<int64_t>{dims.batch, nd, dims.hidden};
  if (ctx.has_input(5)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 5, "initial_h", state_shape));
  if (lstm && ctx.has_input(6)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 6, "initial_c", state_shape));
  if (lstm && ctx.has_input(7)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 7, "P", {nd, 3 * dims.hidden}));
  const size_t last_input = lstm ? 7 : 5;
  for (size_t i = 0; i <= last_input && i < ctx.num_inputs(); ++i) {
    if (i == 4 || !ctx.has_input(i)) continue;
    if (ctx.input(i)->dtype() != dtype) {
      return ctx.Fail("input {} has dtype {}, expected {} like X", i, ir::DataTypeName(ctx.input(i)->dtype()),
                      ir::DataTypeName(dtype));
    }
  }

  std::vector<runtime::Tensor*> outs(3, nullptr);
  if (ctx.output_wanted(0)) {
    std::vector<int64_t> shape = spec.layout == 0 ? std::vector<int64_t>{dims.seq, nd, dims.batch, dims.hidden}
                                                  : std::vector<int64_t>{dims.batch, dims.seq, nd, dims.hidden};
    VIGIL_ASSIGN_OR_RETURN(outs[0], ctx.Output(0, dtype, shape));
  }
  for (size_t o = 1; o <= (lstm ? 2u : 1u); ++o) {
    if (!ctx.output_wanted(o)) continue;
    VIGIL_ASSIGN_OR_RETURN(outs[o], ctx.Output(o, dtype, state_shape));
  }
  if (nd * dims.batch * dims.hidden == 0) return Status::Ok();  // every output is empty

  switch (dtype) {
    case DataType::kFloat16: return Launch<__half>(ctx, spec, dims, dtype, outs);
    case DataType::kBfloat16: return Launch<__nv_bfloat16>(ctx, spec, dims, dtype, outs);
    default: return Launch<float>(ctx, spec, dims, dtype, outs);
  }
}

Status RnnKernel(CudaKernelContext& ctx) { return Recurrent(ctx, kRnn); }
Status GruKernel(CudaKernelContext& ctx) { return Recurrent(ctx, kGru); }
Status LstmKernel(CudaKernelContext& ctx) { return Recurrent(ctx, kLstm); }

bool SupportsRecurrent(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not, Cell cell) {
  Spec spec;
  // layout is validated here whatever the opset (an opset < 14 node has none).
  if (Status st = ParseSpec(node, cell, true, &spec); !st.ok()) {
    if (why_not) *why_not = st.summary();
    return false;
  }
  const size_t last_input = cell == kLstm ? 7 : 5;
  if (node.inputs.size() < 3 || node.inputs[0].empty() || node.inputs[1].empty() || node.inputs[2].empty()) {
    if (why_not) *why_not = "inputs X, W and R are required";
    return false;
  }
  const DataType xt = InputDtype(types, 0);
  if (!IsCudaFloat(xt)) {
    if (why_not) {
      *why_not = xt == DataType::kUndefined ? "the dtype of input 0 is not known at load time"
                                            : fmt::format("dtype {} of input 0", ir::DataTypeName(xt));
    }
    return false;
  }
  for (size_t i = 1; i < node.inputs.size() && i <= last_input; ++i) {
    if (node.inputs[i].empty()) continue;
    const DataType t = InputDtype(types, i);
    const bool ok = i == 4 ? (t == DataType::kInt32 || t == DataType::kInt64) : t == xt;
    if (!ok) {
      if (why_not) {
        *why_not = t == DataType::kUndefined ? fmt::format("the dtype of input {} is not known at load time", i)
                                             : fmt::format("dtype {} of input {}", ir::DataTypeName(t), i);
      }
      return false;
    }
  }
  return true;
}

bool SupportsRnn(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return SupportsRecurrent(n, t, w, kRnn);
}
bool SupportsGru(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return SupportsRecurrent(n, t, w, kGru);
}
bool SupportsLstm(const ir::Node& n, const runtime::NodeTypes& t, std::string* w) {
  return SupportsRecurrent(n, t, w, kLstm);
}

}  // namespace

std::span<const CudaKernelDef> RecurrentCudaKernels() {
  static const CudaKernelDef kDefs[] = {
      {"", "RNN", 7, kLatest, RnnKernel, SupportsRnn, 0},
      {"", "GRU", 7, kLatest, GruKernel, SupportsGru, 0},
      {"", "LSTM", 7, kLatest, LstmKernel, SupportsLstm, 0},
  };
  return kDefs;
}

}  // namespace vigil::cuda
