#include "cli/tooling.h"

#include <cstdio>

#include "api/c_api_internal.h"
#include "api/session_factory.h"
#include "base/diagnosis_render.h"
#include "runtime/tensor_file.h"

namespace vigil::cli {

Result<api::SessionConfig> ToSessionConfig(const BackendChoice& choice) {
  // The same options the user commands pass through the public API.
  return api::ConfigFromOptions(ToCSessionOptions(choice).get());
}

Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const BackendChoice& choice) {
  VIGIL_ASSIGN_OR_RETURN(api::SessionConfig config, ToSessionConfig(choice));
  VIGIL_ASSIGN_OR_RETURN(api::AssembledSession assembled, api::AssembleSession(model_path, config));
  return std::move(assembled.session);
}

Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const std::string& backend) {
  BackendChoice choice;
  choice.backend = backend;
  return LoadSession(model_path, choice);
}

Result<InputFiles> ReadInputFiles(const std::vector<std::string>& specs) {
  InputFiles files;
  files.tensors.reserve(specs.size());
  for (const std::string& spec : specs) {
    auto [name, path] = SplitInputSpec(spec);
    auto file = runtime::ReadTensorFile(path);
    if (!file.ok()) {
      Status s = file.status();
      if (!name.empty()) s.WithContext(fmt::format("input '{}'", name));
      return s;
    }
    runtime::Tensor& t = files.tensors.emplace_back(std::move(file->tensor));
    files.bindings.push_back(runtime::InputBinding{name, t.dtype(), t.shape(), t.raw_data(), t.byte_size(), path});
  }
  return files;
}

int ReportFailure(const Status& status, bool json) {
  if (status.ok()) return kExitOk;
  if (json) {
    std::string text = ToJson(status).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::fprintf(stdout, "%s\n", text.c_str());
  } else {
    std::string text = RenderText(status.diagnosis());
    std::fprintf(stderr, "%s", text.c_str());
  }
  return ExitCodeFor(status);
}

}  // namespace vigil::cli
