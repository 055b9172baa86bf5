#include "model_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

namespace vigil::triton {

using nlohmann::json;

namespace {

Problem Invalid(const std::string& message) { return Problem{TRITONSERVER_ERROR_INVALID_ARG, message}; }

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

// ---- JSON messages ---------------------------------------------------------------

MaybeProblem MessageJson(TRITONSERVER_Message* message, json* out, const char* what) {
  const char* base = nullptr;
  size_t size = 0;
  if (MaybeProblem p = Call(TRITONSERVER_MessageSerializeToJson(message, &base, &size), what)) return p;
  *out = json::parse(base, base + size, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded() || !out->is_object()) {
    return Problem{TRITONSERVER_ERROR_INTERNAL, std::string(what) + ": the server's JSON is not an object"};
  }
  return std::nullopt;
}

MaybeProblem ReadModelConfig(TRITONBACKEND_Model* model, json* config) {
  TRITONSERVER_Message* message = nullptr;
  if (MaybeProblem p = Call(TRITONBACKEND_ModelConfig(model, 1, &message), "TRITONBACKEND_ModelConfig")) return p;
  MaybeProblem p = MessageJson(message, config, "the model configuration");
  TRITONSERVER_Error* e = TRITONSERVER_MessageDelete(message);
  if (e) TRITONSERVER_ErrorDelete(e);
  return p;
}

// ---- Parameters → session options ----------------------------------------------------

bool ParseBool(std::string text, bool* value) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  if (text == "true" || text == "1") return *value = true, true;
  if (text == "false" || text == "0") return *value = false, true;
  return false;
}

// Bytes, or a number with K, M or G (binary units), as `vigil run --gpu-mem-limit`.
bool ParseBytes(const std::string& text, uint64_t* bytes) {
  char* stop = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &stop);
  const size_t end = static_cast<size_t>(stop - text.c_str());
  const std::string unit = text.substr(end);
  const double scale = unit.empty() || unit == "B" ? 1.0
                       : unit == "K"              ? 1024.0
                       : unit == "M"              ? 1024.0 * 1024
                       : unit == "G"              ? 1024.0 * 1024 * 1024
                                                  : -1.0;
  if (end == 0 || errno || scale < 0 || !(v >= 0) || v * scale > 1.8e19) return false;
  *bytes = static_cast<uint64_t>(v * scale);
  return true;
}

bool ParseCount(const std::string& text, int* value) {
  if (text.empty() || text.size() > 9 || !std::all_of(text.begin(), text.end(), ::isdigit)) return false;
  *value = std::stoi(text);
  return true;
}

bool ParseSeconds(const std::string& text, double* value) {
  char* stop = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &stop);
  if (text.empty() || *stop != '\0' || errno || !(v >= 0) || v > 1e9) return false;
  *value = v;
  return true;
}

struct ParameterSpec {
  const char* key;
  const char* accepts;  // for messages
  std::function<bool(const std::string& value, const std::string& model_dir, SessionSettings* s)> apply;
};

std::string Resolve(const std::string& path, const std::string& model_dir) {
  std::filesystem::path p(path);
  return p.is_relative() ? (std::filesystem::path(model_dir) / p).string() : path;
}

