#include "backends/cuda/cuda_backend.h"

#include <cstdlib>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "backends/cuda/conv_gemm.h"
#include "backends/cuda/cudnn_log.h"
#include "backends/cuda/pinned_pool.h"
#include "backends/cuda/tuning_cache.h"
#include "ir/layout_nhwc.h"

namespace vigil::cuda {
namespace {

// Synchronise after every node (VIGIL_CUDA_SYNC=1) so that an asynchronous
// fault is reported at the node that caused it.
bool SyncEachNode() {
  const char* v = std::getenv("VIGIL_CUDA_SYNC");
  return v && v[0] == '1';
}

}  // namespace

// Blocks allocated while recording; freed (synchronously, after the graph
// and every tensor that shares them are gone) with the last reference.
struct CaptureMemory {
  int device = 0;
  std::vector<void*> blocks;
  std::shared_ptr<void> workspace;  // the workspace the recording used
  std::shared_ptr<void> operands;   // and its operand scratch (StreamContext)
  ~CaptureMemory() {
    cudaSetDevice(device);
    for (void* p : blocks) cudaFree(p);
  }
};

namespace {

// An instantiated CUDA graph and the memory its kernels use.
struct RecordedGraph {
  int device = 0;
  cudaGraphExec_t exec = nullptr;
  std::shared_ptr<CaptureMemory> memory;
  ~RecordedGraph() {
    cudaSetDevice(device);
    if (exec) cudaGraphExecDestroy(exec);
  }
};

class CudaBackend final : public runtime::Backend {
 public:
  explicit CudaBackend(const CudaOptions& options)
      : options_(options), sync_each_node_(options.sync_each_node || SyncEachNode()) {
    AcquireCudnnLogCapture();  // before the first cuDNN call, so that its messages are kept
  }

  ~CudaBackend() override {
    // Handles and streams belong to the backend and go before the module is
    // unloaded (never from a static destructor).
    cudaSetDevice(options_.device);
    for (auto& [id, c] : contexts_) {
      cudaStreamSynchronize(c->stream);
      c->workspace_owner.reset();
      c->operands_owner.reset();
      if (c->lt) cublasLtDestroy(c->lt);
      if (c->cudnn) cudnnDestroy(c->cudnn);
      cudaStreamSynchronize(c->stream);
      cudaStreamDestroy(c->stream);
    }
    ReleaseCudnnLogCapture();
  }

