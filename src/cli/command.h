// The `vigil` command: each subcommand lives in its own file and is added to
// the app by an Add*Command function listed in main.cpp (no self-registration).
//
// This header is shared by the user-facing commands (run, check, bench,
// inspect), which are clients of the public API and compiled without src/ on
// their include path (CMakeLists.txt), and by the tooling commands. So it
// includes nothing of the library's internals.
//
// Exit codes, for every command: 0 success, 1 a diagnosed problem with the
// model, input or environment, 2 usage error, 3 internal error.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "vigil/vigil.h"

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
// --deterministic, --gpu-mem-limit, --device, ...
struct BackendChoice {
  std::string backend = "cpu";
  bool no_fallback = false;
  bool tf32 = false;
  bool fp16 = false;            // compute a float32 model in float16 (run_as_float16)
  bool no_tf32x3 = false;       // float32 products on CUDA cores only (allow_tf32x3 = false)
  bool no_measure_first_run = false;  // every operation on the library's first pick (measure_first_run = false)
  bool tf32x3_convs = false;    // float32 convolutions as 3xTF32 (tf32x3_convolutions)
  bool deterministic = false;
  std::string gpu_mem_limit;  // "512M", "2G", bytes; empty = free memory
  int device = 0;
  std::string cudnn_log;  // file for cuDNN's API log (CUDNN_LOGLEVEL_DBG=3), set before the module loads
  std::string layout = "auto";  // auto: fp16/bf16 convolutions run NHWC on cuda; nchw: as the model says
  bool device_graphs = false;   // record runs as CUDA graphs and replay them (bench --cuda-graphs on)
  bool tune = false;            // autotuning: measure candidate algorithms of new problems
  std::string tuning_cache;     // file of recorded algorithm choices (read; appended to with --tune)
  bool profiling = false;       // synchronise after every device node (bench --profile)
  int threads = 0;              // the CPU backend's threads per node (intra_op_num_threads; 0: every core)
};
// Adds the options; --gpu-mem-limit is checked when parsed (usage error).
void AddBackendOptions(CLI::App* sub, BackendChoice& choice);
// The choice as the C API's session options (what the user commands pass,
// see user_io.h's ToSessionOptions), for the tooling commands, which cannot
// include vigil.hpp beside the library's internals. The pointer owns its
// strings and backend list.
std::shared_ptr<const vigil_session_options> ToCSessionOptions(const BackendChoice& choice);
// "512M", "2G", "1.5G", "1000000" -> bytes; false if it is not a size.
bool ParseByteSize(const std::string& text, uint64_t* bytes);
// For an option holding a size: a usage error when parsed, whether or not the
// option is used by the rest of the command line (--gpu-mem-limit without
// --backend cuda is still checked).
CLI::Validator ByteSizeValidator();

// The `--input,-i NAME=FILE | FILE` option of run, check and bench.
void AddInputFilesOption(CLI::App* sub, std::vector<std::string>& specs);
// NAME=FILE, unless the whole spec names an existing file (paths may hold
// '='): {name, path}, name empty for positional.
std::pair<std::string, std::string> SplitInputSpec(const std::string& spec);

}  // namespace vigil::cli