const std::vector<ParameterSpec>& ParameterSpecs() {
  static const std::vector<ParameterSpec> specs = {
      {"no_fallback", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->no_fallback); }},
      {"allow_tf32", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->allow_tf32); }},
      {"run_as_float16", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->run_as_float16); }},
      {"allow_tf32x3", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->allow_tf32x3); }},
      {"measure_first_run", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->measure_first_run); }},
      {"tf32x3_convolutions", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) {
         return ParseBool(v, &s->tf32x3_convolutions);
       }},
      {"deterministic", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->deterministic); }},
      {"cuda_graphs", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->cuda_graphs); }},
      {"gpu_mem_limit", "bytes, or a number with K, M or G (512M, 2G); 0: the free memory",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBytes(v, &s->gpu_mem_limit); }},
      {"layout", "auto or nchw",
       [](const std::string& v, const std::string&, SessionSettings* s) {
         if (v != "auto" && v != "nchw") return false;
         s->layout = v == "auto" ? VIGIL_LAYOUT_AUTO : VIGIL_LAYOUT_NCHW;
         return true;
       }},
      {"tune", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->tune); }},
      {"tuning_cache_file", "a file path (relative: to the model's folder)",
       [](const std::string& v, const std::string& dir, SessionSettings* s) {
         if (v.empty()) return false;
         s->tuning_cache_file = Resolve(v, dir);
         return true;
       }},
      {"cudnn_log_file", "a file path (relative: to the model's folder)",
       [](const std::string& v, const std::string& dir, SessionSettings* s) {
         if (v.empty()) return false;
         s->cudnn_log_file = Resolve(v, dir);
         return true;
       }},
      {"intra_op_num_threads", "a whole number >= 0 (0: every core)",
       [](const std::string& v, const std::string&, SessionSettings* s) {
         return ParseCount(v, &s->intra_op_num_threads);
       }},
      {"constant_folding", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->constant_folding); }},
      {"isolate", "true or false",
       [](const std::string& v, const std::string&, SessionSettings* s) { return ParseBool(v, &s->isolate); }},
      {"isolate_timeout_s", "seconds >= 0 (0: no limit)",
       [](const std::string& v, const std::string&, SessionSettings* s) {
         return ParseSeconds(v, &s->isolate_timeout_s);
       }},
  };
  return specs;
}

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

MaybeProblem ParseParameters(const json& config, const ModelSettings& m, SessionSettings* s) {
  auto it = config.find("parameters");
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return Invalid(m.label + ": 'parameters' of config.pbtxt is not a map");
  for (const auto& [key, entry] : it->items()) {
    const ParameterSpec* spec = nullptr;
    for (const ParameterSpec& candidate : ParameterSpecs()) {
      if (key == candidate.key) spec = &candidate;
    }
    if (!spec) {
      std::string message = m.label + ": unknown parameter '" + key + "' in config.pbtxt";
      for (const ParameterSpec& candidate : ParameterSpecs()) {
        if (EditDistance(key, candidate.key) <= 2) message += " (did you mean '" + std::string(candidate.key) + "'?)";
      }
      message += "\n  accepted: " + AcceptedParameters();
      message += "\nfix:\n  - use one of the accepted keys, or remove the parameter (docs/triton.md lists them)";
      return Invalid(message);
    }
    std::string value;
    if (entry.is_object() && entry.contains("string_value") && entry["string_value"].is_string()) {
      value = entry["string_value"].get<std::string>();
    }
    if (!spec->apply(value, m.model_dir, s)) {
      return Invalid(m.label + ": parameter '" + key + "' is '" + value + "'; it takes " + spec->accepts +
                     "\nfix:\n  - set parameters { key: \"" + key + "\" value: { string_value: \"...\" } } to " +
                     spec->accepts);
    }
  }
  return std::nullopt;
}

// ---- The model file and what it declares ------------------------------------------------

MaybeProblem FindModelFile(const json& config, ModelSettings* m) {
  std::string file = "model.onnx";
  auto it = config.find("default_model_filename");
  if (it != config.end() && it->is_string() && !it->get<std::string>().empty()) file = it->get<std::string>();
  const std::filesystem::path path = std::filesystem::path(m->model_dir) / std::to_string(m->version) / file;
  m->model_path = path.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Problem{TRITONSERVER_ERROR_NOT_FOUND,
                   m->label + ": no model file at '" + m->model_path + "'\n  model: " + m->name +
                       "\n  version: " + std::to_string(m->version) + "\n  expected: <repository>/" + m->name + "/" +
                       std::to_string(m->version) + "/" + file +
                       "\nfix:\n  - put the ONNX model there, or name its file with default_model_filename in "
                       "config.pbtxt"};
  }
  return std::nullopt;
}

ModelTensor ReadTensor(const json& j) {
  ModelTensor t;
  t.name = j.value("name", "");
  t.type_text = j.value("type_text", j.value("type", "unknown"));
  t.has_initializer = j.value("has_initializer", false);
  if (j.contains("dtype") && j["dtype"].is_string()) {
    t.dtype_name = j["dtype"].get<std::string>();
    t.type = TypeByVigilName(t.dtype_name);
  }
  if (j.contains("shape") && j["shape"].is_array()) {
    t.rank_known = true;
    for (const json& d : j["shape"]) {
      if (d.is_number_integer()) {
        t.dims.push_back(d.get<int64_t>());
        t.dim_names.emplace_back();
      } else {
        t.dims.push_back(-1);
        t.dim_names.push_back(d.is_string() ? d.get<std::string>() : "");
      }
    }
  }
  return t;
}

