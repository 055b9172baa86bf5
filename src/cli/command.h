// The `vigil` command: each subcommand lives in its own file and is added to
// the app by an Add*Command function listed in main.cpp (no self-registration).
//
// Exit codes, for every command: 0 success, 1 a diagnosed problem with the
// model, input or environment, 2 usage error, 3 internal error.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "runtime/input_binding.h"
#include "runtime/session.h"
#include "runtime/tensor.h"

namespace vigil::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitDiagnosed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;

// Runs a parsed subcommand and returns the exit code.
using CommandRun = std::function<int()>;

struct Command {
  CLI::App* app = nullptr;  // the subcommand, owned by the parent app
  CommandRun run;
};

Command AddInspectCommand(CLI::App& parent);
Command AddDoctorCommand(CLI::App& parent);
Command AddRunCommand(CLI::App& parent);
Command AddCheckCommand(CLI::App& parent);
Command AddBenchCommand(CLI::App& parent);
Command AddCompareCommand(CLI::App& parent);
Command AddReduceCommand(CLI::App& parent);

// Where and how a command runs the model: --backend, --no-fallback, --tf32,
// --deterministic, --gpu-mem-limit, --device.
struct BackendChoice {
  std::string backend = "cpu";
  bool no_fallback = false;
  bool tf32 = false;
  bool deterministic = false;
  std::string gpu_mem_limit;  // "512M", "2G", bytes; empty = free memory
  int device = 0;
  std::string cudnn_log;  // file for cuDNN's API log (CUDNN_LOGLEVEL_DBG=3), set before the module loads
  std::string layout = "auto";  // auto: fp16/bf16 convolutions run NHWC on cuda; nchw: as the model says
  bool device_graphs = false;   // record runs as CUDA graphs and replay them (bench --cuda-graphs on)
  bool tune = false;            // autotuning: measure candidate algorithms of new problems
  std::string tuning_cache;     // file of recorded algorithm choices (read; appended to with --tune)
};
void AddBackendOptions(CLI::App* sub, BackendChoice& choice);
// The same choice as command-line arguments (for the isolated worker).
std::vector<std::string> BackendArguments(const BackendChoice& choice);

// Reads and validates MODEL and creates a session on the chosen backend
// (cuda: the module is loaded, the CPU backend is the fallback unless
// --no-fallback). Defined in session_loader.cpp.
Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const BackendChoice& choice);
Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const std::string& backend);

// Input files given as `--input NAME=FILE` or `--input FILE` (bound by
// position), read and described as bindings; `tensors` keeps their data alive.
// Shared by run and check; defined in cmd_run.cpp.
struct InputFiles {
  std::vector<runtime::Tensor> tensors;
  std::vector<runtime::InputBinding> bindings;
};
Result<InputFiles> ReadInputFiles(const std::vector<std::string>& specs);
// The `--input,-i NAME=FILE | FILE` option of run, check and bench.
void AddInputFilesOption(CLI::App* sub, std::vector<std::string>& specs);

// Prints a failing status (text on stderr, or JSON on stdout) and returns its
// exit code.
int ReportFailure(const Status& status, bool json);

}  // namespace vigil::cli
