// float32 2D convolutions through oneDNN (loaded at run time,
// dnnl_library.h). The reference is ConvCompute in conv.cpp (im2col and a
// matrix product); ConvDnnl takes a case only where oneDNN has an
// implementation for it, and says "not taken" otherwise.
//
// An NCHW convolution (ONNX Conv) lets oneDNN pick the layouts it computes
// in (format "any"); X is reordered into it and Y back, which costs less
// than the faster kernels gain, except for 1x1 stride-1 convolutions, which
// read NCHW as a matrix product best. A channels-last one (ai.vigil.ConvNhwc,
// which the session's layout pass writes where this file takes it) computes
// in NHWC as it is, with no reorder, and its residual Add and Relu/Clip(0,
// 6) run inside the convolution as oneDNN post-ops. oneDNN 2.6's relu and
// clip turn NaN into 0, where ONNX keeps it, so the activation is fused only
// where the sum cannot be NaN: X (and Z) all finite and no partial sum able
// to overflow (SurelyFinite, one read of X); otherwise the convolution runs
// without it and a NaN-keeping pass over Y applies it. Constant weights are
// reordered once per session (KernelCache).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/kernel_cache.h"
#include "backends/cpu/gemm.h"

namespace vigil::cpu::fast {

#if defined(VIGIL_HAVE_DNNL_HEADERS)
namespace {

// 64-byte aligned bytes (oneDNN's blocked layouts read them with vector loads).
struct AlignedBytes {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data;
  size_t size = 0;
  static AlignedBytes Make(size_t n) {
    AlignedBytes b;
    b.size = n;
    if (n) b.data.reset(std::aligned_alloc(64, (n + 63) / 64 * 64));
    return b;
  }
};

// The memory objects one run of a plan uses, by role, made on first use and
// pointed at each later run's buffers (dnnl_memory_set_data_handle_v2).
// Made and destroyed per run, they cost a malloc and a free each: about 8%
// of a small MobileNetV2's run at one thread.
enum MemoryRole { kUserSrc, kSrc, kUserWeights, kWeights, kDst, kUserDst, kScratch, kBias, kZ, kRoles };
struct RunMemories {
  const DnnlApi* api = nullptr;
  std::array<dnnl_memory_t, kRoles> m{};
  std::array<const void*, kRoles> data{};  // the buffer each points at now
  explicit RunMemories(const DnnlApi* a) : api(a) {}
  RunMemories(const RunMemories&) = delete;
  RunMemories& operator=(const RunMemories&) = delete;
  ~RunMemories() {
    for (dnnl_memory_t x : m) {
      if (x) api->dnnl_memory_destroy(x);
    }
  }
};

// One convolution shape made into primitives.
struct ConvPlan {
  const DnnlApi* api = nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t conv = nullptr;
  dnnl_memory_desc_t user_src{}, user_weights{}, user_dst{}, bias{};  // as the node holds them
  dnnl_memory_desc_t src{}, weights{}, dst{}, scratch{};
  dnnl_primitive_t src_in = nullptr, weights_in = nullptr, dst_out = nullptr;  // reorders, where needed
  bool has_bias = false;
  bool has_z = false;  // a binary-add post-op reads Z (laid out as user_dst)
  std::string impl;
  // Idle RunMemories, one per run in flight at most: a run takes one (or
  // makes one) and gives it back.
  mutable std::mutex idle_mu;
  mutable std::vector<std::unique_ptr<RunMemories>> idle;