MaybeProblem DescribeModel(ModelSettings* m) {
  char* text = nullptr;
  if (vigil_status* st = vigil_model_describe_json(m->model_path.c_str(), 0, &text)) {
    return FromVigil(st, {"triton model: " + m->name + " version " + std::to_string(m->version)});
  }
  const json j = json::parse(text ? text : "", nullptr, /*allow_exceptions=*/false);
  vigil_string_release(text);
  if (!j.is_object() || !j.contains("inputs") || !j.contains("outputs")) {
    return Problem{TRITONSERVER_ERROR_INTERNAL, m->label + ": vigil_model_describe_json gave no inputs and outputs"};
  }
  for (const json& in : j["inputs"]) {
    ModelTensor t = ReadTensor(in);
    if (!t.has_initializer) m->model_inputs.push_back(std::move(t));
  }
  for (const json& out : j["outputs"]) m->model_outputs.push_back(ReadTensor(out));
  return std::nullopt;
}

// ---- Auto-complete ---------------------------------------------------------------------------

// Why the model cannot be batched along dim 0 ("" when it can).
std::string WhyNotBatchable(const ModelSettings& m) {
  auto check = [](const ModelTensor& t, const char* kind) -> std::string {
    // An output whose shape the model leaves open is checked at run time.
    if (!t.rank_known && std::string(kind) == "output") return "";
    if (!t.rank_known || t.dims.empty()) {
      return std::string(kind) + " '" + t.name + "' is " + t.type_text + ", with no dim 0 the model declares";
    }
    if (t.dims[0] != -1) {
      return std::string(kind) + " '" + t.name + "' is " + t.type_text + ": dim 0 is fixed at " +
             std::to_string(t.dims[0]);
    }
    return "";
  };
  for (const ModelTensor& t : m.model_inputs) {
    if (std::string why = check(t, "input"); !why.empty()) return why;
  }
  for (const ModelTensor& t : m.model_outputs) {
    if (std::string why = check(t, "output"); !why.empty()) return why;
  }
  return "";
}

MaybeProblem CompleteTensors(const ModelSettings& m, const std::vector<ModelTensor>& tensors, const char* kind,
                             int64_t max_batch_size, json* list) {
  for (const ModelTensor& t : tensors) {
    if (!t.type) {
      return Problem{TRITONSERVER_ERROR_UNSUPPORTED,
                     m.label + ": cannot fill in " + kind + " '" + t.name + "' of config.pbtxt: it is " +
                         t.type_text + ", which Triton has no data_type for\nfix:\n  - serve a model whose " + kind +
                         "s are tensors of a numeric type"};
    }
    if (!t.rank_known) {
      return Problem{TRITONSERVER_ERROR_INVALID_ARG,
                     m.label + ": cannot fill in " + kind + " '" + t.name + "' of config.pbtxt: the model does not " +
                         "declare its shape (" + t.type_text + ")\nfix:\n  - list the " + kind +
                         "s with their dims in config.pbtxt"};
    }
    json dims = json::array();
    for (size_t d = max_batch_size > 0 ? 1 : 0; d < t.dims.size(); ++d) dims.push_back(t.dims[d]);
    list->push_back({{"name", t.name}, {"data_type", t.type->config}, {"dims", dims}});
  }
  return std::nullopt;
}

// Fills in inputs, outputs and max_batch_size; true in *changed when it did.
MaybeProblem AutoComplete(const ModelSettings& m, const BackendSettings& backend, json* config, bool* changed) {
  *changed = false;
  const bool no_inputs = !config->contains("input") || (*config)["input"].empty();
  const bool no_outputs = !config->contains("output") || (*config)["output"].empty();
  if (!no_inputs && !no_outputs) return std::nullopt;
  int64_t max_batch_size = config->value("max_batch_size", int64_t{0});
  const std::string why_not = WhyNotBatchable(m);
  if (no_inputs && no_outputs && max_batch_size == 0 && why_not.empty() && backend.default_max_batch_size > 0) {
    max_batch_size = backend.default_max_batch_size;
    (*config)["max_batch_size"] = max_batch_size;
    *changed = true;
  }
  if (max_batch_size > 0 && !why_not.empty()) {
    return Invalid(m.label + ": max_batch_size is " + std::to_string(max_batch_size) +
                   ", but the model cannot take a batch along dim 0: " + why_not +
                   "\nfix:\n  - set max_batch_size: 0 (requests then carry the model's full shape)\n  - or export "
                   "the model with a symbolic dim 0 (dynamic_axes in torch.onnx.export)");
  }
  if (no_inputs) {
    json list = json::array();
    if (MaybeProblem p = CompleteTensors(m, m.model_inputs, "input", max_batch_size, &list)) return p;
    (*config)["input"] = list;
    *changed = true;
  }
  if (no_outputs) {
    json list = json::array();
    if (MaybeProblem p = CompleteTensors(m, m.model_outputs, "output", max_batch_size, &list)) return p;
    (*config)["output"] = list;
    *changed = true;
  }
  return std::nullopt;
}

