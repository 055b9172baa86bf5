// The CUDA backend's kernel interface, shaped like the CPU backend's
// (backends/cpu/kernel.h): a kernel reads its inputs (device tensors, or
// host tensors for the inputs its KernelDef marks as host-read) and the
// node's attributes from a CudaKernelContext, and asks it for outputs, which
// are sized from shape inference. Work is queued on the calling thread's
// stream; kernels never synchronise.
//
// Kernels live in explicit tables, one list per op family (cuda_backend.cpp
// assembles them). Each entry names the dtypes it takes through a support
// function, so that the session can send a node it cannot run to the CPU.
#pragma once

#include <climits>
#include <cstdint>
#include <span>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/plan_tuning.h"
#include "base/status.h"
#include "ir/graph.h"
#include "ops/attributes.h"
#include "runtime/backend.h"
#include "runtime/tensor.h"

namespace vigil::cuda {

struct CudaOptions {
  int device = 0;
  bool allow_tf32 = false;     // fp32 convolutions and products may use TF32 tensor cores
  // Without TF32, large fp32 products run as three TF32 products of split
  // operands (split_tf32.h), near float32's accuracy; false: FFMA only.
  bool allow_tf32x3 = true;
  // Without TF32, float32 convolutions as 3xTF32 too (conv_measure_rule.h,
  // SplitConvPays); off by default: the error grows with depth.
  bool tf32x3_convolutions = false;
  bool deterministic = false;  // exclude non-deterministic algorithms
  uint64_t memory_limit = 0;   // bytes a run may use on the device (0: what is free)
  bool tune = false;           // measure candidate algorithms of problems not in the tuning cache
  // Without tune, measure on first use the products and convolutions whose
  // library pick is often slow (WorthMeasuring, MeasuredUntuned).
  bool measure_first_run = true;
  std::string tuning_cache;    // recorded choices (read; appended to when tuning); empty: none
  bool sync_each_node = false; // synchronise after every node (profiling; VIGIL_CUDA_SYNC=1 also does)
};

// One per thread that runs the session: its stream, its library handles and
// its workspace. Handles are never shared between threads (cuDNN requires it).
// Memory handed out while a run is being recorded as a CUDA graph: it must
// keep its address for as long as the graph lives (cuda_backend.cpp).
struct CaptureMemory;

struct StreamContext {
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  std::shared_ptr<void> workspace_owner;  // recorded graphs share it, so a grown workspace outlives them
  // A second such block, for operands a product prepares itself (the split
  // operands of split_tf32.h), apart from the workspace that callers of a
  // product also use (conv_patch_gemm.cpp).
  void* operands = nullptr;
  size_t operands_bytes = 0;
  std::shared_ptr<void> operands_owner;
  // Set between BeginCapture and EndCapture: work on `stream` is recorded.
  std::shared_ptr<CaptureMemory> capture;
  // Per-thread caches of built library plans (cuDNN execution plans are tied
  // to a handle), keyed by the op's shapes, dtypes and attributes.
  std::unordered_map<std::string, std::shared_ptr<void>> plans;
  // How plans not in `plans` yet are chosen (autotuning, the tuning cache).
  TuningPolicy tuning;
  // A workspace of at least `bytes` on this stream (grows; never shrinks).
  // While recording it cannot grow (Unsupported): a first normal run at the
  // same shapes has grown it already.
  Result<void*> Workspace(size_t bytes);
  // The operand block, of at least `bytes`, on the same terms.
  Result<void*> OperandScratch(size_t bytes);
  // Unsupported while recording, naming `what` needs the host during the run.
  Status RefuseWhileRecording(const ir::Node& node, const char* what) const;
};

class CudaKernelContext {
 public:
  CudaKernelContext(const ir::Node& node, int64_t opset, std::span<const runtime::Tensor* const> inputs,
                    std::vector<runtime::Tensor>& outputs, runtime::OutputAllocator& allocator,
                    StreamContext& stream, const CudaOptions& options)
      : node_(node), opset_(opset), inputs_(inputs), outputs_(outputs), allocator_(allocator),
        stream_(stream), options_(options) {}

  const ir::Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  // Input i (device memory unless the kernel's def reads it on the host), or
  // null when omitted.
  const runtime::Tensor* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  bool has_input(size_t i) const { return input(i) != nullptr; }
  size_t num_outputs() const { return outputs_.size(); }
  bool output_wanted(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }

  // Output i in device memory with the dtype and shape shape inference
  // planned for it. Every element must then be written.
  Result<runtime::Tensor*> Output(size_t i);
  // Output i with an explicit dtype and shape (must match the plan).
  Result<runtime::Tensor*> Output(size_t i, ir::DataType dtype, std::vector<int64_t> shape);
  // The dims shape inference planned for output i, or null when unknown.
  const std::vector<int64_t>* PlannedDims(size_t i) const;
  // Output i as a view of an existing device tensor (Reshape, Identity).
  Status SetOutput(size_t i, runtime::Tensor tensor);

  cudaStream_t stream() const { return stream_.stream; }
  StreamContext& stream_context() const { return stream_; }
  const CudaOptions& options() const { return options_; }

  template <typename... Args>
  Status Fail(fmt::format_string<Args...> f, Args&&... args) const {
    return InvalidInputError("{}: {}", ops::NodeLabel(node_), fmt::format(f, std::forward<Args>(args)...));
  }
  template <typename... Args>
  Status Unsupported(fmt::format_string<Args...> f, Args&&... args) const {
    return UnsupportedError("{}: {}", ops::NodeLabel(node_), fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const ir::Node& node_;
  int64_t opset_;
  std::span<const runtime::Tensor* const> inputs_;
  std::vector<runtime::Tensor>& outputs_;
  runtime::OutputAllocator& allocator_;
  StreamContext& stream_;
  const CudaOptions& options_;
  mutable std::vector<std::vector<int64_t>> planned_dims_;
};

using CudaKernelFn = Status (*)(CudaKernelContext& ctx);
// Whether the kernel takes this node with these types; on false says why.
using CudaSupportFn = bool (*)(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not);
// Whether the session's options make the kernel the better choice (the
// session asks before fusing a chain into the node); on false says why.
using CudaOptionsFn = bool (*)(const CudaOptions& options, const runtime::NodeTypes& types, std::string* why_not);

struct CudaKernelDef {
  const char* domain;  // "" for the default domain
  const char* op;
  int since_version;
  int until_version;  // inclusive
  CudaKernelFn fn;
  CudaSupportFn supports;   // null: any types
  uint32_t host_inputs = 0;  // bit i set: input i is read on the host
  CudaOptionsFn worth_it = nullptr;  // null: whatever the options
};

inline constexpr int kLatest = INT_MAX;
inline constexpr uint32_t HostInput(int i) { return 1u << i; }

const CudaKernelDef* FindCudaKernel(std::string_view domain, std::string_view op, int64_t opset);

// Per-family lists (one file each).
std::span<const CudaKernelDef> ElementwiseCudaKernels();   // elementwise.cu
std::span<const CudaKernelDef> DataMovementCudaKernels();  // data_movement.cu
std::span<const CudaKernelDef> DataMovementSpatialCudaKernels();  // data_movement_spatial.cu (Pad, DepthToSpace, ...)
std::span<const CudaKernelDef> ResizeCudaKernels();        // resize.cu
std::span<const CudaKernelDef> ReductionCudaKernels();     // reduction.cu
std::span<const CudaKernelDef> NormalizationCudaKernels(); // normalization.cu (+ softmax)
std::span<const CudaKernelDef> PoolCudaKernels();          // pool.cu
std::span<const CudaKernelDef> ConvCudaKernels();          // conv_cudnn.cpp
std::span<const CudaKernelDef> MatMulCudaKernels();        // matmul_cublaslt.cpp
std::span<const CudaKernelDef> ViewCudaKernels();          // views.cpp (Reshape, Flatten, ...)
std::span<const CudaKernelDef> RecurrentCudaKernels();     // recurrent.cu (LSTM, GRU, RNN)
std::span<const CudaKernelDef> ShapeSourceCudaKernels();   // shape_source.cpp (Shape, Size, ConstantOfShape)
std::span<const CudaKernelDef> FaultInjectionCudaKernels(); // fault_injection.cu (test-only ops)

// --- support predicates shared by the families ---------------------------

// dtypes with float arithmetic in our kernels: float32, float16, bfloat16.
bool IsCudaFloat(ir::DataType t);
// Every typed input (except host-read ones, listed in `skip_mask`) is one of
// the float dtypes, and all of them are the same; says which is not.
bool AllInputsFloat(const ir::Node& node, const runtime::NodeTypes& types, std::string* why_not,
                    uint32_t skip_mask = 0);
// Input `i` has a dtype of 1, 2, 4 or 8 bytes (data movement copies bytes).
bool FixedSizeInput(const runtime::NodeTypes& types, size_t i, std::string* why_not);
// The dtype of input i, or kUndefined when not known.
ir::DataType InputDtype(const runtime::NodeTypes& types, size_t i);

}  // namespace vigil::cuda