  ~ConvPlan() {
    for (dnnl_primitive_t p : {conv, src_in, weights_in, dst_out}) {
      if (p) api->dnnl_primitive_destroy(p);
    }
    if (pd) api->dnnl_primitive_desc_destroy(pd);
  }
};

// A buffer that grows to the largest size asked of it and is reused.
struct GrowingBuffer {
  AlignedBytes bytes;
  Result<void*> Reserve(size_t n, const char* what) {
    if (n > bytes.size) {
      bytes = AlignedBytes{};
      bytes = AlignedBytes::Make(n);
      if (!bytes.data) {
        bytes = AlignedBytes{};
        return OutOfMemoryError("oneDNN convolution: no memory for {} ({} bytes)", what, n);
      }
    }
    return bytes.data.get();
  }
};
// One thread's buffers for the convolutions it runs, one at a time.
struct RunBuffers {
  GrowingBuffer src, dst, scratch;
};

struct PackedWeights {
  AlignedBytes bytes;
  std::shared_ptr<const void> owner;  // keeps the constant (and its address) alive
};

// What identifies a plan: the problem's shape, its epilogue and the thread
// count. A plain array of numbers hashed as one, looked up for every
// convolution of every run (a formatted string key cost a fmt::format and
// string compares per run).
using PlanKey = std::array<int64_t, 23>;

PlanKey PlanKeyOf(const ConvProblem& p, int threads) {
  const SpatialGeometry& g = *p.g;
  return {p.batch,        p.in_channels,   p.out_channels,  p.group,          g.image[0],        g.image[1],
          g.columns[0],   g.columns[1],    g.kernel[0],     g.kernel[1],      g.strides[0],      g.strides[1],
          g.dilations[0], g.dilations[1],  g.pad_begin[0],  g.pad_begin[1],   g.pad_end[0],      g.pad_end[1],
          p.bias != nullptr, threads,      p.channels_last, p.z != nullptr,   static_cast<int64_t>(p.activation)};
}

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the numbers
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

}  // namespace

struct KernelCache::Impl {
  std::mutex mu;
  std::unordered_map<PlanKey, std::shared_ptr<const ConvPlan>, PlanKeyHash> plans;
  // (constant W, the plan whose layout it is packed in) -> the packed copy.
  std::map<std::pair<const void*, const ConvPlan*>, std::shared_ptr<const PackedWeights>> weights;
  // Constant W -> (its owner, kept alive; FilterAbsSum's value).
  std::map<const void*, std::pair<std::shared_ptr<const void>, double>> filter_abs_sums;
};

namespace {

// A reorder primitive from `from` to `to`; null where they are the same, and
// where oneDNN cannot make one (then *ok becomes false).
dnnl_primitive_t MakeReorder(const DnnlApi& api, const dnnl_memory_desc_t& from, const dnnl_memory_desc_t& to,
                             bool* ok) {
  if (api.dnnl_memory_desc_equal(&from, &to)) return nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t p = nullptr;
  if (api.dnnl_reorder_primitive_desc_create(&pd, &from, api.engine, &to, api.engine, nullptr) != dnnl_success ||
      api.dnnl_primitive_create(&p, pd) != dnnl_success) {
    *ok = false;
  }
  if (pd) api.dnnl_primitive_desc_destroy(pd);
  return p;
}

// The plan for problem `p` on `threads` threads, or null where oneDNN has no
// implementation for it (or refuses its arguments).
std::shared_ptr<const ConvPlan> MakePlan(const DnnlApi& api, const ConvProblem& p, int threads) {
  const SpatialGeometry& g = *p.g;
  auto plan = std::make_shared<ConvPlan>();
  plan->api = &api;
  plan->has_bias = p.bias != nullptr;
  const dnnl_dims_t src_dims = {p.batch, p.in_channels, g.image[0], g.image[1]};
  const dnnl_dims_t dst_dims = {p.batch, p.out_channels, g.columns[0], g.columns[1]};
  const dnnl_dims_t bias_dims = {p.out_channels};
  const int64_t cg = p.in_channels / p.group, mg = p.out_channels / p.group;
  const bool grouped = p.group > 1;
  const dnnl_dims_t w_dims_grouped = {p.group, mg, cg, g.kernel[0], g.kernel[1]};
  const dnnl_dims_t w_dims = {p.out_channels, cg, g.kernel[0], g.kernel[1]};
  const dnnl_dims_t strides = {g.strides[0], g.strides[1]};
  const dnnl_dims_t dilates = {g.dilations[0] - 1, g.dilations[1] - 1};
  const dnnl_dims_t pad_l = {g.pad_begin[0], g.pad_begin[1]};
  const dnnl_dims_t pad_r = {g.pad_end[0], g.pad_end[1]};
  const bool pointwise = g.kernel[0] == 1 && g.kernel[1] == 1 && g.strides[0] == 1 && g.strides[1] == 1 &&
                         g.pad_begin[0] == 0 && g.pad_begin[1] == 0 && g.pad_end[0] == 0 && g.pad_end[1] == 0;
  // Channels-last activations are computed in as they are; NCHW ones in
  // oneDNN's choice, except pointwise ones (see the top of the file).
  const dnnl_format_tag_t user_act = p.channels_last ? dnnl_nhwc : dnnl_nchw;
  const dnnl_format_tag_t act = p.channels_last ? dnnl_nhwc : pointwise ? dnnl_nchw : dnnl_format_tag_any;
  // W's strides over oneDNN's dims ([g,] o, i, h, w): OIHW, or KRSC (o, h,
  // w, i) for channels-last, with the group outermost.
  const int64_t kh = g.kernel[0], kw = g.kernel[1];
  const dnnl_dims_t w_strides = {cg * kh * kw, p.channels_last ? 1 : kh * kw, p.channels_last ? kw * cg : kw,
                                 p.channels_last ? cg : 1};
  const dnnl_dims_t w_strides_grouped = {mg * w_strides[0], w_strides[0], w_strides[1], w_strides[2], w_strides[3]};
  dnnl_memory_desc_t src_any, w_any, dst_any;
  bool ok = api.dnnl_memory_desc_init_by_tag(&plan->user_src, 4, src_dims, dnnl_f32, user_act) == dnnl_success &&
            api.dnnl_memory_desc_init_by_tag(&plan->user_dst, 4, dst_dims, dnnl_f32, user_act) == dnnl_success &&
            api.dnnl_memory_desc_init_by_strides(&plan->user_weights, grouped ? 5 : 4,
                                                 grouped ? w_dims_grouped : w_dims, dnnl_f32,
                                                 grouped ? w_strides_grouped : w_strides) == dnnl_success &&
            api.dnnl_memory_desc_init_by_tag(&plan->bias, 1, bias_dims, dnnl_f32, dnnl_a) == dnnl_success &&
            api.dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, dnnl_f32, act) == dnnl_success &&
            api.dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dnnl_f32, act) == dnnl_success &&
            api.dnnl_memory_desc_init_by_tag(&w_any, grouped ? 5 : 4, grouped ? w_dims_grouped : w_dims, dnnl_f32,
                                             dnnl_format_tag_any) == dnnl_success;
  if (!ok) return nullptr;
  dnnl_convolution_desc_t desc;
  if (api.dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &src_any,
                                                     &w_any, plan->has_bias ? &plan->bias : nullptr, &dst_any,
                                                     strides, dilates, pad_l, pad_r) != dnnl_success) {
    return nullptr;
  }
  dnnl_primitive_attr_t attr = nullptr;
  if (api.dnnl_primitive_attr_create(&attr) != dnnl_success) return nullptr;
  // The scratchpad comes with each run, so that runs on several threads
  // can share one primitive.
  ok = api.dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
  plan->has_z = p.z != nullptr;
  if (ok && (plan->has_z || p.activation != ConvActivation::kNone)) {
    dnnl_post_ops_t post = nullptr;
    ok = api.dnnl_post_ops_create(&post) == dnnl_success;
    // Y = conv + B, then + Z, then clip_v2 (0, inf) for Relu or (0, 6):
    // only for sums that are surely finite (see the top of the file).
    if (ok && plan->has_z) ok = api.dnnl_post_ops_append_binary(post, dnnl_binary_add, &plan->user_dst) == dnnl_success;
    if (ok && p.activation != ConvActivation::kNone) {
      const float hi = p.activation == ConvActivation::kRelu6 ? 6.0f : std::numeric_limits<float>::infinity();
      ok = api.dnnl_post_ops_append_eltwise(post, 1.0f, dnnl_eltwise_clip_v2, 0.0f, hi) == dnnl_success;
    }
    ok = ok && api.dnnl_primitive_attr_set_post_ops(attr, post) == dnnl_success;
    if (post) api.dnnl_post_ops_destroy(post);
  }
  api.omp_set_num_threads(threads);  // oneDNN plans for the threads it sees at creation
  ok = ok && api.dnnl_primitive_desc_create(&plan->pd, &desc, attr, api.engine, nullptr) == dnnl_success;
  api.dnnl_primitive_attr_destroy(attr);
  if (!ok) return nullptr;
  plan->src = *api.dnnl_primitive_desc_query_md(plan->pd, dnnl_query_src_md, 0);
  plan->weights = *api.dnnl_primitive_desc_query_md(plan->pd, dnnl_query_weights_md, 0);
  plan->dst = *api.dnnl_primitive_desc_query_md(plan->pd, dnnl_query_dst_md, 0);
  plan->scratch = *api.dnnl_primitive_desc_query_md(plan->pd, dnnl_query_scratchpad_md, 0);
  const char* impl = nullptr;
  if (api.dnnl_primitive_desc_query(plan->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) {
    plan->impl = impl;
  }
  ok = api.dnnl_primitive_create(&plan->conv, plan->pd) == dnnl_success;
  plan->src_in = MakeReorder(api, plan->user_src, plan->src, &ok);
  plan->weights_in = MakeReorder(api, plan->user_weights, plan->weights, &ok);
  plan->dst_out = MakeReorder(api, plan->dst, plan->user_dst, &ok);
  return ok ? plan : nullptr;
}