MaybeProblem SetConfig(TRITONBACKEND_Model* model, const json& config) {
  const std::string text = config.dump();
  TRITONSERVER_Message* message = nullptr;
  if (MaybeProblem p = Call(TRITONSERVER_MessageNewFromSerializedJson(&message, text.data(), text.size()),
                            "TRITONSERVER_MessageNewFromSerializedJson")) {
    return p;
  }
  MaybeProblem p = Call(TRITONBACKEND_ModelSetConfig(model, 1, message), "TRITONBACKEND_ModelSetConfig");
  TRITONSERVER_Error* e = TRITONSERVER_MessageDelete(message);
  if (e) TRITONSERVER_ErrorDelete(e);
  return p;
}

// ---- The configuration checked against the model -------------------------------------------

MaybeProblem ReadTensorConfigs(const ModelSettings& m, const json& config, const char* key, const char* kind,
                               std::vector<TensorConfig>* out) {
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  for (const json& j : *it) {
    TensorConfig t;
    t.name = j.value("name", "");
    const std::string type = j.value("data_type", "TYPE_INVALID");
    t.type = TypeByConfig(type);
    if (!t.type) {
      return Invalid(m.label + ": " + kind + " '" + t.name + "' of config.pbtxt has data_type " + type +
                     ", which the vigil backend does not serve");
    }
    if (j.contains("dims")) {
      for (const json& d : j["dims"]) t.dims.push_back(d.get<int64_t>());
    }
    if (j.contains("reshape") && j["reshape"].is_object()) {
      t.has_reshape = true;
      for (const json& d : j["reshape"].value("shape", json::array())) t.reshape.push_back(d.get<int64_t>());
    }
    out->push_back(std::move(t));
  }
  return std::nullopt;
}

std::string Names(const std::vector<ModelTensor>& tensors) {
  std::string s;
  for (const ModelTensor& t : tensors) s += (s.empty() ? "" : ", ") + Quoted(t.name) + " " + t.type_text;
  return s.empty() ? "none" : s;
}

MaybeProblem CheckTensor(const ModelSettings& m, const TensorConfig& c, const ModelTensor& t, const char* kind) {
  const std::string where = m.label + ": " + kind + " '" + c.name + "' of config.pbtxt";
  if (!t.type || t.type != c.type) {
    return Invalid(where + " has data_type " + c.type->config + ", the model's is " + t.type_text + "\n  model: " +
                   m.model_path + "\nfix:\n  - set data_type: " + (t.type ? t.type->config : "(none Triton has)") +
                   ", or remove the " + kind + "s from config.pbtxt to have them filled in");
  }
  if (!t.rank_known) return std::nullopt;  // vigil checks every request against what it infers
  std::vector<int64_t> seen = c.has_reshape ? c.reshape : c.dims;
  if (m.max_batch_size > 0) seen.insert(seen.begin(), -1);
  std::string expected_dims;
  for (size_t d = m.max_batch_size > 0 ? 1 : 0; d < t.dims.size(); ++d) {
    expected_dims += (expected_dims.empty() ? "" : ",") + std::to_string(t.dims[d]);
  }
  const std::string fix = "\nfix:\n  - write dims: [" + expected_dims + "] (" +
                          (m.max_batch_size > 0 ? "without the batch dim, as max_batch_size > 0"
                                                : "the full shape, as max_batch_size is 0") +
                          "; -1 where a dim varies), or remove the " + kind + "s to have them filled in";
  if (seen.size() != t.dims.size()) {
    return Invalid(where + " has dims " + ShapeText(c.has_reshape ? c.reshape : c.dims) + " (rank " +
                   std::to_string(seen.size()) + (m.max_batch_size > 0 ? " with the batch dim" : "") +
                   "), the model's is " + t.type_text + " (rank " + std::to_string(t.dims.size()) + ")" + fix);
  }
  for (size_t d = 0; d < seen.size(); ++d) {
    if (t.dims[d] != -1 && seen[d] != -1 && seen[d] != t.dims[d]) {
      return Invalid(where + ": dim " + std::to_string(d) + " is " + std::to_string(seen[d]) + ", the model's is " +
                     std::to_string(t.dims[d]) + " (" + t.type_text + ")" + fix);
    }
  }
  return std::nullopt;
}

