#include "api/isolated_session.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/session_factory.h"
#include "backends/module/backend_module.h"
#include "base/mapped_file.h"
#include "isolation/crash_guard.h"

namespace vigil::api {
namespace {

constexpr const char* kWorkerName = "vigil-worker";
// The child's descriptor of a model from memory (crash_guard passes it as
// the first of IsolatedRunRequest::pass_fds).
constexpr const char* kChildModelPath = "/proc/self/fd/6";

Result<std::string> FindWorker() {
  std::vector<std::string> candidates = WorkerCandidates();
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  std::string searched;
  for (const std::string& c : candidates) searched += (searched.empty() ? "" : ", ") + c;
  return std::move(EnvironmentError("isolate is on, but the worker executable {} was not found", kWorkerName)
                       .WithFact("searched", searched)
                       .WithCause("vigil-worker was not installed next to libvigil.so (it belongs in "
                                  "<libdir>/vigil/, beside the CUDA module)")
                       .WithFix("install vigil completely (`cmake --install`), or leave isolate off"));
}

Status KeepModelBytes(const ir::Model& model, IsolatedModel& out) {
  if (!model.file) return InternalError("a model from memory has no bytes to hand to the isolated worker");
  VIGIL_ASSIGN_OR_RETURN(out.model_fd, ModelBytesInMemfd(model.file->bytes()));
  return Status::Ok();
}

doctor::IsolatedRunRequest Request(const IsolatedModel& m, bool load_only, std::vector<std::string>& notes) {
  doctor::IsolatedRunRequest req;
  req.worker_argv = {m.worker_path, "--model", m.model_fd >= 0 ? kChildModelPath : m.model_path, "--config",
                     EncodeConfig(m.config)};
  if (load_only) req.worker_argv.push_back("--load-only");
  if (m.model_fd >= 0) req.pass_fds.push_back(m.model_fd);
  req.timeout_ms = static_cast<int>(m.config.isolate_timeout_s * 1000);
  req.note = [&notes](std::string_view text) { notes.emplace_back(text); };
  return req;
}

Status WithNotes(Status status, const std::vector<std::string>& notes) {
  for (const std::string& n : notes) status.WithFact("isolated run", n);
  return status;
}

}  // namespace

IsolatedModel::~IsolatedModel() {
  if (model_fd >= 0) ::close(model_fd);
}

std::vector<std::string> WorkerCandidates() {
  std::vector<std::string> v = backends::InstalledFileCandidates(kWorkerName);
#ifdef VIGIL_BUILD_WORKER_DIR
  v.push_back(std::string(VIGIL_BUILD_WORKER_DIR) + "/" + kWorkerName);
#endif
  return v;
}

Result<std::shared_ptr<IsolatedModel>> CreateIsolated(const ir::Model& model, bool from_memory,
                                                      const SessionConfig& config) {
  auto m = std::make_shared<IsolatedModel>();
  VIGIL_ASSIGN_OR_RETURN(m->worker_path, FindWorker());
  m->config = config;
  m->config.isolate = false;  // what the worker does with it
  if (from_memory) {
    VIGIL_RETURN_IF_ERROR(KeepModelBytes(model, *m));
  } else {
    std::error_code ec;  // the caller may change its folder between runs
    auto absolute = std::filesystem::absolute(model.path, ec);
    m->model_path = ec ? model.path : absolute.string();
  }
  m->inputs = runtime::ListModelInputs(model.graph);
  m->outputs = model.graph.outputs;

  std::vector<std::string> notes;
  auto loaded = doctor::RunIsolated(Request(*m, /*load_only=*/true, notes));
  if (!loaded.ok()) return WithNotes(std::move(loaded).TakeStatus(), notes);
  for (const runtime::NamedTensor& t : *loaded) {
    if (t.name != "backends" || t.tensor.dtype() != ir::DataType::kUint8) continue;
    const auto* p = static_cast<const char*>(t.tensor.raw_data());
    std::string list(p, p + t.tensor.byte_size());
    for (size_t at = 0; at < list.size();) {
      size_t comma = list.find(',', at);
      if (comma == std::string::npos) comma = list.size();
      if (comma > at) m->backends.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  if (m->backends.empty()) return InternalError("the isolated worker loaded the model but named no backend");
  return m;
}

Result<std::vector<runtime::NamedTensor>> RunIsolatedSession(const IsolatedModel& m,
                                                             std::vector<runtime::InputBinding> bindings) {
  for (const runtime::InputBinding& b : bindings) {
    if (b.device != runtime::Device::kHost) {
      return UnsupportedError("input '{}' is in device memory, but an isolated session runs in another process",
                              b.name)
          .WithFix("pass host memory (a numpy array, a host pointer), or leave isolate off to bind device memory");
    }
  }
  VIGIL_RETURN_IF_ERROR(runtime::ValidateInputs(m.inputs, bindings).status());
  std::vector<std::string> notes;
  doctor::IsolatedRunRequest req = Request(m, /*load_only=*/false, notes);
  for (const runtime::InputBinding& b : bindings) {
    // ValidateInputs resolved positional bindings to names and checked sizes.
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Allocate(b.dtype, b.shape));
    if (b.byte_size > 0) std::memcpy(t.raw_data(), b.data, b.byte_size);
    req.inputs.push_back({b.name, std::move(t)});
  }
  auto outputs = doctor::RunIsolated(req);
  if (!outputs.ok()) return WithNotes(std::move(outputs).TakeStatus(), notes);
  return outputs;
}

std::string EncodeConfig(const SessionConfig& c) {
  nlohmann::json backends = nlohmann::json::array();
  for (BackendKind b : c.backends) backends.push_back(b == BackendKind::kCuda ? "cuda" : "cpu");
  nlohmann::json j = {{"backends", backends},
                      {"device_id", c.device_id},
                      {"allow_tf32", c.allow_tf32},
                      {"deterministic", c.deterministic},
                      {"gpu_mem_limit", c.gpu_mem_limit},
                      {"layout", c.layout == runtime::ConvLayout::kAsModel ? "nchw" : "auto"},
                      {"cuda_graphs", c.cuda_graphs},
                      {"cudnn_log_file", c.cudnn_log_file},
                      {"tune", c.tune},
                      {"tuning_cache_file", c.tuning_cache_file},
                      {"constant_folding", c.constant_folding},
                      {"cuda_module_path", c.cuda_module_path},
                      {"enable_profiling", c.enable_profiling},
                      {"intra_op_num_threads", c.intra_op_num_threads},
                      {"run_as_float16", c.run_as_float16},
                      {"allow_tf32x3", c.allow_tf32x3},
                      {"measure_first_run", c.measure_first_run},
                      {"tf32x3_convolutions", c.tf32x3_convolutions}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Result<SessionConfig> DecodeConfig(std::string_view text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidInputError("the isolated worker's --config is not a JSON object");
  SessionConfig c;
  try {
    for (const auto& b : j.at("backends")) {
      const std::string name = b.get<std::string>();
      if (name != "cuda" && name != "cpu") return InvalidInputError("--config names backend '{}'", name);
      c.backends.push_back(name == "cuda" ? BackendKind::kCuda : BackendKind::kCpu);
    }
    c.device_id = j.at("device_id").get<int>();
    c.allow_tf32 = j.at("allow_tf32").get<bool>();
    c.deterministic = j.at("deterministic").get<bool>();
    c.gpu_mem_limit = j.at("gpu_mem_limit").get<uint64_t>();
    c.layout = j.at("layout").get<std::string>() == "nchw" ? runtime::ConvLayout::kAsModel
                                                            : runtime::ConvLayout::kNhwcWhereFaster;
    c.cuda_graphs = j.at("cuda_graphs").get<bool>();
    c.cudnn_log_file = j.at("cudnn_log_file").get<std::string>();
    c.tune = j.at("tune").get<bool>();
    c.tuning_cache_file = j.at("tuning_cache_file").get<std::string>();
    c.constant_folding = j.at("constant_folding").get<bool>();
    c.cuda_module_path = j.at("cuda_module_path").get<std::string>();
    c.enable_profiling = j.at("enable_profiling").get<bool>();
    c.intra_op_num_threads = j.at("intra_op_num_threads").get<int>();
    c.run_as_float16 = j.at("run_as_float16").get<bool>();
    c.allow_tf32x3 = j.at("allow_tf32x3").get<bool>();
    c.measure_first_run = j.at("measure_first_run").get<bool>();
    c.tf32x3_convolutions = j.at("tf32x3_convolutions").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return InvalidInputError("the isolated worker's --config is incomplete: {}", e.what());
  }
  return c;
}

}  // namespace vigil::api