  Status Init() {
    VIGIL_CUDA_CALL(cudaSetDevice(options_.device));
    // Freed memory stays in the pool, so that each run's arena is a cheap
    // reuse rather than a new cudaMalloc.
    cudaMemPool_t pool;
    VIGIL_CUDA_CALL(cudaDeviceGetDefaultMemPool(&pool, options_.device));
    uint64_t keep = UINT64_MAX;
    VIGIL_CUDA_CALL(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    VIGIL_RETURN_IF_ERROR(OpenTuningCache());
    return Context().status();
  }

  Result<runtime::Tensor> AllocateHost(ir::DataType dtype, std::vector<int64_t> shape) const override {
    return pinned_->Allocate(dtype, std::move(shape));
  }

  // What the backend did that a user may want to know (the tuning cache).
  std::vector<std::string> Notes() const override {
    std::vector<std::string> notes;
    if (tuning_cache_) notes.push_back(tuning_cache_->Summary());
    if (std::string measured = first_run_measures_.Summary(); !measured.empty()) notes.push_back(std::move(measured));
    if (std::string compiled = first_run_measures_.CompiledSummary(); !compiled.empty()) {
      notes.push_back(std::move(compiled));
    }
    return notes;
  }

  std::string_view name() const override { return "cuda"; }
  runtime::Device device() const override { return runtime::Device::kCuda; }

  bool Supports(const ir::Node& node, int64_t opset) const override {
    return FindCudaKernel(node.domain, node.op_type, opset) != nullptr;
  }

  bool SupportsTyped(const ir::Node& node, int64_t opset, const runtime::NodeTypes& types,
                     std::string* why_not) const override {
    const CudaKernelDef* def = FindCudaKernel(node.domain, node.op_type, opset);
    if (!def) {
      if (why_not) *why_not = fmt::format("the CUDA backend has no kernel for {} at opset {}", node.op_type, opset);
      return false;
    }
    if (def->supports && !def->supports(node, types, why_not)) return false;
    return !def->worth_it || def->worth_it(options_, types, why_not);
  }

  bool PrefersChannelsLast(const ir::Node& node, int64_t opset, const runtime::NodeTypes& types) const override {
    if (!SupportsTyped(node, opset, types, nullptr)) return false;
    return node.domain != ir::kVigilDomain || node.op_type != ir::kConvNhwcOp ||
           ConvNhwcPrefersChannelsLast(options_, node, types);
  }

  bool InputOnHost(const ir::Node& node, int64_t opset, size_t i) const override {
    const CudaKernelDef* def = FindCudaKernel(node.domain, node.op_type, opset);
    return def && i < 32 && ((def->host_inputs >> i) & 1);
  }

  Status Run(const ir::Node& node, int64_t opset, std::span<const runtime::Tensor* const> inputs,
             std::vector<runtime::Tensor>& outputs, runtime::OutputAllocator& allocator) const override {
    VIGIL_RETURN_IF_ERROR(StickyError());
    const CudaKernelDef* def = FindCudaKernel(node.domain, node.op_type, opset);
    if (!def) {
      return UnsupportedError("{}: the CUDA backend has no kernel for {} at opset {}", ops::NodeLabel(node),
                              node.op_type, opset);
    }
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    outputs.assign(node.outputs.size(), runtime::Tensor());
    CudaKernelContext ctx(node, opset, inputs, outputs, allocator, *c, options_);
    VIGIL_RETURN_IF_ERROR(def->fn(ctx));
    if (sync_each_node_) {
      VIGIL_CUDA_CALL(cudaStreamSynchronize(c->stream));
      VIGIL_CHECK_LAUNCH(node.op_type.c_str());
    }
    return Status::Ok();
  }

  Result<runtime::Tensor> AllocateDevice(ir::DataType dtype, std::vector<int64_t> shape) const override {
    VIGIL_RETURN_IF_ERROR(StickyError());
    auto count = runtime::ElementCount(shape);
    auto bytes = count ? ir::DataTypeStorageBytes(dtype, *count) : std::nullopt;
    if (!bytes) return InvalidInputError("cannot allocate a device tensor of dtype {} with this shape", ir::DataTypeName(dtype));
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    void* p = nullptr;
    size_t size = *bytes == 0 ? 256 : static_cast<size_t>(*bytes);
    if (c->capture) return AllocateWhileRecording(*c, dtype, std::move(shape), size);
    cudaError_t e = cudaMallocAsync(&p, size, c->stream);
    if (e != cudaSuccess) {
      Status s = CudaCallFailed(e, {"cudaMallocAsync", __FILE__, __LINE__});
      return s.WithFact("requested", fmt::format("{} bytes for {}[{} elements]", size, ir::DataTypeName(dtype), *count));
    }
    cudaStream_t stream = c->stream;
    std::shared_ptr<const void> owner(p, [stream](const void* q) { cudaFreeAsync(const_cast<void*>(q), stream); });
    return runtime::Tensor::OnDevice(runtime::Device::kCuda, dtype, std::move(shape), p, std::move(owner));
  }

  Result<runtime::Tensor> ToDevice(const runtime::Tensor& host) const override {
    if (!host.on_host()) return InternalError("ToDevice: {} is already on the device", host.Describe());
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor d, AllocateDevice(host.dtype(), host.shape()));
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    if (host.byte_size()) {
      VIGIL_CUDA_CALL(cudaMemcpyAsync(d.raw_data(), host.raw_data(), host.byte_size(), cudaMemcpyHostToDevice, c->stream));
    }
    return d;
  }