MaybeProblem CheckAgainstModel(const ModelSettings& m, bool auto_complete) {
  if (m.max_batch_size < 0) return Invalid(m.label + ": max_batch_size is negative");
  if (m.max_batch_size > 0) {
    if (std::string why = WhyNotBatchable(m); !why.empty()) {
      return Invalid(m.label + ": max_batch_size is " + std::to_string(m.max_batch_size) +
                     ", but the model cannot take a batch along dim 0: " + why +
                     "\nfix:\n  - set max_batch_size: 0 (requests then carry the model's full shape)\n  - or export "
                     "the model with a symbolic dim 0 (dynamic_axes in torch.onnx.export)");
    }
  }
  if (m.inputs.empty() && !auto_complete) {
    return Invalid(m.label + ": config.pbtxt lists no inputs and auto-completion is off "
                             "(--disable-auto-complete-config)\n  model inputs: " +
                   Names(m.model_inputs) + "\nfix:\n  - list the inputs and outputs in config.pbtxt");
  }
  for (const TensorConfig& c : m.inputs) {
    auto t = std::find_if(m.model_inputs.begin(), m.model_inputs.end(),
                          [&](const ModelTensor& x) { return x.name == c.name; });
    if (t == m.model_inputs.end()) {
      return Invalid(m.label + ": input '" + c.name + "' of config.pbtxt is not an input of the model\n  model: " +
                     m.model_path + "\n  model inputs: " + Names(m.model_inputs) +
                     "\nfix:\n  - name the model's inputs in config.pbtxt, or remove them to have them filled in");
    }
    if (MaybeProblem p = CheckTensor(m, c, *t, "input")) return p;
  }
  for (const ModelTensor& t : m.model_inputs) {
    bool listed = std::any_of(m.inputs.begin(), m.inputs.end(), [&](const TensorConfig& c) { return c.name == t.name; });
    if (!listed) {
      return Invalid(m.label + ": the model's input '" + t.name + "' (" + t.type_text +
                     ") is not in config.pbtxt, so no request could give it\nfix:\n  - add it to the inputs of "
                     "config.pbtxt, or remove them all to have them filled in");
    }
  }
  for (const TensorConfig& c : m.outputs) {
    auto t = std::find_if(m.model_outputs.begin(), m.model_outputs.end(),
                          [&](const ModelTensor& x) { return x.name == c.name; });
    if (t == m.model_outputs.end()) {
      return Invalid(m.label + ": output '" + c.name + "' of config.pbtxt is not an output of the model\n  model: " +
                     m.model_path + "\n  model outputs: " + Names(m.model_outputs) +
                     "\nfix:\n  - name the model's outputs in config.pbtxt, or remove them to have them filled in");
    }
    if (MaybeProblem p = CheckTensor(m, c, *t, "output")) return p;
  }
  return std::nullopt;
}

}  // namespace

std::string AcceptedParameters() {
  std::string s;
  for (const ParameterSpec& spec : ParameterSpecs()) s += (s.empty() ? "" : ", ") + std::string(spec.key);
  return s;
}

MaybeProblem ParseBackendConfig(const std::string& text, BackendSettings* settings) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Problem{TRITONSERVER_ERROR_INTERNAL, "vigil backend: the backend config is not JSON"};
  auto cmdline = j.find("cmdline");
  if (cmdline == j.end() || !cmdline->is_object()) return std::nullopt;
  auto it = cmdline->find("default-max-batch-size");
  if (it != cmdline->end() && it->is_string()) {
    int value = 0;
    if (!ParseCount(it->get<std::string>(), &value)) {
      return Invalid("vigil backend: --backend-config default-max-batch-size is '" + it->get<std::string>() +
                     "'; it takes a whole number >= 0");
    }
    settings->default_max_batch_size = value;
  }
  return std::nullopt;
}

