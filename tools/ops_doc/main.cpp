// vigil-ops-doc: writes docs/ops.md from the op catalogue and the kernel
// tables, or checks that it is up to date (the ctest ops_doc_up_to_date).
//
//   vigil-ops-doc --cuda-module LIB --output docs/ops.md
//   vigil-ops-doc --cuda-module LIB --check docs/ops.md --generated TMP
//
// Without --cuda-module (a build without nvcc or cuDNN 9, so no CUDA module)
// it refuses rather than write an empty CUDA column; in --check mode it then
// exits 77, which the test reports as skipped.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "base/diagnosis_render.h"
#include "cuda_table.h"
#include "op_table.h"

namespace {

constexpr int kSkipped = 77;

struct Args {
  std::string cuda_module;
  std::string output;     // write the doc here
  std::string check;      // compare the doc here with a fresh one
  std::string generated;  // --check: where the fresh one is written (for diff)
};

int Usage(const char* error) {
  std::fprintf(stderr,
               "vigil-ops-doc: %s\n"
               "usage: vigil-ops-doc --cuda-module LIB (--output FILE | --check FILE [--generated FILE])\n",
               error);
  return 2;
}

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

// The first line where `a` and `b` differ (1-based), with both lines.
std::string FirstDifference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (size_t line = 1;; ++line) {
    bool ha = static_cast<bool>(std::getline(sa, la)), hb = static_cast<bool>(std::getline(sb, lb));
    if (!ha && !hb) return "they differ only in line endings";
    if (!ha || !hb || la != lb) {
      return "first difference at line " + std::to_string(line) + ":\n  in the file:   " +
             (ha ? la : "(end of file)") + "\n  from the code: " + (hb ? lb : "(end of file)");
    }
  }
}

int Check(const Args& args, const std::string& doc) {
  if (!args.generated.empty() && !WriteFile(args.generated, doc)) {
    std::fprintf(stderr, "vigil-ops-doc: cannot write %s\n", args.generated.c_str());
    return 2;
  }
  std::string current;
  if (!ReadFile(args.check, &current)) current.clear();
  if (current == doc) {
    std::printf("%s is up to date\n", args.check.c_str());
    return 0;
  }
  std::fprintf(stderr,
               "%s is out of date: it differs from what the op catalogue and the kernel tables say.\n%s\n"
               "Regenerate it with `%s` (from the source tree, with your build directory) and commit it.\n",
               args.check.c_str(), FirstDifference(current, doc).c_str(), vigil::opsdoc::kRegenerateCommand);
  if (!args.generated.empty()) {
    std::fprintf(stderr, "All differences: diff -u %s %s\n", args.check.c_str(), args.generated.c_str());
  }
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string* target = a == "--cuda-module" ? &args.cuda_module
                          : a == "--output"    ? &args.output
                          : a == "--check"     ? &args.check
                          : a == "--generated" ? &args.generated
                                               : nullptr;
    if (target == nullptr) return Usage(("unknown argument " + std::string(a)).c_str());
    if (i + 1 >= argc) return Usage(("missing value after " + std::string(a)).c_str());
    *target = argv[++i];
  }
  if (args.output.empty() == args.check.empty()) return Usage("give one of --output and --check");
  if (args.cuda_module.empty()) {
    std::fprintf(stderr,
                 "vigil-ops-doc: the CUDA module (libvigil_cuda.so) is not built in this build tree (cmake found no "
                 "nvcc or no cuDNN 9), so the CUDA column of docs/ops.md cannot be written from the code. "
                 "Regenerate or check docs/ops.md in a build with the CUDA module (no GPU is needed).\n");
    return args.check.empty() ? 2 : kSkipped;
  }
  auto cuda = vigil::opsdoc::ReadCudaKernelTable(args.cuda_module);
  if (!cuda.ok()) {
    std::fprintf(stderr, "vigil-ops-doc: %s\n", vigil::RenderText(cuda.status().diagnosis()).c_str());
    return 2;
  }
  std::string doc =
      vigil::opsdoc::RenderMarkdown(vigil::opsdoc::CollectRows(*cuda), vigil::opsdoc::MissingOnnxOperators());
  if (!args.check.empty()) return Check(args, doc);
  if (!WriteFile(args.output, doc)) {
    std::fprintf(stderr, "vigil-ops-doc: cannot write %s\n", args.output.c_str());
    return 2;
  }
  std::printf("wrote %s\n", args.output.c_str());
  return 0;
}
