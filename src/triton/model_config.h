// A model's configuration: config.pbtxt (as the JSON Triton hands over) read
// and checked against the ONNX model, inputs, outputs and max_batch_size
// filled in from the model when the configuration leaves them out, and the
// `parameters` map turned into vigil's session options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "errors.h"
#include "triton_api.h"
#include "vigil/vigil.h"

namespace vigil::triton {

// An input or output as the ONNX model declares it (vigil_model_describe_json).
struct ModelTensor {
  std::string name;
  std::string dtype_name;   // vigil's name ("float32"), "" for non-tensors
  const TypeInfo* type = nullptr;  // null where Triton has no such type
  bool rank_known = false;
  std::vector<int64_t> dims;       // -1 where symbolic or unknown
  std::vector<std::string> dim_names;  // the symbolic names, "" elsewhere
  bool has_initializer = false;    // an input with a default: not a request input
  std::string type_text;           // "float32[N,3,224,224]"
};

// An input or output of config.pbtxt.
struct TensorConfig {
  std::string name;
  const TypeInfo* type = nullptr;
  std::vector<int64_t> dims;       // without the batch dim when max_batch_size > 0
  bool has_reshape = false;
  std::vector<int64_t> reshape;    // what the model sees when has_reshape
};

// The `parameters` of config.pbtxt, as vigil's session options.
struct SessionSettings {
  bool no_fallback = false;
  bool allow_tf32 = false;
  bool run_as_float16 = false;  // a float32 model computed in float16
  bool allow_tf32x3 = true;     // large float32 products as 3xTF32 without TF32
  bool measure_first_run = true;  // without tune, measure the slow-pick operations on first run
  bool tf32x3_convolutions = false;  // without TF32, float32 convolutions as 3xTF32
  bool deterministic = false;
  bool cuda_graphs = false;
  bool tune = false;
  bool isolate = false;
  bool constant_folding = true;
  uint64_t gpu_mem_limit = 0;
  vigil_layout layout = VIGIL_LAYOUT_AUTO;
  std::string tuning_cache_file;
  std::string cudnn_log_file;
  int intra_op_num_threads = 0;
  double isolate_timeout_s = 0;
};

// Everything a model's instances need, fixed at ModelInitialize.
struct ModelSettings {
  std::string name;
  uint64_t version = 0;
  std::string label;         // "model 'resnet' version 1", for messages
  std::string model_dir;     // <repository>/<model>
  std::string model_path;    // <model_dir>/<version>/model.onnx
  int64_t max_batch_size = 0;
  std::vector<TensorConfig> inputs, outputs;
  std::vector<ModelTensor> model_inputs, model_outputs;  // request inputs only (no initializer defaults)
  SessionSettings session;
  bool auto_completed = false;
};

// The backend-wide settings of --backend-config=vigil,<key>=<value>.
struct BackendSettings {
  int64_t default_max_batch_size = 4;  // Triton's own default
};
MaybeProblem ParseBackendConfig(const std::string& json, BackendSettings* settings);

// Reads and checks the model's configuration, finds and describes the model
// file, fills in what the configuration leaves out (when Triton allows
// auto-completion) and checks the result against the model. Every failure
// names the model, what was expected and what was found.
MaybeProblem LoadModelSettings(TRITONBACKEND_Model* model, const BackendSettings& backend, ModelSettings* settings);

// The keys `parameters` may hold, comma-separated, for messages and docs.
std::string AcceptedParameters();

// vigil session options for one instance: the CUDA backend on `device_id`
// (plus the CPU unless no_fallback) for a GPU instance, the CPU otherwise.
// Pointers in `options` point into `holder`.
struct SessionOptionsHolder {
  vigil_session_options options;
  std::vector<vigil_backend> backends;
};
void MakeSessionOptions(const SessionSettings& settings, bool gpu, int device_id, SessionOptionsHolder* holder);

}  // namespace vigil::triton
