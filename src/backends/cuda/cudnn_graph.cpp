#include "backends/cuda/cudnn_graph.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/plan_tuning.h"
#include "backends/cuda/tuning_cache.h"
#include "ir/dtype.h"

namespace vigil::cuda {

Result<CudnnDescriptor> CudnnDescriptor::Create(cudnnBackendDescriptorType_t type) {
  CudnnDescriptor d;
  VIGIL_CUDNN_CALL(cudnnBackendCreateDescriptor(type, &d.d_));
  return d;
}

CudnnDescriptor& CudnnDescriptor::operator=(CudnnDescriptor&& o) noexcept {
  if (this != &o) {
    if (d_) cudnnBackendDestroyDescriptor(d_);
    d_ = o.d_;
    o.d_ = nullptr;
  }
  return *this;
}

CudnnDescriptor::~CudnnDescriptor() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
}

Status CudnnDescriptor::Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                            const void* values) {
  VIGIL_CUDNN_CALL(cudnnBackendSetAttribute(d_, name, type, count, values));
  return Status::Ok();
}

Status CudnnDescriptor::SetInts(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
  return Set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
}

Status CudnnDescriptor::SetInt(cudnnBackendAttributeName_t name, int64_t v) { return Set(name, CUDNN_TYPE_INT64, 1, &v); }

Status CudnnDescriptor::SetDescriptor(cudnnBackendAttributeName_t name, const CudnnDescriptor& d) {
  cudnnBackendDescriptor_t raw = d.get();
  return Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
}

Status CudnnDescriptor::Finalize() {
  VIGIL_CUDNN_CALL(cudnnBackendFinalize(d_));
  return Status::Ok();
}

Result<cudnnDataType_t> CudnnDataType(int onnx_dtype) {
  switch (static_cast<ir::DataType>(onnx_dtype)) {
    case ir::DataType::kFloat32: return CUDNN_DATA_FLOAT;
    case ir::DataType::kFloat16: return CUDNN_DATA_HALF;
    case ir::DataType::kBfloat16: return CUDNN_DATA_BFLOAT16;
    default: return UnsupportedError("dtype {} has no cuDNN data type here", onnx_dtype);
  }
}

Result<CudnnDescriptor> MakeCudnnTensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                        bool is_virtual) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return MakeCudnnTensor(uid, type, dims, strides, is_virtual);
}

std::vector<int64_t> ChannelsLastStrides(const std::vector<int64_t>& dims) {
  // Memory order: dim 0, the spatial dims, then dim 1 (channels) innermost.
  std::vector<int64_t> strides(dims.size(), 1);
  if (dims.size() < 3) return strides;
  int64_t s = dims[1];
  for (size_t i = dims.size(); i-- > 2;) {
    strides[i] = s;
    s *= dims[i];
  }
  strides[0] = s;
  return strides;
}

Result<CudnnDescriptor> MakeCudnnTensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
                                        const std::vector<int64_t>& strides, bool is_virtual) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor t, CudnnDescriptor::Create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(t.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  VIGIL_RETURN_IF_ERROR(t.SetInts(CUDNN_ATTR_TENSOR_DIMENSIONS, dims));
  VIGIL_RETURN_IF_ERROR(t.SetInts(CUDNN_ATTR_TENSOR_STRIDES, strides));
  VIGIL_RETURN_IF_ERROR(t.SetInt(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid));
  // Arena slots are 64-byte aligned and device allocations 256-byte aligned.
  VIGIL_RETURN_IF_ERROR(t.SetInt(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 16));
  bool v = is_virtual;
  VIGIL_RETURN_IF_ERROR(t.Set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
  VIGIL_RETURN_IF_ERROR(t.Finalize());
  return t;
}

Result<CudnnDescriptor> MakeConvolutionDescriptor(cudnnDataType_t compute, const std::vector<int64_t>& strides,
                                                  const std::vector<int64_t>& pre_paddings,
                                                  const std::vector<int64_t>& post_paddings,
                                                  const std::vector<int64_t>& dilations) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor conv, CudnnDescriptor::Create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  VIGIL_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  VIGIL_RETURN_IF_ERROR(conv.Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  VIGIL_RETURN_IF_ERROR(conv.SetInt(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(strides.size())));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_DILATIONS, dilations));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, strides));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, pre_paddings));
  VIGIL_RETURN_IF_ERROR(conv.SetInts(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, post_paddings));
  VIGIL_RETURN_IF_ERROR(conv.Finalize());
  return conv;
}