// One stream per thread: a CPU stream runs what it is given on the calling
// thread, and a stream is not to be shared between threads.
struct ThreadStream {
  const DnnlApi* api = nullptr;
  dnnl_stream_t stream = nullptr;
  ~ThreadStream() {
    if (stream) api->dnnl_stream_destroy(stream);
  }
};

Result<dnnl_stream_t> StreamOf(const DnnlApi& api) {
  thread_local ThreadStream s;
  if (!s.stream) {
    s.api = &api;
    dnnl_status_t st = api.dnnl_stream_create(&s.stream, api.engine, dnnl_stream_default_flags);
    if (st != dnnl_success) return InternalError("oneDNN: creating a CPU stream failed ({})", DnnlStatusName(st));
  }
  return s.stream;
}

Status Execute(const DnnlApi& api, dnnl_stream_t stream, dnnl_primitive_t p, std::span<const dnnl_exec_arg_t> args,
               const char* what) {
  dnnl_status_t s = api.dnnl_primitive_execute(p, stream, static_cast<int>(args.size()), args.data());
  if (s != dnnl_success) return InternalError("oneDNN: {} failed ({})", what, DnnlStatusName(s));
  return Status::Ok();
}

// A plan's RunMemories for the length of one run, given back at the end.
class MemoryLease {
 public:
  explicit MemoryLease(const ConvPlan& plan) : plan_(plan) {
    {
      std::lock_guard<std::mutex> lock(plan.idle_mu);
      if (!plan.idle.empty()) {
        held_ = std::move(plan.idle.back());
        plan.idle.pop_back();
      }
    }
    if (!held_) held_ = std::make_unique<RunMemories>(plan.api);
  }
  ~MemoryLease() {
    std::lock_guard<std::mutex> lock(plan_.idle_mu);
    plan_.idle.push_back(std::move(held_));
  }
  MemoryLease(const MemoryLease&) = delete;
  MemoryLease& operator=(const MemoryLease&) = delete;