  Status CopyInto(const runtime::Tensor& src, const runtime::Tensor& dst) const override {
    if (dst.on_host()) return InternalError("CopyInto: {} is not on the device", dst.Describe());
    if (src.byte_size() != dst.byte_size()) {
      return InternalError("CopyInto: {} does not fit {}", src.Describe(), dst.Describe());
    }
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    if (src.byte_size()) {
      VIGIL_CUDA_CALL(cudaMemcpyAsync(const_cast<void*>(dst.raw_data()), src.raw_data(), src.byte_size(),
                                      src.on_host() ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToDevice, c->stream));
    }
    return Status::Ok();
  }

  // Relaxed mode: blocks for outputs outside the arena are cudaMalloc'ed
  // while recording (they must outlive the recording at fixed addresses).
  Status BeginCapture() const override {
    VIGIL_RETURN_IF_ERROR(StickyError());
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    if (c->capture) return InternalError("this thread is already recording a CUDA graph");
    auto memory = std::make_shared<CaptureMemory>();
    memory->device = options_.device;
    memory->workspace = c->workspace_owner;
    memory->operands = c->operands_owner;
    VIGIL_CUDA_CALL(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeRelaxed));
    c->capture = std::move(memory);
    return Status::Ok();
  }

  Result<std::shared_ptr<const void>> EndCapture() const override {
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    auto graph = std::make_shared<RecordedGraph>();
    graph->device = options_.device;
    graph->memory = std::move(c->capture);
    c->capture = nullptr;
    cudaGraph_t recorded = nullptr;
    cudaError_t e = cudaStreamEndCapture(c->stream, &recorded);
    cudaGetLastError();  // a failed recording leaves a per-thread error behind; it is reported here
    if (e != cudaSuccess) {
      if (recorded) cudaGraphDestroy(recorded);
      return CudaCallFailed(e, {"cudaStreamEndCapture(stream, &graph)", __FILE__, __LINE__});
    }
    e = cudaGraphInstantiateWithFlags(&graph->exec, recorded, 0);
    cudaGraphDestroy(recorded);
    if (e != cudaSuccess) return CudaCallFailed(e, {"cudaGraphInstantiateWithFlags(&exec, graph, 0)", __FILE__, __LINE__});
    VIGIL_CUDA_CALL(cudaGraphUpload(graph->exec, c->stream));
    return std::shared_ptr<const void>(graph, graph.get());
  }

  Status Replay(const void* graph) const override {
    VIGIL_RETURN_IF_ERROR(StickyError());
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    VIGIL_CUDA_CALL(cudaGraphLaunch(static_cast<const RecordedGraph*>(graph)->exec, c->stream));
    if (sync_each_node_) VIGIL_CUDA_CALL(cudaStreamSynchronize(c->stream));
    return Status::Ok();
  }

  Result<runtime::Tensor> ToHost(const runtime::Tensor& dev) const override {
    if (dev.on_host()) return InternalError("ToHost: {} is already on the host", dev.Describe());
    // Page-locked, so that the copy engine writes it directly.
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor h, pinned_->Allocate(dev.dtype(), dev.shape()));
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    if (dev.byte_size()) {
      VIGIL_CUDA_CALL(cudaMemcpyAsync(h.raw_data(), dev.raw_data(), dev.byte_size(), cudaMemcpyDeviceToHost, c->stream));
    }
    VIGIL_CUDA_CALL(cudaStreamSynchronize(c->stream));
    return h;
  }