Result<CudnnDescriptor> MakeConvolutionForwardOp(const CudnnDescriptor& x, const CudnnDescriptor& w,
                                                 const CudnnDescriptor& y, const CudnnDescriptor& conv) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor op, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR));
  float alpha = 1.0f, beta = 0.0f;
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x));
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w));
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y));
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv));
  VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  VIGIL_RETURN_IF_ERROR(op.Set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  VIGIL_RETURN_IF_ERROR(op.Finalize());
  return op;
}

Result<CudnnDescriptor> MakePointwiseOp(cudnnPointwiseMode_t mode, const CudnnDescriptor& x, const CudnnDescriptor* b,
                                        const CudnnDescriptor& y, std::vector<CudnnDescriptor>& keep,
                                        float upper_clip) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor pw, CudnnDescriptor::Create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
  cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  VIGIL_RETURN_IF_ERROR(pw.Set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  VIGIL_RETURN_IF_ERROR(pw.Set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision));
  if (upper_clip > 0) {
    // The clip values take the math precision's type (float here).
    float lower = 0;
    VIGIL_RETURN_IF_ERROR(pw.Set(CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_FLOAT, 1, &lower));
    VIGIL_RETURN_IF_ERROR(pw.Set(CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_FLOAT, 1, &upper_clip));
  }
  VIGIL_RETURN_IF_ERROR(pw.Finalize());
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor op, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw));
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x));
  if (b) VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b));
  VIGIL_RETURN_IF_ERROR(op.SetDescriptor(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y));
  VIGIL_RETURN_IF_ERROR(op.Finalize());
  keep.push_back(std::move(pw));
  return op;
}

namespace {

// The one deprecated cuDNN name we use. cuDNN 9.19 deprecates the HANDLE
// attributes of operation graphs and execution plans in favour of a
// device-property descriptor, which exists for building plans without a GPU;
// machines we deploy on run older 9.x releases (9.14 on our GPU hosts) where
// the handle attribute is the documented way. Kept in this one function so
// that the rest of the module still fails to build on any deprecated name.
Status SetHandle(CudnnDescriptor& d, bool plan, cudnnHandle_t handle) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  cudnnBackendAttributeName_t name = plan ? CUDNN_ATTR_EXECUTION_PLAN_HANDLE : CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
#pragma GCC diagnostic pop
  return d.Set(name, CUDNN_TYPE_HANDLE, 1, &handle);
}

// The engine configurations the heuristics propose, best first.
Result<std::vector<CudnnDescriptor>> EngineConfigs(const CudnnDescriptor& graph, cudnnBackendHeurMode_t mode) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor heur, CudnnDescriptor::Create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(heur.SetDescriptor(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
  VIGIL_RETURN_IF_ERROR(heur.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendFinalize(heur.get()));
  int64_t count = 0;
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<CudnnDescriptor> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor c, CudnnDescriptor::Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(c.get());
    configs.push_back(std::move(c));
  }
  if (count == 0) return configs;
  int64_t got = 0;
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data()));
  configs.resize(static_cast<size_t>(std::min(got, count)));
  return configs;
}

// The engine of an engine config; null where it cannot be read.
std::optional<CudnnDescriptor> EngineOf(const CudnnDescriptor& config) {
  auto engine = CudnnDescriptor::Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (!engine.ok()) return std::nullopt;
  cudnnBackendDescriptor_t raw = engine->get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw) !=
      CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  return std::move(engine).value();
}

