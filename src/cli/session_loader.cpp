// Model → validated Session with the requested backend, shared by the
// commands that run models.
#include "backends/cpu/cpu_backend.h"
#include "cli/command.h"
#include "ir/validate.h"
#include "onnx/reader.h"

namespace vigil::cli {

Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const std::string& backend) {
  if (backend != "cpu") {
    return UnsupportedError("cannot run on backend '{}': the CUDA backend is not built yet", backend)
        .WithFact("backends available", "cpu")
        .WithFix("run with --backend cpu");
  }
  VIGIL_ASSIGN_OR_RETURN(ir::Model model, onnx::ReadModel(model_path));
  Status valid = ir::ValidateModel(model);
  if (!valid.ok()) return valid.WithFact("model", model_path);
  runtime::SessionOptions options;
  options.backends.push_back(cpu::MakeCpuBackend());
  auto session = runtime::Session::Create(std::move(model), std::move(options));
  if (!session.ok()) return std::move(session).TakeStatus().WithFact("model", model_path);
  return session;
}

}  // namespace vigil::cli
