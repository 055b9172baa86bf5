#include "backends/cuda/cudnn_graph.h"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "backends/cuda/cuda_check.h"
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

// Whether the config's engine passes the filter; says why not.
bool Acceptable(const CudnnDescriptor& config, const PlanFilter& filter, std::string* why) {
  auto engine = CudnnDescriptor::Create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (!engine.ok()) return false;
  cudnnBackendDescriptor_t raw = engine->get();
  int64_t n = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &raw) !=
      CUDNN_STATUS_SUCCESS) {
    *why = "engine not readable";
    return false;
  }
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
    if (filter.deterministic && notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) {
      *why = "non-deterministic";
      return false;
    }
  }
  return true;
}

}  // namespace

Result<CudnnPlan> BuildCudnnPlan(cudnnHandle_t handle, std::vector<CudnnDescriptor> ops,
                                 std::vector<CudnnDescriptor> keep_alive, const PlanFilter& filter,
                                 const std::string& what) {
  CudnnPlan result;
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor graph, CudnnDescriptor::Create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  std::vector<cudnnBackendDescriptor_t> raw_ops;
  for (const CudnnDescriptor& op : ops) raw_ops.push_back(op.get());
  VIGIL_RETURN_IF_ERROR(graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                  static_cast<int64_t>(raw_ops.size()), raw_ops.data()));
  VIGIL_RETURN_IF_ERROR(SetHandle(graph, /*plan=*/false, handle));
  Status finalized = VIGIL_CUDNN_STATUS_IN(kPlanChoice, cudnnBackendFinalize(graph.get()));
  if (!finalized.ok()) return finalized.WithContext(fmt::format("cuDNN operation graph for {}", what));

  std::vector<std::string> rejected;
  size_t tried = 0;
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<CudnnDescriptor> configs, EngineConfigs(graph, mode));
    for (size_t i = 0; i < configs.size(); ++i) {
      ++tried;
      std::string why;
      if (!Acceptable(configs[i], filter, &why)) {
        rejected.push_back(why);
        continue;
      }
      VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor plan, CudnnDescriptor::Create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
      VIGIL_RETURN_IF_ERROR(SetHandle(plan, /*plan=*/true, handle));
      VIGIL_RETURN_IF_ERROR(plan.SetDescriptor(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]));
      if (cudnnBackendFinalize(plan.get()) != CUDNN_STATUS_SUCCESS) {
        rejected.push_back("plan did not finalize");
        continue;
      }
      int64_t n = 0;
      VIGIL_CUDNN_CALL_IN(kPlanChoice, cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                                CUDNN_TYPE_INT64, 1, &n, &result.workspace_bytes));
      result.plan = std::move(plan);
      result.engine = fmt::format("config {} of {} ({} heuristics)", i + 1, configs.size(),
                                  mode == CUDNN_HEUR_MODE_A ? "mode A" : "fallback");
      result.keep_alive = std::move(keep_alive);
      for (CudnnDescriptor& op : ops) result.keep_alive.push_back(std::move(op));
      result.keep_alive.push_back(std::move(graph));
      result.keep_alive.push_back(std::move(configs[i]));
      return result;
    }
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