// Whether the config's engine passes the filter; says why not.
bool Acceptable(const CudnnDescriptor& config, const PlanFilter& filter, std::string* why) {
  std::optional<CudnnDescriptor> engine = EngineOf(config);
  if (!engine) {
    *why = "engine not readable";
    return false;
  }
  cudnnBackendDescriptor_t raw = engine->get();
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes) != CUDNN_STATUS_SUCCESS) {
    count = 0;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (filter.float32 && !filter.allow_tf32 &&
        (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) {
      *why = "uses TF32 tensor cores";
      return false;
    }
    // We ask for float32 accumulation; these engines accumulate in the
    // (half-precision) data type and lose about 1e-2 of accuracy.
    if (notes[i] == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) {
      *why = "accumulates in reduced precision";
      return false;
    }
    if (filter.split_operands &&
        (notes[i] == CUDNN_NUMERICAL_NOTE_FFT || notes[i] == CUDNN_NUMERICAL_NOTE_WINOGRAD ||
         notes[i] == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 || notes[i] == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6 ||
         notes[i] == CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13 || notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS)) {
      *why = "transforms or down-converts its inputs (split TF32 operands)";
      return false;
    }
    if (filter.deterministic && notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) {
      *why = "non-deterministic";
      return false;
    }
  }
  return true;
}

// Reads the engine config's engine and knob choices.
Result<std::string> ChoiceOf(const CudnnDescriptor& config) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor engine, CudnnDescriptor::Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t n = 0;
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw));
  int64_t index = -1;
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                                            &n, &index));
  std::vector<CudnnDescriptor> knobs;
  std::vector<cudnnBackendDescriptor_t> raws;
  for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; ++i) {
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor k, CudnnDescriptor::Create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    raws.push_back(k.get());
    knobs.push_back(std::move(k));
  }
  int64_t count = 0;
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                                            CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                                            static_cast<int64_t>(raws.size()), &count, raws.data()));
  std::string text = fmt::format("engine {} knobs", index);
  for (int64_t i = 0; i < std::min<int64_t>(count, static_cast<int64_t>(raws.size())); ++i) {
    cudnnBackendKnobType_t type{};
    int64_t value = 0;
    VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(raws[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                                              CUDNN_TYPE_KNOB_TYPE, 1, &n, &type));
    VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(raws[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                                              CUDNN_TYPE_INT64, 1, &n, &value));
    text += fmt::format("{}{}={}", i ? "," : " ", static_cast<int>(type), value);
  }
  if (count == 0) text += " -";
  return text;
}

// The parse of ChoiceOf's text: engine index and (type, value) knobs.
struct EngineChoice {
  int64_t engine = -1;
  std::vector<std::pair<int64_t, int64_t>> knobs;
};

std::optional<EngineChoice> ParseChoice(const std::string& text) {
  EngineChoice c;
  std::istringstream in(text);
  std::string word, knobs;
  if (!(in >> word) || word != "engine" || !(in >> c.engine) || c.engine < 0 || !(in >> word) || word != "knobs" ||
      !(in >> knobs) || !(in >> std::ws).eof()) {
    return std::nullopt;
  }
  if (knobs == "-") return c;
  std::istringstream list(knobs);
  std::string item;
  while (std::getline(list, item, ',')) {
    int64_t type = 0, value = 0;
    char eq = 0;
    std::istringstream one(item);
    if (!(one >> type >> eq >> value) || eq != '=' || type < 0 || type >= CUDNN_KNOB_TYPE_COUNTS) return std::nullopt;
    c.knobs.emplace_back(type, value);
  }
  return c;
}

