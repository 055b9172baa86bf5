#include "doctor/probe/snapshot.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace vigil::doctor {

const Component* StackSnapshot::Find(const std::string& id) const {
  for (const Component& c : components) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

Component* StackSnapshot::Find(const std::string& id) {
  return const_cast<Component*>(static_cast<const StackSnapshot*>(this)->Find(id));
}

std::optional<std::string> StackSnapshot::Env(const std::string& name) const {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

bool StackSnapshot::OnLdLibraryPath(const std::string& dir) const {
  return std::find(ld_library_path_dirs.begin(), ld_library_path_dirs.end(), dir) != ld_library_path_dirs.end();
}

const std::vector<std::string>& CudnnSubLibraries(int cudnn_major) {
  // cuDNN 9 sub-libraries (FACTS.md, "The cuDNN 9.0 release"), graph first
  // because every other one depends on it.
  static const std::vector<std::string> kV9 = {"graph", "engines_precompiled", "engines_runtime_compiled",
                                               "heuristic", "ops", "cnn", "adv"};
  // cuDNN 8 sub-libraries (FACTS.md, "cuDNN 8's sub-libraries").
  static const std::vector<std::string> kV8 = {"ops_infer", "ops_train", "cnn_infer",
                                               "cnn_train", "adv_infer", "adv_train"};
  static const std::vector<std::string> kNone;
  if (cudnn_major >= 9) return kV9;
  if (cudnn_major == 8) return kV8;
  return kNone;
}

std::string SubLibraryId(const std::string& sub) { return "cudnn_" + sub; }

// JSON: versions are strings ("9.14.0") or null, so that machines see the same
// text people do.
void to_json(nlohmann::json& j, const Version& v) {
  j = v.known() ? nlohmann::json(v.ToString()) : nlohmann::json(nullptr);
}

void from_json(const nlohmann::json& j, Version& v) {
  v = j.is_string() ? ParseDottedVersion(j.get<std::string>()).value_or(Version{}) : Version{};
}

void to_json(nlohmann::json& j, const LibraryCopy& c) {
  j = {{"path", c.path}, {"version", c.version}, {"version_source", c.version_source},
       {"cuda_version", c.cuda_version}};
}

void from_json(const nlohmann::json& j, LibraryCopy& c) {
  c.path = j.value("path", "");
  c.version = j.value("version", Version{});
  c.version_source = j.value("version_source", "");
  c.cuda_version = j.value("cuda_version", int64_t{-1});
}

void to_json(nlohmann::json& j, const Component& c) {
  j = {{"id", c.id},
       {"file", c.file},
       {"found", c.found},
       {"load_error", c.load_error},
       {"path", c.path},
       {"build_id", c.build_id},
       {"version", c.version},
       {"version_source", c.version_source},
       {"version_text", c.version_text.empty() ? c.version.ToString() : c.version_text},
       {"version_check_status", c.version_check_status ? nlohmann::json(*c.version_check_status) : nullptr},
       {"version_check_name", c.version_check_name},
       {"copies", c.copies}};
}

void from_json(const nlohmann::json& j, Component& c) {
  c.id = j.value("id", "");
  c.file = j.value("file", "");
  c.found = j.value("found", false);
  c.load_error = j.value("load_error", "");
  c.path = j.value("path", "");
  c.build_id = j.value("build_id", "");
  c.version = j.value("version", Version{});
  c.version_source = j.value("version_source", "");
  c.version_text = j.value("version_text", "");
  if (j.contains("version_check_status") && j["version_check_status"].is_number()) {
    c.version_check_status = j["version_check_status"].get<int64_t>();
  }
  c.version_check_name = j.value("version_check_name", "");
  c.copies = j.value("copies", std::vector<LibraryCopy>{});
}

void to_json(nlohmann::json& j, const Gpu& g) {
  j = {{"index", g.index},
       {"name", g.name},
       {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
       {"cc_major", g.cc_major},
       {"cc_minor", g.cc_minor},
       {"total_memory", g.total_memory},
       {"free_memory", g.free_memory},
       {"error", g.error}};
}

void from_json(const nlohmann::json& j, Gpu& g) {
  g.index = j.value("index", 0);
  g.name = j.value("name", "");
  g.cc_major = j.value("cc_major", 0);
  g.cc_minor = j.value("cc_minor", 0);
  g.total_memory = j.value("total_memory", int64_t{-1});
  g.free_memory = j.value("free_memory", int64_t{-1});
  g.error = j.value("error", "");
}

void to_json(nlohmann::json& j, const StackSnapshot& s) {
  j = {{"components", s.components},
       {"driver_cuda_version", s.driver_cuda_version},
       {"driver_release", s.driver_release},
       {"cudart_version", s.cudart_version},
       {"cudnn_version", s.cudnn_version},
       {"cudnn_cudart_version", s.cudnn_cudart_version},
       {"cudnn_max_device_version", s.cudnn_max_device_version},
       {"cublaslt_version", s.cublaslt_version},
       {"gpus", s.gpus},
       {"gpu_query_ran", s.gpu_query_ran},
       {"gpu_query_error", s.gpu_query_error},
       {"physical_gpu_count", s.physical_gpu_count},
       {"env", s.env},
       {"logdest_writable", s.logdest_writable ? nlohmann::json(*s.logdest_writable) : nullptr},
       {"logdest_error", s.logdest_error},
       {"cudnn_static_archives", s.cudnn_static_archives},
       {"probe_error", s.probe_error},
       {"ld_library_path_dirs", s.ld_library_path_dirs}};
}

void from_json(const nlohmann::json& j, StackSnapshot& s) {
  s.components = j.value("components", std::vector<Component>{});
  s.driver_cuda_version = j.value("driver_cuda_version", int64_t{-1});
  s.driver_release = j.value("driver_release", "");
  s.cudart_version = j.value("cudart_version", int64_t{-1});
  s.cudnn_version = j.value("cudnn_version", int64_t{-1});
  s.cudnn_cudart_version = j.value("cudnn_cudart_version", int64_t{-1});
  s.cudnn_max_device_version = j.value("cudnn_max_device_version", int64_t{-1});
  s.cublaslt_version = j.value("cublaslt_version", int64_t{-1});
  s.gpus = j.value("gpus", std::vector<Gpu>{});
  s.gpu_query_ran = j.value("gpu_query_ran", false);
  s.gpu_query_error = j.value("gpu_query_error", "");
  s.physical_gpu_count = j.value("physical_gpu_count", -1);
  s.env = j.value("env", std::map<std::string, std::string>{});
  if (j.contains("logdest_writable") && j["logdest_writable"].is_boolean()) {
    s.logdest_writable = j["logdest_writable"].get<bool>();
  }
  s.logdest_error = j.value("logdest_error", "");
  s.cudnn_static_archives = j.value("cudnn_static_archives", std::vector<std::string>{});
  s.probe_error = j.value("probe_error", "");
  s.ld_library_path_dirs = j.value("ld_library_path_dirs", std::vector<std::string>{});
}

}  // namespace vigil::doctor