MaybeProblem LoadModelSettings(TRITONBACKEND_Model* model, const BackendSettings& backend, ModelSettings* m) {
  const char* name = nullptr;
  if (MaybeProblem p = Call(TRITONBACKEND_ModelName(model, &name), "TRITONBACKEND_ModelName")) return p;
  m->name = name ? name : "";
  if (MaybeProblem p = Call(TRITONBACKEND_ModelVersion(model, &m->version), "TRITONBACKEND_ModelVersion")) return p;
  m->label = "model '" + m->name + "' version " + std::to_string(m->version);
  TRITONBACKEND_ArtifactType artifact = TRITONBACKEND_ARTIFACT_FILESYSTEM;
  const char* location = nullptr;
  if (MaybeProblem p = Call(TRITONBACKEND_ModelRepository(model, &artifact, &location), "TRITONBACKEND_ModelRepository")) {
    return p;
  }
  if (artifact != TRITONBACKEND_ARTIFACT_FILESYSTEM || !location) {
    return Problem{TRITONSERVER_ERROR_UNSUPPORTED, m->label + ": the repository is not a folder on a filesystem"};
  }
  m->model_dir = location;

  json config;
  if (MaybeProblem p = ReadModelConfig(model, &config)) return p;
  if (MaybeProblem p = ParseParameters(config, *m, &m->session)) return p;
  if (MaybeProblem p = FindModelFile(config, m)) return p;
  if (MaybeProblem p = DescribeModel(m)) return p;

  bool auto_complete = false;
  if (MaybeProblem p = Call(TRITONBACKEND_ModelAutoCompleteConfig(model, &auto_complete),
                            "TRITONBACKEND_ModelAutoCompleteConfig")) {
    return p;
  }
  if (auto_complete) {
    bool changed = false;
    if (MaybeProblem p = AutoComplete(*m, backend, &config, &changed)) return p;
    if (changed) {
      if (MaybeProblem p = SetConfig(model, config)) return p;
      // Triton adds its defaults to what it takes; read back what it kept.
      if (MaybeProblem p = ReadModelConfig(model, &config)) return p;
      m->auto_completed = true;
    }
  }
  m->max_batch_size = config.value("max_batch_size", int64_t{0});
  if (MaybeProblem p = ReadTensorConfigs(*m, config, "input", "input", &m->inputs)) return p;
  if (MaybeProblem p = ReadTensorConfigs(*m, config, "output", "output", &m->outputs)) return p;
  return CheckAgainstModel(*m, auto_complete);
}

void MakeSessionOptions(const SessionSettings& s, bool gpu, int device_id, SessionOptionsHolder* h) {
  vigil_session_options_init(&h->options);
  h->backends.clear();
  if (gpu) {
    h->backends.push_back(VIGIL_BACKEND_CUDA);
    if (!s.no_fallback) h->backends.push_back(VIGIL_BACKEND_CPU);
  } else {
    h->backends.push_back(VIGIL_BACKEND_CPU);
  }
  vigil_session_options& o = h->options;
  o.backends = h->backends.data();
  o.backend_count = h->backends.size();
  o.device_id = gpu ? device_id : 0;
  o.allow_tf32 = s.allow_tf32;
  o.run_as_float16 = s.run_as_float16;
  o.allow_tf32x3 = s.allow_tf32x3;
  o.measure_first_run = s.measure_first_run;
  o.tf32x3_convolutions = s.tf32x3_convolutions;
  o.deterministic = s.deterministic;
  o.gpu_mem_limit = s.gpu_mem_limit;
  o.layout = s.layout;
  o.cuda_graphs = s.cuda_graphs;
  o.tune = s.tune;
  o.tuning_cache_file = s.tuning_cache_file.empty() ? nullptr : s.tuning_cache_file.c_str();
  o.cudnn_log_file = s.cudnn_log_file.empty() ? nullptr : s.cudnn_log_file.c_str();
  o.constant_folding = s.constant_folding;
  o.isolate = s.isolate;
  o.isolate_timeout_s = s.isolate_timeout_s;
  o.intra_op_num_threads = s.intra_op_num_threads;
}

}  // namespace vigil::triton