// An engine config of `graph` for a recorded choice; its descriptors go to
// `parts` (the config itself last).
Status ConfigFromChoice(const CudnnDescriptor& graph, const EngineChoice& c, std::vector<CudnnDescriptor>& parts) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor engine, CudnnDescriptor::Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(engine.SetDescriptor(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph));
  VIGIL_RETURN_IF_ERROR(engine.SetInt(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, c.engine));
  VIGIL_RETURN_IF_ERROR(engine.Finalize());
  std::vector<cudnnBackendDescriptor_t> raws;
  for (const auto& [type, value] : c.knobs) {
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor k, CudnnDescriptor::Create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR));
    auto t = static_cast<cudnnBackendKnobType_t>(type);
    VIGIL_RETURN_IF_ERROR(k.Set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &t));
    VIGIL_RETURN_IF_ERROR(k.SetInt(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, value));
    VIGIL_RETURN_IF_ERROR(k.Finalize());
    raws.push_back(k.get());
    parts.push_back(std::move(k));
  }
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor config, CudnnDescriptor::Create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(config.SetDescriptor(CUDNN_ATTR_ENGINECFG_ENGINE, engine));
  if (!raws.empty()) {
    VIGIL_RETURN_IF_ERROR(config.Set(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                     static_cast<int64_t>(raws.size()), raws.data()));
  }
  VIGIL_RETURN_IF_ERROR(config.Finalize());
  parts.push_back(std::move(engine));
  parts.push_back(std::move(config));
  return Status::Ok();
}

// Whether the config's engine is compiled at run time (cuDNN's runtime
// fusion engines, through NVRTC); false where that cannot be read.
bool RuntimeCompiled(const CudnnDescriptor& config) {
  std::optional<CudnnDescriptor> engine = EngineOf(config);
  if (!engine) return false;
  cudnnBackendBehaviorNote_t notes[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  int64_t count = 0;
  if (cudnnBackendGetAttribute(engine->get(), CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &count, notes) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  for (int64_t i = 0; i < count && i < CUDNN_BEHAVIOR_NOTE_TYPE_COUNT; ++i) {
    if (notes[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return true;
  }
  return false;
}

// Finalizes the plan of `config_parts.back()` (an engine config); false when
// cuDNN will not.
Result<bool> FinalizePlan(cudnnHandle_t handle, CudnnPlan& p) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor plan, CudnnDescriptor::Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(SetHandle(plan, /*plan=*/true, handle));
  VIGIL_RETURN_IF_ERROR(plan.SetDescriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, p.config_parts.back()));
  const auto start = std::chrono::steady_clock::now();
  const bool finalized = cudnnBackendFinalize(plan.get()) == CUDNN_STATUS_SUCCESS;
  if (RuntimeCompiled(p.config_parts.back())) p.compile_seconds = SecondsSince(start);
  if (!finalized) return false;
  int64_t n = 0;
  VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                            CUDNN_TYPE_INT64, 1, &n, &p.workspace_bytes));
  p.plan = std::move(plan);
  return true;
}

// The recorded choice's plan, or an error saying why it no longer builds.
Result<CudnnPlan> PlanFromChoice(cudnnHandle_t handle, const CudnnDescriptor& graph, const std::string& text,
                                 const PlanFilter& filter) {
  std::optional<EngineChoice> choice = ParseChoice(text);
  if (!choice) return InvalidInputError("the recorded choice '{}' is not an engine choice", text);
  CudnnPlan p;
  VIGIL_RETURN_IF_ERROR(ConfigFromChoice(graph, *choice, p.config_parts));
  // A recorded choice passes the same filters as a fresh one: a cache file
  // cannot bring TF32 or a non-deterministic engine back.
  std::string why;
  if (!Acceptable(p.config_parts.back(), filter, &why)) return UnsupportedError("recorded engine: {}", why);
  VIGIL_ASSIGN_OR_RETURN(bool built, FinalizePlan(handle, p));
  if (!built) return UnsupportedError("the recorded engine's plan does not finalize here");
  p.engine = "recorded: " + text;
  return p;
}

