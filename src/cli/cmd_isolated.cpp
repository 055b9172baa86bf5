// `vigil run --isolate`: the run in a child process (isolation/crash_guard.h),
// and the hidden `isolated-worker` command that child runs. This process
// reads the input files; the child loads the model and runs it.
#include <cstdio>

#include "api/c_api_internal.h"
#include "cli/tooling.h"
#include "isolation/crash_guard.h"

namespace vigil::cli {

int RunIsolatedModel(const IsolatedRunSpec& spec, std::vector<vigil_value*>& outputs) {
  auto inputs = ReadInputFiles(spec.inputs);
  if (!inputs.ok()) return ReportFailure(inputs.status(), spec.json);
  doctor::IsolatedRunRequest req;
  req.worker_argv = {"/proc/self/exe", "isolated-worker", spec.model_path};
  for (std::string& a : BackendArguments(spec.backend)) req.worker_argv.push_back(std::move(a));
  for (size_t i = 0; i < inputs->bindings.size(); ++i) {
    req.inputs.push_back({inputs->bindings[i].name, inputs->tensors[i]});
  }
  req.timeout_ms = static_cast<int>(spec.timeout_s * 1000);
  req.note = [](std::string_view text) { std::fprintf(stderr, "vigil: %.*s\n", static_cast<int>(text.size()), text.data()); };
  auto outs = doctor::RunIsolated(req);
  if (!outs.ok()) return ReportFailure(outs.status(), spec.json);
  for (runtime::NamedTensor& nt : *outs) {
    outputs.push_back(api::NewValue(nt.name, std::move(nt.tensor), nullptr));
  }
  return kExitOk;
}

Command AddIsolatedWorkerCommand(CLI::App& parent) {
  struct WorkerOptions {
    std::string model_path;
    BackendChoice backend;
    std::string fds;
  };
  auto opt = std::make_shared<WorkerOptions>();
  // Not for people: the group "" hides it from --help.
  CLI::App* sub = parent.add_subcommand("isolated-worker", "the child process of `run --isolate`")->group("");
  sub->add_option("MODEL", opt->model_path)->required();
  AddBackendOptions(sub, opt->backend);
  sub->add_option("--isolated-fds", opt->fds)->required();
  return {sub, [opt] {
            auto fds = doctor::ParseIsolatedChildFds(opt->fds);
            if (!fds) return ReportFailure(InvalidInputError("--isolated-fds '{}' is not C,I,O", opt->fds), false);
            return doctor::ServeIsolatedRun(*fds, [&opt] { return LoadSession(opt->model_path, opt->backend); });
          }};
}

}  // namespace vigil::cli