  // The role's memory object (of `md`, the same for a role every run of the
  // plan) over `data`. Pointed again only when the buffer changed: setting
  // a handle also writes the zeros of a padded layout into the buffer, and
  // packed constant weights are shared by every run.
  Result<dnnl_memory_t> Over(MemoryRole role, const dnnl_memory_desc_t& md, const void* data, dnnl_stream_t stream) {
    const DnnlApi& api = *plan_.api;
    dnnl_memory_t& m = held_->m[role];
    if (m && held_->data[role] == data) return m;
    dnnl_status_t s = m ? api.dnnl_memory_set_data_handle_v2(m, const_cast<void*>(data), stream)
                        : api.dnnl_memory_create(&m, &md, api.engine, const_cast<void*>(data));
    if (s != dnnl_success) {
      held_->data[role] = nullptr;
      return InternalError("oneDNN: wrapping a buffer failed ({})", DnnlStatusName(s));
    }
    held_->data[role] = data;
    return m;
  }

 private:
  const ConvPlan& plan_;
  std::unique_ptr<RunMemories> held_;
};

// Reorder `p` from `from` (laid out as `from_md`) into `to` (as `to_md`), on
// the run's memory objects of the two roles.
Status Reorder(MemoryLease& run, const DnnlApi& api, dnnl_stream_t stream, dnnl_primitive_t p, MemoryRole from_role,
               const dnnl_memory_desc_t& from_md, const void* from, MemoryRole to_role,
               const dnnl_memory_desc_t& to_md, void* to) {
  VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t a, run.Over(from_role, from_md, from, stream));
  VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t b, run.Over(to_role, to_md, to, stream));
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, a}, {DNNL_ARG_TO, b}};
  return Execute(api, stream, p, args, "a reorder");
}