// Up to `want` acceptable finalized plans, heuristics mode A first, then the
// fallback list; `rejected`/`tried` say what was passed over.
Result<std::vector<CudnnPlan>> CandidatePlans(cudnnHandle_t handle, const CudnnDescriptor& graph, size_t want,
                                              const PlanFilter& filter, std::vector<std::string>& rejected,
                                              size_t& tried) {
  std::vector<CudnnPlan> found;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (!found.empty()) break;  // the fallback list only when mode A has nothing
    VIGIL_ASSIGN_OR_RETURN(std::vector<CudnnDescriptor> configs, EngineConfigs(graph, mode));
    for (size_t i = 0; i < configs.size() && found.size() < want; ++i) {
      ++tried;
      std::string why;
      if (!Acceptable(configs[i], filter, &why)) {
        rejected.push_back(why);
        continue;
      }
      CudnnPlan p;
      p.config_parts.push_back(std::move(configs[i]));
      VIGIL_ASSIGN_OR_RETURN(bool built, FinalizePlan(handle, p));
      if (!built) {
        rejected.push_back("plan did not finalize");
        continue;
      }
      p.engine = fmt::format("config {} of {} ({} heuristics)", i + 1, configs.size(),
                             mode == CUDNN_HEUR_MODE_A ? "mode A" : "fallback");
      found.push_back(std::move(p));
    }
  }
  return found;
}

// Candidates needing more workspace than this are not measured.
constexpr int64_t kMaxTuningWorkspace = int64_t{1} << 30;

// Times the candidates and returns the index of the fastest, recording it
// in `record` unless null.
Result<size_t> MeasureCandidates(std::vector<CudnnPlan>& plans, const CudnnTuning& t, TuningCache* record) {
  size_t best = 0;
  double best_us = -1, first_us = -1;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (plans[i].workspace_bytes > kMaxTuningWorkspace) continue;
    // A candidate half again as slow as the best so far stops at its first timed run.
    Result<double> us = MedianMicros(t.stream, [&] { return t.run(plans[i]); }, 5, best_us < 0 ? 1e300 : 1.5 * best_us);
    if (!us.ok()) {
      // A device fault is the run's problem, not this candidate's.
      VIGIL_RETURN_IF_ERROR(StickyError());
      continue;
    }
    if (i == 0) first_us = *us;
    if (best_us < 0 || *us < best_us) {
      best_us = *us;
      best = i;
    }
  }
  if (best_us < 0) return size_t{0};  // none ran: keep the heuristics' pick, record nothing
  if (record) {
    VIGIL_ASSIGN_OR_RETURN(std::string text, ChoiceOf(plans[best].config_parts.back()));
    record->Record(t.problem, text, best_us, first_us < 0 ? best_us : first_us);
  }
  plans[best].engine += fmt::format(", measured fastest of {}: {:.1f} us", plans.size(), best_us);
  return best;
}

}  // namespace

Result<std::string> EngineChoiceText(const CudnnDescriptor& config) { return ChoiceOf(config); }

