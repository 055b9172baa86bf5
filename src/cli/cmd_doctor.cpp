// `vigil doctor`: checks the GPU software stack and explains what is wrong.
#include <unistd.h>

#include <cstdio>

#include "cli/tooling.h"
#include "doctor/doctor.h"

namespace vigil::cli {
namespace {

struct DoctorFlags {
  bool json = false;
  bool no_live_check = false;
  std::string binary;
  std::vector<std::string> lib_dirs;
  // Hidden: the live check re-executes `vigil doctor --child-probe ...`.
  bool child_probe = false;
  doctor::LiveCheckChildArgs child;
};

constexpr const char* kDescription =
    "Check the GPU software stack: the NVIDIA driver, the CUDA runtime, cuDNN and each of its\n"
    "sub-libraries, cuBLAS and cuBLASLt, and the GPUs. For each library it shows the version (from\n"
    "the library's own API), the file it was loaded from, its build-id, and other copies on the\n"
    "search path. Then it checks that they fit together (driver vs runtime, cuDNN vs CUDA major,\n"
    "sub-library versions, GPU compute capability, CUDNN_LIB_CONFIG, logging variables,\n"
    "CUDA_VISIBLE_DEVICES) and runs cudnnCreate plus a tiny convolution in a child process.\n"
    "Works without a GPU or driver: it then says what blocks GPU use.\n"
    "\n"
    "The first line is the verdict: \"N error(s): <first error> — fix: <its fix>\", \"no errors, N\n"
    "warning(s): ...\" or \"no problems found\"; then the table, then every finding in full\n"
    "(--json: the same verdict in \"summary\", the first key).\n"
    "\n"
    "Exit codes: 0 no errors (warnings allowed), 1 at least one error finding, 2 usage error.\n"
    "\n"
    "Examples:\n"
    "  vigil doctor\n"
    "  vigil doctor --json > stack.json\n"
    "  vigil doctor --binary /path/to/libonnxruntime_providers_cuda.so\n"
    "  vigil doctor --lib-dir ~/venv/lib/python3.11/site-packages/nvidia/cudnn/lib\n"
    "Finding ids and the JSON schema: docs/doctor.md";

int Run(const DoctorFlags& flags) {
  if (flags.child_probe) return doctor::RunLiveCheckChild(flags.child);
  doctor::DoctorOptions options;
  options.probe.lib_dirs = flags.lib_dirs;
  options.live_check = !flags.no_live_check;
  if (!flags.binary.empty()) options.binary = flags.binary;
  doctor::DoctorReport report = doctor::RunDoctor(options);
  if (flags.json) {
    std::string text = doctor::RenderReportJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    std::fprintf(stdout, "%s\n", text.c_str());
  } else {
    std::string text = doctor::RenderReportText(report, isatty(STDOUT_FILENO) != 0);
    std::fputs(text.c_str(), stdout);
  }
  return doctor::DoctorExitCode(report) == 0 ? kExitOk : kExitDiagnosed;
}

}  // namespace

Command AddDoctorCommand(CLI::App& parent) {
  CLI::App* sub = parent.add_subcommand("doctor", "Check the GPU software stack and explain what is wrong");
  sub->description(kDescription);
  auto flags = std::make_shared<DoctorFlags>();
  sub->add_flag("--json", flags->json, "Print the report as JSON (schema in docs/doctor.md)");
  sub->add_option("--binary", flags->binary,
                  "Also resolve every library FILE needs, the way the dynamic loader would "
                  "(e.g. an ONNX Runtime CUDA provider or libtorch_cuda.so)")
      ->check(CLI::ExistingFile);
  sub->add_option("--lib-dir", flags->lib_dirs,
                  "Load the libraries from these folders instead of the loader's search path "
                  "(repeatable; to check a folder before putting it on LD_LIBRARY_PATH)");
  sub->add_flag("--no-live-check", flags->no_live_check, "Skip the cudnnCreate + convolution check");
  // Internal: the live check's child process. Hidden from --help (empty group).
  sub->add_flag("--child-probe", flags->child_probe)->group("");
  sub->add_option("--cudnn", flags->child.cudnn_path)->group("");
  sub->add_option("--cudart", flags->child.cudart_path)->group("");
  sub->add_option("--result-fd", flags->child.result_fd)->group("");
  return {sub, [flags] { return Run(*flags); }};
}

}  // namespace vigil::cli
