// libtriton_vigil.so: the entry points Triton calls. Each one is wrapped so
// that no exception reaches the server; every failure becomes a
// TRITONSERVER_Error whose message is vigil's diagnosis (summary first).
#include <memory>
#include <string>

#include "batching.h"
#include "errors.h"
#include "model_config.h"
#include "state.h"
#include "triton_api.h"
#include "vigil/vigil.h"

namespace vigil::triton {
namespace {

template <typename Body>
TRITONSERVER_Error* Guarded(const char* entry, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (std::string("vigil backend: ") + entry + ": " + e.what()).c_str());
  } catch (...) {
    return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL,
                                 (std::string("vigil backend: ") + entry + ": unknown exception").c_str());
  }
}

// The state pointer Triton keeps for us, or null.
template <typename State, typename Object, typename Getter>
State* StateOf(Object* object, Getter getter) {
  void* state = nullptr;
  TRITONSERVER_Error* e = getter(object, &state);
  if (e) {
    TRITONSERVER_ErrorDelete(e);
    return nullptr;
  }
  return static_cast<State*>(state);
}

std::string KindName(TRITONSERVER_InstanceGroupKind kind) {
  switch (kind) {
    case TRITONSERVER_INSTANCEGROUPKIND_CPU: return "KIND_CPU";
    case TRITONSERVER_INSTANCEGROUPKIND_GPU: return "KIND_GPU";
    case TRITONSERVER_INSTANCEGROUPKIND_MODEL: return "KIND_MODEL";
    case TRITONSERVER_INSTANCEGROUPKIND_AUTO: return "KIND_AUTO";
  }
  return "kind " + std::to_string(static_cast<int>(kind));
}

std::string TensorList(const std::vector<TensorConfig>& tensors, int64_t max_batch_size) {
  std::string s;
  for (const TensorConfig& t : tensors) {
    std::vector<int64_t> dims = t.dims;
    if (max_batch_size > 0) dims.insert(dims.begin(), -1);
    s += (s.empty() ? "" : ", ") + t.name + " " + t.type->protocol + ShapeText(dims);
  }
  return s;
}

}  // namespace
}  // namespace vigil::triton

using namespace vigil::triton;