// Y = max(Y, 0), then min(Y, 6) for Relu6, NaN kept (a select on `v < 0`
// passes NaN through), over the channels-last Y in place.
void ApplyActivation(const ConvProblem& p) {
  if (p.activation == ConvActivation::kNone) return;
  const uint64_t n = static_cast<uint64_t>(p.batch) * p.out_channels * p.g->ColumnSize();
  const bool relu6 = p.activation == ConvActivation::kRelu6;
  ParallelFor(static_cast<int64_t>(n), kParallelGrain, [&](int64_t begin, int64_t end) {
    float* y = p.y + begin;
    if (!relu6) {
      ForEachIndexBlocked(end - begin, [&](int64_t i) { y[i] = y[i] < 0.0f ? 0.0f : y[i]; });
    } else {
      ForEachIndexBlocked(end - begin, [&](int64_t i) {
        const float v = y[i] < 0.0f ? 0.0f : y[i];
        y[i] = v > 6.0f ? 6.0f : v;
      });
    }
  });
}

}  // namespace

KernelCache::KernelCache() : impl_(std::make_unique<Impl>()) {}
KernelCache::~KernelCache() = default;
KernelCache::Counts KernelCache::counts() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return Counts{impl_->plans.size(), impl_->weights.size()};
}

namespace {

// Runs `p` (its activation, if any, as a post-op) on its plan, made on first
// use; false where oneDNN has no implementation for it.
Result<bool> RunPlanned(const DnnlApi* api, const ConvProblem& p, KernelCache* cache) {
  // oneDNN's OpenMP threads wait ready, so a convolution splits in smaller
  // pieces than a product that starts its own threads (gemm.h).
  const int threads = PoolThreadsFor(static_cast<double>(p.batch) * p.out_channels * p.g->ColumnSize() *
                                         (p.in_channels / p.group) * p.g->KernelSize(),
                                     kMinMacsPerPoolThread);
  const PlanKey key = PlanKeyOf(p, threads);
  std::shared_ptr<const ConvPlan> plan;
  if (cache) {
    std::lock_guard<std::mutex> lock(cache->impl().mu);
    auto it = cache->impl().plans.find(key);
    if (it != cache->impl().plans.end()) plan = it->second;
  }
  if (!plan) {
    plan = MakePlan(*api, p, threads);
    if (!plan) return false;  // oneDNN has nothing for this case: the reference runs it
    if (cache) {
      std::lock_guard<std::mutex> lock(cache->impl().mu);
      cache->impl().plans.emplace(key, plan);
    }
  }
  VIGIL_ASSIGN_OR_RETURN(dnnl_stream_t stream, StreamOf(*api));
  api->omp_set_num_threads(threads);
  MemoryLease run(*plan);

  // Weights in the plan's layout: packed once per session for a constant.
  const void* weights = p.w;
  std::shared_ptr<const PackedWeights> packed;
  AlignedBytes run_weights;
  if (plan->weights_in) {
    const bool constant = cache && p.w_tensor && p.w_tensor->is_constant() && p.w_tensor->storage();
    const std::pair<const void*, const ConvPlan*> wkey{p.w, plan.get()};
    if (constant) {
      std::lock_guard<std::mutex> lock(cache->impl().mu);
      auto it = cache->impl().weights.find(wkey);
      if (it != cache->impl().weights.end()) packed = it->second;
    }
    if (!packed) {
      AlignedBytes bytes = AlignedBytes::Make(api->dnnl_memory_desc_get_size(&plan->weights));
      if (bytes.size && !bytes.data) return OutOfMemoryError("oneDNN convolution: no memory for packed weights");
      VIGIL_RETURN_IF_ERROR(Reorder(run, *api, stream, plan->weights_in, kUserWeights, plan->user_weights, p.w, kWeights,
                                    plan->weights, bytes.data.get()));
      if (constant) {
        auto made = std::make_shared<PackedWeights>();
        made->bytes = std::move(bytes);
        made->owner = p.w_tensor->storage();
        std::lock_guard<std::mutex> lock(cache->impl().mu);
        packed = cache->impl().weights.emplace(wkey, std::move(made)).first->second;
      } else {
        run_weights = std::move(bytes);
      }
    }
    weights = packed ? packed->bytes.data.get() : run_weights.data.get();
  }

  // The reordered X and Y and the scratchpad live in this thread's buffers,
  // kept between calls: allocated per call, the large ones were new pages,
  // zeroed on first touch, every time (at 16 threads a MobileNetV2
  // convolution's scratchpad cost 20 times its computation).
  thread_local RunBuffers buffers;
  const void* src = p.x;
  if (plan->src_in) {
    VIGIL_ASSIGN_OR_RETURN(void* buf, buffers.src.Reserve(api->dnnl_memory_desc_get_size(&plan->src), "its input"));
    VIGIL_RETURN_IF_ERROR(Reorder(run, *api, stream, plan->src_in, kUserSrc, plan->user_src, p.x, kSrc, plan->src, buf));
    src = buf;
  }
  void* dst = p.y;
  if (plan->dst_out) {
    VIGIL_ASSIGN_OR_RETURN(dst, buffers.dst.Reserve(api->dnnl_memory_desc_get_size(&plan->dst), "its output"));
  }
  const size_t scratch_size = api->dnnl_memory_desc_get_size(&plan->scratch);
  void* scratch = nullptr;
  if (scratch_size) {
    VIGIL_ASSIGN_OR_RETURN(scratch, buffers.scratch.Reserve(scratch_size, "its scratchpad"));
  }
  VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t src_m, run.Over(kSrc, plan->src, src, stream));
  VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t w_m, run.Over(kWeights, plan->weights, weights, stream));
  VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t dst_m, run.Over(kDst, plan->dst, dst, stream));
  std::array<dnnl_exec_arg_t, 6> args = {};
  int nargs = 0;
  args[nargs++] = {DNNL_ARG_SRC, src_m};
  args[nargs++] = {DNNL_ARG_WEIGHTS, w_m};
  args[nargs++] = {DNNL_ARG_DST, dst_m};
  if (scratch_size) {
    VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t scratch_m, run.Over(kScratch, plan->scratch, scratch, stream));
    args[nargs++] = {DNNL_ARG_SCRATCHPAD, scratch_m};
  }
  if (plan->has_bias) {
    VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t b_m, run.Over(kBias, plan->bias, p.bias, stream));
    args[nargs++] = {DNNL_ARG_BIAS, b_m};
  }
  if (plan->has_z) {
    VIGIL_ASSIGN_OR_RETURN(dnnl_memory_t z_m, run.Over(kZ, plan->user_dst, p.z, stream));
    args[nargs++] = {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, z_m};
  }
  VIGIL_RETURN_IF_ERROR(Execute(*api, stream, plan->conv, std::span(args.data(), nargs), "the convolution"));
  if (plan->dst_out) {
    VIGIL_RETURN_IF_ERROR(Reorder(run, *api, stream, plan->dst_out, kDst, plan->dst, dst, kUserDst, plan->user_dst, p.y));
  }
  return true;
}