Result<CudnnPlan> BuildCudnnPlan(cudnnHandle_t handle, std::vector<CudnnDescriptor> ops,
                                 std::vector<CudnnDescriptor> keep_alive, const PlanFilter& filter,
                                 const std::string& what, const CudnnTuning* tuning) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor graph, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const CudnnDescriptor& op : ops) raw_ops.push_back(op.get());
  VIGIL_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                  static_cast<int64_t>(raw_ops.size()), raw_ops.data()));
  VIGIL_RETURN_IF_ERROR(SetHandle(graph, /*plan=*/false, handle));
  Status finalized = VIGIL_CUDNN_STATUS_IN(kPlanChoice, cudnnBackendFinalize(graph.get()));
  if (!finalized.ok()) return finalized.WithContext(fmt::format("cuDNN operation graph for {}", what));
  // The seconds cuDNN spent compiling engines at run time for this graph,
  // for the backend's notes (FirstRunMeasures::AddCompiled).
  auto count_compiled = [&](const CudnnPlan& p) {
    if (p.compile_seconds > 0 && tuning && tuning->policy.first_run) {
      tuning->policy.first_run->AddCompiled(p.compile_seconds);
    }
  };
  auto finish = [&](CudnnPlan p) {
    auto parts = std::make_shared<std::vector<CudnnDescriptor>>(std::move(keep_alive));
    for (CudnnDescriptor& op : ops) parts->push_back(std::move(op));
    parts->push_back(std::move(graph));
    p.graph_parts = std::move(parts);
    return p;
  };

  TuningCache* cache = tuning ? tuning->policy.cache : nullptr;
  if (cache) {
    if (std::optional<std::string> recorded = cache->Find(tuning->problem)) {
      Result<CudnnPlan> p = PlanFromChoice(handle, graph, *recorded, filter);
      if (p.ok()) {
        count_compiled(*p);
        cache->CountHit();
        return finish(std::move(p).value());
      }
      cache->CountStale();
    }
  }
  if (tuning && !tuning->choice.empty()) {
    Result<CudnnPlan> p = PlanFromChoice(handle, graph, tuning->choice, filter);
    if (p.ok()) {
      count_compiled(*p);
      p->engine = tuning->choice_note + ": " + tuning->choice;
      if (tuning->policy.first_run) tuning->policy.first_run->AddPartOfBatch();
      return finish(std::move(p).value());
    }
  }
  TuningCache* record = cache && tuning->policy.measure ? cache : nullptr;
  bool measure = tuning && tuning->run && (record || tuning->measure_unrecorded);
  if (measure) {
    VIGIL_ASSIGN_OR_RETURN(bool recording, StreamRecording(tuning->stream));
    measure = !recording;
  }
  std::vector<std::string> rejected;
  size_t tried = 0;
  // Tuning time counts the candidates' finalization too (cuDNN compiles
  // some engines then): it is most of it.
  const auto start = std::chrono::steady_clock::now();
  VIGIL_ASSIGN_OR_RETURN(std::vector<CudnnPlan> plans,
                         CandidatePlans(handle, graph, measure ? kMaxTuningCandidates : 1, filter, rejected, tried));
  for (const CudnnPlan& p : plans) count_compiled(p);
  if (!plans.empty()) {
    size_t pick = 0;
    if (measure) {
      VIGIL_ASSIGN_OR_RETURN(pick, MeasureCandidates(plans, *tuning, record));
      if (record) {
        record->AddTuningTime(SecondsSince(start));
      } else if (tuning->policy.first_run) {
        tuning->policy.first_run->Add(FirstRunMeasures::Kind::kConvolution, SecondsSince(start));
      }
    }
    return finish(std::move(plans[pick]));
  }
  std::string reasons;
  for (size_t i = 0; i < rejected.size() && i < 6; ++i) reasons += (i ? "; " : "") + rejected[i];
  Status s = UnsupportedError("cuDNN has no usable engine for {} on this GPU and configuration", what);
  s.WithFact("engine configurations tried", std::to_string(tried));
  if (!reasons.empty()) s.WithFact("rejected because", reasons);
  if (const char* cfg = std::getenv("CUDNN_LIB_CONFIG")) {
    s.WithFact("CUDNN_LIB_CONFIG", cfg);
    s.WithCause(fmt::format("CUDNN_LIB_CONFIG={} leaves out the engines that implement this pattern", cfg),
                "only the runtime-compiled engines are loaded");
  }
  if (filter.float32 && !filter.allow_tf32) s.WithFix("allow TF32 for float32 (--tf32), or run in float16");
  if (filter.deterministic) s.WithFix("run without --deterministic");
  return s;
}

Status ExecuteCudnnPlan(cudnnHandle_t handle, const CudnnPlan& plan, const std::vector<int64_t>& uids,
                        const std::vector<void*>& pointers, void* workspace) {
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor pack, CudnnDescriptor::Create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  VIGIL_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                 static_cast<int64_t>(uids.size()), uids.data()));
  VIGIL_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                 static_cast<int64_t>(pointers.size()), pointers.data()));
  VIGIL_RETURN_IF_ERROR(pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace));
  VIGIL_RETURN_IF_ERROR(pack.Finalize());
  VIGIL_CUDNN_CALL(cudnnBackendExecute(handle, plan.plan.get(), pack.get()));
  return Status::Ok();
}

}  // namespace vigil::cuda