extern "C" {

TRITONSERVER_Error* TRITONBACKEND_Initialize(TRITONBACKEND_Backend* backend) {
  return Guarded("TRITONBACKEND_Initialize", [&]() -> TRITONSERVER_Error* {
    uint32_t major = 0, minor = 0;
    if (MaybeProblem p = Call(TRITONBACKEND_ApiVersion(&major, &minor), "TRITONBACKEND_ApiVersion")) {
      return ToTriton(*p);
    }
    if (major != kTritonBackendApiMajor || minor < kTritonBackendApiMinor) {
      return ToTriton(TRITONSERVER_ERROR_UNSUPPORTED,
                      "vigil backend: this Triton's backend API is " + std::to_string(major) + "." +
                          std::to_string(minor) + ", libtriton_vigil.so needs " +
                          std::to_string(kTritonBackendApiMajor) + "." + std::to_string(kTritonBackendApiMinor) +
                          " or a later minor\nfix:\n  - use Triton 2.51 (NGC 24.10) or newer");
    }
    if (vigil_api_version() < VIGIL_API_VERSION) {
      return ToTriton(TRITONSERVER_ERROR_UNSUPPORTED,
                      "vigil backend: the libvigil.so it loaded has API version " +
                          std::to_string(vigil_api_version()) + ", it was built for " +
                          std::to_string(VIGIL_API_VERSION) +
                          "\nfix:\n  - install libvigil.so.0 from the same build next to libtriton_vigil.so");
    }
    auto state = std::make_unique<BackendState>();
    TRITONSERVER_Message* config = nullptr;
    if (MaybeProblem p = Call(TRITONBACKEND_BackendConfig(backend, &config), "TRITONBACKEND_BackendConfig")) {
      return ToTriton(*p);
    }
    const char* base = nullptr;
    size_t size = 0;
    if (MaybeProblem p = Call(TRITONSERVER_MessageSerializeToJson(config, &base, &size), "the backend config")) {
      return ToTriton(*p);
    }
    if (MaybeProblem p = ParseBackendConfig(std::string(base, size), &state->settings)) return ToTriton(*p);
    if (MaybeProblem p = Call(TRITONBACKEND_BackendSetState(backend, state.get()), "TRITONBACKEND_BackendSetState")) {
      return ToTriton(*p);
    }
    state.release();
    Log(TRITONSERVER_LOG_INFO, std::string("vigil backend: vigil ") + vigil_version_string() + " (C API " +
                                   std::to_string(vigil_api_version()) + "), Triton backend API " +
                                   std::to_string(major) + "." + std::to_string(minor));
    return nullptr;
  });
}

TRITONSERVER_Error* TRITONBACKEND_Finalize(TRITONBACKEND_Backend* backend) {
  return Guarded("TRITONBACKEND_Finalize", [&]() -> TRITONSERVER_Error* {
    // Triton calls this after a failed Initialize too: the state may be null.
    delete StateOf<BackendState>(backend, TRITONBACKEND_BackendState);
    return nullptr;
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInitialize(TRITONBACKEND_Model* model) {
  return Guarded("TRITONBACKEND_ModelInitialize", [&]() -> TRITONSERVER_Error* {
    BackendSettings defaults;
    const BackendSettings* backend_settings = &defaults;
    TRITONBACKEND_Backend* backend = nullptr;
    if (MaybeProblem p = Call(TRITONBACKEND_ModelBackend(model, &backend), "TRITONBACKEND_ModelBackend")) {
      return ToTriton(*p);
    }
    if (BackendState* b = StateOf<BackendState>(backend, TRITONBACKEND_BackendState)) backend_settings = &b->settings;

    auto state = std::make_unique<ModelState>();
    if (MaybeProblem p = LoadModelSettings(model, *backend_settings, &state->settings)) return ToTriton(*p);
    if (MaybeProblem p = Call(TRITONBACKEND_ModelSetState(model, state.get()), "TRITONBACKEND_ModelSetState")) {
      return ToTriton(*p);
    }
    const ModelSettings& m = state.release()->settings;
    Log(TRITONSERVER_LOG_INFO, "vigil: " + m.label + ": " + m.model_path + "; max_batch_size " +
                                   std::to_string(m.max_batch_size) + "; inputs " +
                                   TensorList(m.inputs, m.max_batch_size) + "; outputs " +
                                   TensorList(m.outputs, m.max_batch_size) +
                                   (m.auto_completed ? " (filled in from the model)" : ""));
    return nullptr;
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelFinalize(TRITONBACKEND_Model* model) {
  return Guarded("TRITONBACKEND_ModelFinalize", [&]() -> TRITONSERVER_Error* {
    // Called after a failed ModelInitialize too: the state may be null.
    delete StateOf<ModelState>(model, TRITONBACKEND_ModelState);
    return nullptr;
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceInitialize(TRITONBACKEND_ModelInstance* instance) {
  return Guarded("TRITONBACKEND_ModelInstanceInitialize", [&]() -> TRITONSERVER_Error* {
    auto state = std::make_unique<InstanceState>();
    const char* name = nullptr;
    TRITONSERVER_InstanceGroupKind kind = TRITONSERVER_INSTANCEGROUPKIND_CPU;
    int32_t device_id = 0;
    TRITONBACKEND_Model* model = nullptr;
    for (MaybeProblem p : {Call(TRITONBACKEND_ModelInstanceName(instance, &name), "TRITONBACKEND_ModelInstanceName"),
                           Call(TRITONBACKEND_ModelInstanceKind(instance, &kind), "TRITONBACKEND_ModelInstanceKind"),
                           Call(TRITONBACKEND_ModelInstanceDeviceId(instance, &device_id),
                                "TRITONBACKEND_ModelInstanceDeviceId"),
                           Call(TRITONBACKEND_ModelInstanceModel(instance, &model), "TRITONBACKEND_ModelInstanceModel")}) {
      if (p) return ToTriton(*p);
    }
    state->name = name ? name : "";
    ModelState* model_state = StateOf<ModelState>(model, TRITONBACKEND_ModelState);
    if (!model_state) {
      return ToTriton(TRITONSERVER_ERROR_INTERNAL, "vigil backend: instance " + state->name + " has no model state");
    }
    const ModelSettings& m = model_state->settings;
    state->model = &m;
    if (kind != TRITONSERVER_INSTANCEGROUPKIND_CPU && kind != TRITONSERVER_INSTANCEGROUPKIND_GPU) {
      return ToTriton(TRITONSERVER_ERROR_UNSUPPORTED,
                      m.label + ": instance " + state->name + " is " + KindName(kind) +
                          "; the vigil backend runs KIND_GPU (one session on the instance's GPU) and KIND_CPU "
                          "instances\nfix:\n  - set kind: KIND_GPU or KIND_CPU in instance_group");
    }
    state->gpu = kind == TRITONSERVER_INSTANCEGROUPKIND_GPU;
    state->device_id = state->gpu ? device_id : 0;
    const std::string where = "instance " + state->name + ", " + KindName(kind) +
                              (state->gpu ? " on GPU " + std::to_string(device_id) : "");

    SessionOptionsHolder options;
    MakeSessionOptions(m.session, state->gpu, state->device_id, &options);
    if (vigil_status* st = vigil_session_create(m.model_path.c_str(), &options.options, &state->session)) {
      return ToTriton(FromVigil(st, {"triton model: " + m.name + " version " + std::to_string(m.version) + " (" +
                                     where + ")"}));
    }
    state->staging.resize(m.model_inputs.size());
    const std::string backends = vigil_session_backends(state->session);
    Log(TRITONSERVER_LOG_INFO, "vigil: " + m.label + ": " + where + ": a session running on " + backends);
    if (state->gpu && backends.find("cuda") == std::string::npos) {
      Log(TRITONSERVER_LOG_WARN, "vigil: " + m.label + ": " + where + ": no node runs on the GPU; the session's notes: " +
                                     vigil_session_notes_json(state->session));
    } else if (state->gpu && backends.find("cpu") != std::string::npos) {
      Log(TRITONSERVER_LOG_WARN, "vigil: " + m.label + ": " + where + ": some nodes fall back to the CPU: " +
                                     vigil_session_describe_json(state->session));
    }
    if (MaybeProblem p = Call(TRITONBACKEND_ModelInstanceSetState(instance, state.get()),
                              "TRITONBACKEND_ModelInstanceSetState")) {
      return ToTriton(*p);
    }
    state.release();
    return nullptr;
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceFinalize(TRITONBACKEND_ModelInstance* instance) {
  return Guarded("TRITONBACKEND_ModelInstanceFinalize", [&]() -> TRITONSERVER_Error* {
    delete StateOf<InstanceState>(instance, TRITONBACKEND_ModelInstanceState);
    return nullptr;
  });
}

TRITONSERVER_Error* TRITONBACKEND_ModelInstanceExecute(TRITONBACKEND_ModelInstance* instance,
                                                       TRITONBACKEND_Request** requests, uint32_t request_count) {
  // An error returned from here hands the requests back to Triton, so it is
  // only returned before any request was touched; ExecuteRequests answers
  // and releases every request itself.
  return Guarded("TRITONBACKEND_ModelInstanceExecute", [&]() -> TRITONSERVER_Error* {
    InstanceState* state = StateOf<InstanceState>(instance, TRITONBACKEND_ModelInstanceState);
    if (!state || !state->session) {
      return ToTriton(TRITONSERVER_ERROR_INTERNAL, "vigil backend: an instance without a session was asked to run");
    }
    ExecuteRequests(*state, instance, requests, request_count);
    return nullptr;
  });
}

}  // extern "C"