// The largest |v| over n floats, or +inf where one is NaN or infinite: 16
// lanes in GCC vector types, built for AVX-512, AVX2 and the baseline
// (target_clones), so that the scan runs at the memory's speed.
typedef float Floats16 __attribute__((vector_size(64)));
typedef int32_t Ints16 __attribute__((vector_size(64)));
__attribute__((target_clones("avx512f", "avx2", "default"))) double MaxAbsOrInf(const float* v, uint64_t n) {
  const Floats16 largest_finite = Floats16{} + std::numeric_limits<float>::max();
  const Ints16 magnitude = Ints16{} + 0x7fffffff;
  Floats16 m = {};
  Ints16 finite = Ints16{} - 1;  // all ones while every element is finite
  uint64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Ints16 bits;
    std::memcpy(&bits, v + i, sizeof bits);
    bits &= magnitude;  // |v|, NaN staying NaN
    Floats16 a;
    std::memcpy(&a, &bits, sizeof a);
    m = a > m ? a : m;
    finite &= a <= largest_finite;  // false for NaN and infinities
  }
  double result = 0;
  for (int j = 0; j < 16; ++j) {
    if (!finite[j]) return std::numeric_limits<double>::infinity();
    result = std::max(result, static_cast<double>(m[j]));
  }
  for (; i < n; ++i) {
    const float a = std::fabs(v[i]);
    if (!(a <= std::numeric_limits<float>::max())) return std::numeric_limits<double>::infinity();
    result = std::max(result, static_cast<double>(a));
  }
  return result;
}