  Status CheckPointer(const void* data, size_t bytes, runtime::Device claimed, int device_id,
                      const std::string& what) const override {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, data) != cudaSuccess) {
      cudaGetLastError();  // not sticky; clear it
      return Status::Ok();  // cannot tell: leave it to the copy's own check
    }
    const bool device_memory = a.type == cudaMemoryTypeDevice;
    if (a.type == cudaMemoryTypeManaged) return Status::Ok();  // reachable from both
    if (claimed == runtime::Device::kHost && device_memory) {
      return InvalidInputError("{} was given as host memory, but its pointer is device memory of CUDA device {}", what,
                               a.device)
          .WithFact("pointer", fmt::format("{}", data))
          .WithCause("a GPU tensor's data pointer was passed as a host buffer")
          .WithFix("describe the buffer as device memory (VIGIL_MEMORY_CUDA; in Python bind it through "
                   "io_binding or pass the GPU tensor itself), or copy it to the host first");
    }
    if (claimed != runtime::Device::kHost && !device_memory) {
      return InvalidInputError("{} was given as device memory, but its pointer is {} host memory", what,
                               a.type == cudaMemoryTypeHost ? "page-locked" : "ordinary")
          .WithFact("pointer", fmt::format("{}", data))
          .WithFix("describe the buffer as host memory (VIGIL_MEMORY_HOST)");
    }
    if (device_memory && (a.device != options_.device || device_id != options_.device)) {
      return InvalidInputError("{} is memory of CUDA device {}, but this session runs on device {}", what, a.device,
                               options_.device)
          .WithFix(fmt::format("move the tensor to device {} (or create the session with device_id {})",
                               options_.device, a.device));
    }
    return Status::Ok();
  }

  Status WaitForStream(void* stream) const override {
    VIGIL_RETURN_IF_ERROR(StickyError());
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    cudaEvent_t done = nullptr;
    VIGIL_CUDA_CALL(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    cudaError_t e = cudaEventRecord(done, static_cast<cudaStream_t>(stream));
    if (e == cudaSuccess) e = cudaStreamWaitEvent(c->stream, done, 0);
    cudaEventDestroy(done);  // released once the wait has been satisfied
    if (e != cudaSuccess) return CudaCallFailed(e, {"cudaStreamWaitEvent(run stream, caller's stream)", __FILE__, __LINE__});
    return Status::Ok();
  }

  Status Synchronize() const override {
    VIGIL_RETURN_IF_ERROR(StickyError());
    VIGIL_ASSIGN_OR_RETURN(StreamContext * c, Context());
    VIGIL_CUDA_CALL(cudaStreamSynchronize(c->stream));
    return Status::Ok();
  }

  Status CheckDeviceMemory(uint64_t planned, const std::string& largest) const override {
    size_t free_bytes = 0, total = 0;
    VIGIL_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total));
    uint64_t limit = free_bytes;
    std::string what = "free device memory";
    if (options_.memory_limit && options_.memory_limit < limit) {
      limit = options_.memory_limit;
      what = "the --gpu-mem-limit";
    }
    // The pool may already hold a previous run's arena: count what it keeps.
    cudaMemPool_t pool;
    uint64_t reserved = 0, used = 0;
    if (cudaDeviceGetDefaultMemPool(&pool, options_.device) == cudaSuccess) {
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    }
    if (what == "free device memory") limit += reserved - used;
    if (planned <= limit) return Status::Ok();
    double fit = static_cast<double>(limit) / static_cast<double>(planned);
    return std::move(
        OutOfMemoryError("the run needs {:.1f} MB of device memory, more than {} ({:.1f} MB)", planned / 1e6, what,
                         limit / 1e6)
            .WithFact("planned device memory", fmt::format("{} bytes (arena by liveness + outputs)", planned))
            .WithFact("limit", fmt::format("{} bytes ({})", limit, what))
            .WithFact("device", fmt::format("{} of {:.1f} GB free", free_bytes, total / 1e9))
            .WithFact("largest tensors", largest)
            .WithCause("the batch or the input size is too large for this GPU",
                       fmt::format("activations scale with the batch: about {:.2f}x the current batch would fit", fit))
            .WithFix(fmt::format("run with a batch of at most ~{:.0f}% of the current one", fit * 100))
            .WithFix("free the GPU from other processes (nvidia-smi)"));
  }

 private:
  // The calling thread's stream and handles, created on first use. The
  // first (in Init) is created before any other thread can ask.
  Result<StreamContext*> Context() const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto id = std::this_thread::get_id();
    auto it = contexts_.find(id);
    if (it != contexts_.end()) {
      cudaSetDevice(options_.device);
      return it->second.get();
    }
    auto c = std::make_unique<StreamContext>();
    VIGIL_CUDA_CALL(cudaSetDevice(options_.device));
    VIGIL_CUDA_CALL(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    cudnnStatus_t st = cudnnCreate(&c->cudnn);
    if (st != CUDNN_STATUS_SUCCESS) {
      cudaStreamDestroy(c->stream);
      return CudnnCallFailed(st, {"cudnnCreate(&handle)", __FILE__, __LINE__});
    }
    VIGIL_CUDNN_CALL(cudnnSetStream(c->cudnn, c->stream));
    VIGIL_CUBLAS_CALL(cublasLtCreate(&c->lt));
    c->tuning = TuningPolicy{tuning_cache_.get(), options_.tune, &first_run_measures_};
    StreamContext* raw = c.get();
    contexts_.emplace(id, std::move(c));
    return raw;
  }

  Result<runtime::Tensor> AllocateWhileRecording(StreamContext& c, ir::DataType dtype, std::vector<int64_t> shape,
                                                 size_t size) const {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size);
    if (e != cudaSuccess) {
      Status s = CudaCallFailed(e, {"cudaMalloc (while recording a CUDA graph)", __FILE__, __LINE__});
      return s.WithFact("requested", fmt::format("{} bytes for {}", size, ir::DataTypeName(dtype)));
    }
    c.capture->blocks.push_back(p);
    std::shared_ptr<CaptureMemory> memory = c.capture;
    std::shared_ptr<const void> owner(p, [memory](const void*) {});  // freed with the recording
    return runtime::Tensor::OnDevice(runtime::Device::kCuda, dtype, std::move(shape), p, std::move(owner));
  }

  // With --tune or --tuning-cache: choices are keyed by this GPU and the
  // libraries' versions, so that a cache file can travel between machines.
  Status OpenTuningCache() {
    if (!options_.tune && options_.tuning_cache.empty()) return Status::Ok();
    cudaDeviceProp prop{};
    VIGIL_CUDA_CALL(cudaGetDeviceProperties(&prop, options_.device));
    std::string device = fmt::format("{}|sm_{}{}|cudnn {}|cublasLt {}", prop.name, prop.major, prop.minor,
                                     cudnnGetVersion(), cublasLtGetVersion());
    if (options_.tuning_cache.empty()) {
      tuning_cache_ = TuningCache::InMemory(std::move(device));
      return Status::Ok();
    }
    VIGIL_ASSIGN_OR_RETURN(tuning_cache_, TuningCache::Open(options_.tuning_cache, std::move(device), options_.tune));
    return Status::Ok();
  }

  CudaOptions options_;
  bool sync_each_node_;
  std::unique_ptr<TuningCache> tuning_cache_;  // before contexts_: their policies point to it
  mutable FirstRunMeasures first_run_measures_;  // so do they to this
  // Host buffers for inputs and outputs; shared with the tensors it gives out.
  std::shared_ptr<PinnedPool> pinned_ = PinnedPool::Create();
  mutable std::mutex mutex_;
  mutable std::unordered_map<std::thread::id, std::unique_ptr<StreamContext>> contexts_;
};

}  // namespace

Result<std::unique_ptr<runtime::Backend>> CreateCudaBackend(const CudaOptions& options) {
  auto backend = std::make_unique<CudaBackend>(options);
  VIGIL_RETURN_IF_ERROR(backend->Init());
  return std::unique_ptr<runtime::Backend>(std::move(backend));
}

std::string DescribeCudaStack(int device) {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  size_t cudnn = cudnnGetVersion();
  size_t lt = cublasLtGetVersion();
  cudaDeviceProp prop{};
  std::string gpu = "no GPU";
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    gpu = fmt::format("{} (sm_{}{})", prop.name, prop.major, prop.minor);
  }
  return fmt::format("CUDA runtime {}.{}, cuDNN {}.{}.{}, cuBLASLt {}, {}", runtime / 1000, runtime % 1000 / 10,
                     cudnn / 10000, cudnn % 10000 / 100, cudnn % 100, lt, gpu);
}

}  // namespace vigil::cuda
