// ONNX conformance: runs the test cases of Debian's libonnx-testdata (model.onnx
// + test_data_set_*/input_*.pb, output_*.pb) through a vigil session and
// compares with the stored outputs.
//
//   vigil_conformance [--root DIR] [--suite NAME]... [--filter SUBSTR]
//                     [--known FILE] [--backend cpu|cuda] [--verbose]
//
// With --backend cuda every node must run on the GPU (no fallback); tests
// that use what the CUDA backend does not claim are counted "not on device"
// with the reason (--verbose lists them), and the known failures come from
// known_failures_cuda.txt unless --known is given.
//
// Every test is one of: pass; out of scope (an op listed as out of scope in
// the known-failures file); a known failure (listed by name, with a reason);
// or an unexpected failure. Exit 1 on any unexpected failure, and on any
// known failure that now passes (the list only shrinks: remove it).
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/module/backend_module.h"
#include "conformance_case.h"

namespace fs = std::filesystem;
using namespace vigil::conformance;

namespace {

struct Options {
  std::string root = "/usr/include/onnx/backend/test/data";
  std::vector<std::string> suites;
  std::string filter;
  std::string known;
  std::string backend = "cpu";
  bool verbose = false;
};

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--root") o.root = value();
    else if (a == "--suite") o.suites.push_back(value());
    else if (a == "--filter") o.filter = value();
    else if (a == "--known") o.known = value();
    else if (a == "--backend") o.backend = value();
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else {
      std::fprintf(stderr, "usage: vigil_conformance [--root DIR] [--suite NAME]... [--filter SUBSTR] "
                           "[--known FILE] [--backend cpu|cuda] [--verbose]\n");
      return false;
    }
  }
  if (o.suites.empty()) o.suites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  if (o.backend != "cpu" && o.backend != "cuda") {
    std::fprintf(stderr, "--backend must be cpu or cuda\n");
    return false;
  }
  if (o.known.empty()) o.known = o.backend == "cuda" ? VIGIL_KNOWN_FAILURES_CUDA : VIGIL_KNOWN_FAILURES;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!ParseArgs(argc, argv, opt)) return 2;
  if (!fs::is_directory(opt.root)) {
    std::printf("SKIP: %s is absent (apt-get install libonnx-testdata)\n", opt.root.c_str());
    return 77;
  }
  std::shared_ptr<const vigil::runtime::Backend> device;
  if (opt.backend == "cuda") {
    auto loaded = vigil::backends::LoadCudaBackend({});
    if (!loaded.ok()) {
      std::printf("SKIP: the CUDA backend cannot run here: %s\n", loaded.status().summary().c_str());
      return 77;
    }
    std::printf("CUDA backend: %s\n", loaded->description.c_str());
    device = loaded->backend;
  }
  auto known = ReadKnownFailures(opt.known);
  if (!known.ok()) {
    std::fprintf(stderr, "%s\n", known.status().ToString().c_str());
    return 2;
  }
  if (device) {
    // What the CPU reference does not pass is out of scope on the GPU too.
    auto cpu_known = ReadKnownFailures(VIGIL_KNOWN_FAILURES);
    if (!cpu_known.ok()) {
      std::fprintf(stderr, "%s\n", cpu_known.status().ToString().c_str());
      return 2;
    }
    for (const auto& [op, why] : cpu_known->out_of_scope_ops) known->out_of_scope_ops.emplace(op, why);
    for (const auto& [t, why] : cpu_known->out_of_scope_tests) known->out_of_scope_tests.emplace(t, why);
    for (const auto& [t, why] : cpu_known->tests) known->out_of_scope_tests.emplace(t, "fails on the CPU: " + why);
  }
  int unexpected = 0, stale = 0, passed_total = 0, failed_total = 0;
  for (const std::string& suite : opt.suites) {
    fs::path dir = fs::path(opt.root) / suite;
    if (!fs::is_directory(dir)) continue;
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    }
    std::sort(cases.begin(), cases.end());
    std::map<Outcome, int> counts;
    for (const fs::path& c : cases) {
      std::string name = c.filename().string();
      if (!opt.filter.empty() && name.find(opt.filter) == std::string::npos) continue;
      CaseResult r = RunCase(c, *known, device);
      bool listed = known->tests.count(name) > 0;
      if (r.outcome == Outcome::kFail && listed) r.outcome = Outcome::kKnownFailure;
      ++counts[r.outcome];
      if (r.outcome == Outcome::kFail) {
        ++unexpected;
        std::printf("FAIL  %s/%s: %s\n", suite.c_str(), name.c_str(), r.detail.c_str());
      } else if (r.outcome == Outcome::kPass && listed) {
        ++stale;
        std::printf("NOW PASSES  %s/%s: remove it from %s\n", suite.c_str(), name.c_str(), opt.known.c_str());
      } else if (opt.verbose) {
        std::printf("%-13s %s/%s%s%s\n", OutcomeName(r.outcome), suite.c_str(), name.c_str(),
                    r.detail.empty() ? "" : ": ", r.detail.c_str());
      }
    }
    int in_scope = counts[Outcome::kPass] + counts[Outcome::kFail] + counts[Outcome::kKnownFailure];
    std::printf("suite %-18s passed %d / %d in scope (%d known failures, %d unexpected), %d out of scope",
                suite.c_str(), counts[Outcome::kPass], in_scope, counts[Outcome::kKnownFailure],
                counts[Outcome::kFail], counts[Outcome::kOutOfScope]);
    if (device) std::printf(", %d not on the device", counts[Outcome::kNotOnDevice]);
    std::printf("\n");
    passed_total += counts[Outcome::kPass];
    failed_total += counts[Outcome::kFail];
  }
  std::printf("%d passed, %d failed\n", passed_total, failed_total + stale);
  return unexpected || stale ? 1 : 0;
}