// max over output channels m of sum |W[m, ...]| (each channel's filter is
// contiguous in both OIHW and KRSC), in double; kept per constant W.
double FilterAbsSum(const ConvProblem& p, KernelCache* cache) {
  const bool constant = cache && p.w_tensor && p.w_tensor->is_constant() && p.w_tensor->storage();
  if (constant) {
    std::lock_guard<std::mutex> lock(cache->impl().mu);
    auto it = cache->impl().filter_abs_sums.find(p.w);
    if (it != cache->impl().filter_abs_sums.end()) return it->second.second;
  }
  const uint64_t per_filter = static_cast<uint64_t>(p.in_channels / p.group) * p.g->KernelSize();
  double largest = 0;
  for (int64_t m = 0; m < p.out_channels; ++m) {
    double sum = 0;
    const float* w = p.w + m * per_filter;
    for (uint64_t i = 0; i < per_filter; ++i) sum += std::fabs(static_cast<double>(w[i]));
    if (std::isnan(sum)) {  // NaN weights: NaN, which fails SurelyFinite
      largest = sum;
      break;
    }
    largest = std::max(largest, sum);
  }
  if (constant) {
    std::lock_guard<std::mutex> lock(cache->impl().mu);
    cache->impl().filter_abs_sums.emplace(p.w, std::make_pair(p.w_tensor->storage(), largest));
  }
  return largest;
}

// MaxAbsOrInf over the pool's threads: 64 blocks, each scanned whole by one
// thread, then the largest.
double ParallelMaxAbsOrInf(const float* v, uint64_t n) {
  constexpr int64_t kBlocks = 64;
  if (n < static_cast<uint64_t>(2 * kParallelGrain)) return MaxAbsOrInf(v, n);
  double block_max[kBlocks];
  const uint64_t per = (n + kBlocks - 1) / kBlocks;
  ParallelFor(kBlocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const uint64_t from = std::min<uint64_t>(n, k * per), to = std::min<uint64_t>(n, from + per);
      block_max[k] = MaxAbsOrInf(v + from, to - from);
    }
  });
  return *std::max_element(block_max, block_max + kBlocks);
}

// Whether every sum conv(X, W) + B + Z can hold, in any order, is finite:
// X, B and Z finite, and max|X| * max_m sum|W[m]| + max|B| + max|Z| (a
// bound on every partial sum) well below FLT_MAX. Then a fused activation
// has no NaN to lose.
bool SurelyFinite(const ConvProblem& p, KernelCache* cache) {
  const double w = FilterAbsSum(p, cache);
  if (!(w <= std::numeric_limits<double>::max())) return false;
  const uint64_t nx = static_cast<uint64_t>(p.batch) * p.in_channels * p.g->ImageSize();
  double bound = ParallelMaxAbsOrInf(p.x, nx) * w;
  if (p.bias) bound += MaxAbsOrInf(p.bias, static_cast<uint64_t>(p.out_channels));
  if (p.z) bound += ParallelMaxAbsOrInf(p.z, static_cast<uint64_t>(p.batch) * p.out_channels * p.g->ColumnSize());
  return bound < 0.5 * std::numeric_limits<float>::max();
}

}  // namespace

Result<bool> ConvDnnl(const ConvProblem& p, KernelCache* cache) {
  if (p.g->rank() != 2) return false;
  if (!p.channels_last && (p.z || p.activation != ConvActivation::kNone)) return false;  // NHWC only
  const DnnlApi* api = Dnnl();
  if (!api) {
    if (cache) cache->NoteConvWithoutDnnl();
    return false;
  }
  if (p.activation != ConvActivation::kNone && SurelyFinite(p, cache)) {
    VIGIL_ASSIGN_OR_RETURN(bool done, RunPlanned(api, p, cache));
    if (done) return true;
  }
  // NaN possible (or the fused plan refused): the activation after the
  // convolution, keeping NaN.
  ConvProblem plain = p;
  plain.activation = ConvActivation::kNone;
  VIGIL_ASSIGN_OR_RETURN(bool done, RunPlanned(api, plain, cache));
  if (done) ApplyActivation(p);
  return done;
}

#else

struct KernelCache::Impl {};
KernelCache::KernelCache() : impl_(std::make_unique<Impl>()) {}
KernelCache::~KernelCache() = default;
KernelCache::Counts KernelCache::counts() const { return {}; }

Result<bool> ConvDnnl(const ConvProblem& p, KernelCache* cache) {
  if (cache && p.g->rank() == 2) cache->NoteConvWithoutDnnl();
  return false;
}

#endif

}  // namespace vigil::cpu::fast
