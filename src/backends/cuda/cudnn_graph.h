// A small owner of cuDNN graph-API (backend) descriptors and the staged
// building cuDNN asks for: describe tensors and operations, build the
// operation graph, ask the heuristics for engine configurations, finalize the
// first plan that passes our filters (no TF32 for float32 unless allowed, no
// non-deterministic engine when determinism is asked), or with autotuning the
// fastest of the first few measured, or the one a tuning cache recorded,
// then execute it with a variant pack. "Not supported" (no engine for this graph here, e.g. under
// CUDNN_LIB_CONFIG=GRAPH_JIT_ONLY) stays apart from "failed".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <cudnn.h>

#include "backends/cuda/plan_tuning.h"
#include "base/status.h"

namespace vigil::cuda {

// One cudnnBackendDescriptor_t, destroyed with its owner.
class CudnnDescriptor {
 public:
  static Result<CudnnDescriptor> Create(cudnnBackendDescriptorType_t type);
  CudnnDescriptor() = default;
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& o) noexcept;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  ~CudnnDescriptor();

  cudnnBackendDescriptor_t get() const { return d_; }
  Status Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* values);
  Status SetInts(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v);
  Status SetInt(cudnnBackendAttributeName_t name, int64_t v);
  Status SetDescriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& d);
  Status Finalize();

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// The cuDNN data type of an ONNX float dtype.
Result<cudnnDataType_t> CudnnDataType(int onnx_dtype);

// A tensor descriptor: packed strides of `dims` (row-major), given uid.
Result<CudnnDescriptor> MakeCudnnTensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                        bool is_virtual = false);
// The same with explicit strides (in elements), e.g. NCHW dims laid out
// channels-last: strides [H*W*C, 1, W*C, C].
Result<CudnnDescriptor> MakeCudnnTensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& strides, bool is_virtual = false);
// Strides of logical NCHW (or OIHW) `dims` stored channels-last (NHWC/OHWI).
std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& dims);

// A finalized cross-correlation descriptor: `compute` accumulation, one
// stride, dilation and pre/post padding per spatial dim.
Result<CudnnDescriptor> MakeConvolutionDescriptor(cudnnDataType_t compute, const std::vector<int64_t>& strides,
                                                  const std::vector<int64_t>& pre_paddings,
                                                  const std::vector<int64_t>& post_paddings,
                                                  const std::vector<int64_t>& dilations);

// A finalized forward-convolution operation y = conv(x, w) (alpha 1, beta 0)
// on tensor descriptors x, w, y and convolution descriptor `conv`.
Result<CudnnDescriptor> MakeConvolutionForwardOp(const CudnnDescriptor& x, const CudnnDescriptor& w,
                                                 const CudnnDescriptor& y, const CudnnDescriptor& conv);

// A pointwise operation (float32 math) y = mode(x[, b]), its pointwise
// descriptor kept alive in `keep`. `upper_clip` (RELU_FWD only, when > 0):
// min(relu(x), upper_clip).
Result<CudnnDescriptor> MakePointwiseOp(cudnnPointwiseMode_t mode, const CudnnDescriptor& x, const CudnnDescriptor* b,
                                        const CudnnDescriptor& y, std::vector<CudnnDescriptor>& keep,
                                        float upper_clip = 0);

struct PlanFilter {
  bool allow_tf32 = false;     // float32 graphs only
  bool deterministic = false;
  bool float32 = false;        // the graph computes on float32 data
  // The float32 inputs are split TF32 operands (split_tf32.h): TF32 tensor
  // cores are wanted, but no engine that transforms its inputs (FFT,
  // Winograd) or converts them further, which would round the lo parts away.
  bool split_operands = false;
};

// A finalized execution plan and what it needs to run.
struct CudnnPlan {
  // The graph, its ops and tensors, shared by the candidate plans of one graph.
  std::shared_ptr<const std::vector<CudnnDescriptor>> graph_parts;
  std::vector<CudnnDescriptor> config_parts;  // the engine config (and its engine and knobs)
  CudnnDescriptor plan;
  int64_t workspace_bytes = 0;
  std::string engine;  // "config 1 of 12 (mode A heuristics)" (for logs)
  // Seconds its finalization took where the engine is compiled at run time
  // (CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION), else 0.
  double compile_seconds = 0;
};

// How BuildCudnnPlan chooses among the engines beyond the heuristics' first
// pick (plan_tuning.h).
struct CudnnTuning {
  TuningPolicy policy;
  std::string problem;  // the tuning-cache key: the pattern, shapes, dtype, layout, filters
  cudaStream_t stream = nullptr;
  // Queues one execution of a candidate plan on `stream` (outputs to scratch
  // memory); null: candidates are not measured.
  std::function<Status(const CudnnPlan&)> run;
  // Measure the candidates even without autotuning (policy.measure false or
  // no cache): the fastest is used for the session and nothing is recorded.
  bool measure_unrecorded = false;
  // An engine choice (EngineChoiceText) measured on part of the batch, the
  // same pattern with fewer images: built first and not measured again;
  // where it does not build for this graph, the candidates are measured as
  // above. `choice_note` says where it came from ("measured on 55 of 110
  // images"), for the plan's engine text.
  std::string choice;
  std::string choice_note;
};

// Builds the operation graph of `ops` on `handle` and finalizes the first
// acceptable plan, or with `tuning` the recorded or the measured-fastest
// one. `what` names the pattern ("Conv float16 NCHW 2D") for the "not
// supported" diagnosis.
Result<CudnnPlan> BuildCudnnPlan(cudnnHandle_t handle, std::vector<CudnnDescriptor> ops,
                                 std::vector<CudnnDescriptor> keep_alive, const PlanFilter& filter,
                                 const std::string& what, const CudnnTuning* tuning = nullptr);

// The engine config's identity as a tuning-cache choice: "engine 12 knobs
// 3=1,7=0" (the engine's global index and its knob choices, by knob type).
Result<std::string> EngineChoiceText(const CudnnDescriptor& config);

// Runs `plan` with the device pointers of the tensors `uids`.
Status ExecuteCudnnPlan(cudnnHandle_t handle, const CudnnPlan& plan, const std::vector<int64_t>& uids,
                        const std::vector<void*>& pointers, void* workspace);

}  // namespace vigil::cuda
