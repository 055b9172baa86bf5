// `vigil bench MODEL [--input NAME=FILE ...] [--dim N=8 ...] [--warmup N]
// [--iters N] [--json] [--profile TRACE.json] [--cuda-graphs on|off]`: latency percentiles and throughput of
// Session::Run (on cuda, replaying a recorded CUDA graph unless --cuda-graphs off),
// with the time to first result (load + plan + first run).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <cstring>
#include <random>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench_profile.h"
#include "command.h"
#include "precision_hint.h"
#include "user_io.h"
#include "vigil/float16.h"

namespace vigil::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string model_path;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;  // NAME=VALUE for symbolic dims of generated inputs
  BackendChoice backend;
  int warmup = 3;
  int iters = 20;
  bool json = false;
  bool inputs_on_device = false;
  bool outputs_on_device = false;
  bool pageable_inputs = false;
  std::string profile;  // Chrome trace file; enables per-node timing
  size_t profile_top = 25;
  std::string cuda_graphs = "on";
  bool precision_hint = true;  // on a float32 model on the GPU: time --tf32 and --fp16 too
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// NAME=VALUE specs; false (with `error`) for a malformed one.
bool ParseDims(const std::vector<std::string>& specs, std::map<std::string, int64_t>* dims, std::string* error) {
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    char* end = nullptr;
    long long v = eq == std::string::npos ? 0 : std::strtoll(s.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0) {
      *error = "--dim '" + s + "' is not NAME=VALUE (e.g. --dim N=8)";
      return false;
    }
    if (end == s.c_str() + eq + 1 || *end != '\0' || v < 0) {
      *error = "--dim '" + s + "': '" + s.substr(eq + 1) + "' is not a number (a non-negative dim size)";
      return false;
    }
    (*dims)[s.substr(0, eq)] = v;
  }
  return true;
}

// "" when an input of `shape` fits in this machine's memory (its element
// count in *count), else the first line of a diagnosis: the cause and the fix.
std::string FitsInHostMemory(const std::string& name, const std::vector<int64_t>& shape, size_t element_bytes,
                             size_t* count) {
  const double physical = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  double bytes = static_cast<double>(element_bytes);
  std::string dims;
  for (int64_t d : shape) {
    bytes *= static_cast<double>(d);
    dims += (dims.empty() ? "" : ",") + std::to_string(d);
  }
  if (physical > 0 && bytes > physical) {
    return fmt::format("error [OutOfMemory]: input '{}' of shape [{}] would take {:.1f} GB, more than this machine's "
                       "{:.1f} GB of memory — fix: choose smaller --dim values",
                       name, dims, bytes / 1e9, physical / 1e9);
  }
  *count = static_cast<size_t>(bytes) / element_bytes;
  return {};
}

// Random inputs shaped from the model: symbolic dims from --dim (default 1).
// Returns "" or why an input cannot be generated ("error [Code]: cause — fix").
std::string GenerateInputs(const vigil::Session& session, const std::map<std::string, int64_t>& dims,
                           InputFileSet& files) {
  std::mt19937 rng(1234);
  for (const vigil::IoInfo& in : session.Inputs()) {
    if (!in.rank_known) {
      return "error [InvalidInput]: input '" + in.name + "' has no fixed rank, so no random input can be made for it "
             "— fix: give it with --input " + in.name + "=FILE";
    }
    std::vector<int64_t> shape;
    for (size_t d = 0; d < in.dims.size(); ++d) {
      if (in.dims[d] >= 0) shape.push_back(in.dims[d]);
      else shape.push_back(dims.count(in.dim_names[d]) ? dims.at(in.dim_names[d]) : 1);
    }
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    // Ordinary (pageable) host memory, as a caller's own buffer would be.
    size_t element_bytes = in.dtype == DType::kFloat32 || in.dtype == DType::kInt32 ? 4
                           : in.dtype == DType::kInt64                              ? 8
                                                                                    : 2;
    size_t n = 1;
    if (std::string why = FitsInHostMemory(in.name, shape, element_bytes, &n); !why.empty()) return why;
    std::vector<uint8_t>& buffer = files.buffers.emplace_back(n * element_bytes);
    void* p = buffer.data();
    switch (in.dtype) {
      case DType::kFloat32:
        for (size_t i = 0; i < n; ++i) static_cast<float*>(p)[i] = uniform(rng);
        break;
      case DType::kFloat16:
        for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(p)[i] = vigil::FloatToFloat16(uniform(rng));
        break;
      case DType::kBfloat16:
        for (size_t i = 0; i < n; ++i) static_cast<uint16_t*>(p)[i] = vigil::FloatToBfloat16(uniform(rng));
        break;
      case DType::kInt64:  // token ids and indices: small non-negative values
        for (size_t i = 0; i < n; ++i) static_cast<int64_t*>(p)[i] = static_cast<int64_t>(rng() % 10);
        break;
      case DType::kInt32:
        for (size_t i = 0; i < n; ++i) static_cast<int32_t*>(p)[i] = static_cast<int32_t>(rng() % 10);
        break;
      default:
        return "error [Unsupported]: bench makes no random values of dtype " + std::string(DTypeName(in.dtype)) +
               " (input '" + in.name + "') — fix: give it with --input " + in.name + "=FILE";
    }
    files.refs.push_back(vigil::TensorRef::Bytes(in.name, in.dtype, shape, p, buffer.size()));
    files.refs.back().source = "random";
  }
  return {};
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

void Progress(const char* phase, int done, int total) {
  if (!::isatty(STDERR_FILENO)) return;
  std::fprintf(stderr, "\r%s %d/%d   ", phase, done, total);
  if (done == total) std::fprintf(stderr, "\n");
}

// --inputs-on-device: the inputs are copied to the GPU once and bound there,
// as a caller whose data is already on the GPU (and PyTorch's timing) has it.
// Copies each input into a buffer of the session's (`memory`: device memory,
// or page-locked host memory on a GPU) and binds that instead.
void PlaceInputs(const vigil::Session& session, InputFileSet& inputs, vigil::Memory memory) {
  for (size_t i = 0; i < inputs.refs.size(); ++i) {
    vigil::TensorRef& ref = inputs.refs[i];
    vigil::Value buffer = session.Allocate(ref.dtype, ref.shape, memory);
    vigil::TensorRef to = buffer.AsInput(ref.name);
    session.Copy(ref, to);
    to.source = ref.source;
    ref = std::move(to);
    inputs.values.push_back(std::move(buffer));
  }
}

int RunProfile(const BenchOptions& opt, const vigil::Session& session, const std::vector<vigil::TensorRef>& inputs) {
  std::fprintf(stderr, "profiling %d run(s), synchronising after every node...\n", opt.iters);
  ProfileResult profile = ParseProfile(session.ProfileJson(inputs, opt.iters));
  if (!WriteChromeTrace(profile, opt.profile)) {
    std::fprintf(stderr, "vigil: cannot write the profile trace '%s'\n", opt.profile.c_str());
    return kExitDiagnosed;
  }
  std::string text = ProfileText(profile, opt.profile_top);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::printf("trace:        %s (open in chrome://tracing or https://ui.perfetto.dev)\n", opt.profile.c_str());
  return kExitOk;
}

// The p50 of `iters` timed runs of `session` (through `binding` when given),
// after `warmup` untimed ones; `times` gets every run's time.
double TimeRuns(const vigil::Session& session, const std::vector<vigil::TensorRef>& inputs, vigil::IoBinding* binding,
                int warmup, int iters, const char* label, std::vector<double>* times) {
  for (int i = 0; i < warmup; ++i) {
    if (binding) session.Run(*binding);
    else session.Run(inputs);
  }
  times->clear();
  for (int i = 0; i < iters; ++i) {
    Progress(label, i + 1, iters);
    auto t0 = Clock::now();
    if (binding) session.Run(*binding);
    else session.Run(inputs);
    times->push_back(Ms(Clock::now() - t0));
  }
  return Percentile(*times, 50);
}

std::optional<vigil::IoBinding> OutputsOnDevice(const vigil::Session& session,
                                                const std::vector<vigil::TensorRef>& inputs) {
  std::optional<vigil::IoBinding> binding;
  binding.emplace(session);
  for (const vigil::TensorRef& in : inputs) binding->BindInput(in);
  for (const vigil::IoInfo& out : session.Outputs()) binding->BindOutput(out.name, vigil::Memory::kCuda);
  for (int i = 0; i < 2; ++i) session.Run(*binding);  // the binding's first runs (graph capture)
  return binding;
}

std::string JoinNotes(const nlohmann::json& list) {
  std::string s;
  if (!list.is_array()) return s;
  for (const auto& n : list) s += (s.empty() ? "" : "; ") + n.get<std::string>();
  return s;
}

int RunBench(const BenchOptions& opt) {
  if (opt.iters < 1 || opt.warmup < 0) {
    std::fprintf(stderr, "vigil: --iters must be at least 1 and --warmup at least 0\n");
    return kExitUsage;
  }
  std::map<std::string, int64_t> dims;
  std::string error;
  if (!ParseDims(opt.dims, &dims, &error)) {
    std::fprintf(stderr, "vigil: %s\n", error.c_str());
    return kExitDiagnosed;
  }
  BackendChoice backend = opt.backend;
  backend.device_graphs = opt.cuda_graphs == "on" && opt.profile.empty();
  backend.profiling = !opt.profile.empty();
  try {
    auto start = Clock::now();
    vigil::Session session(opt.model_path, ToSessionOptions(backend));
    auto loaded = Clock::now();
    InputFileSet inputs;
    if (opt.inputs.empty()) {
      error = GenerateInputs(session, dims, inputs);
      if (!error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
        return kExitDiagnosed;
      }
    } else {
      inputs = ReadInputFileSet(opt.inputs);
    }
    session.Check(inputs.refs);
    if (opt.inputs_on_device) PlaceInputs(session, inputs, vigil::Memory::kCuda);
    else if (!opt.pageable_inputs) PlaceInputs(session, inputs, vigil::Memory::kHost);
    nlohmann::json plan = nlohmann::json::parse(session.PlanJson(inputs.refs));
    auto first_start = Clock::now();
    session.Run(inputs.refs);
    auto first_done = Clock::now();
    for (int i = 0; i < opt.warmup; ++i) {
      Progress("warm-up", i + 1, opt.warmup);
      session.Run(inputs.refs);
    }
    if (!opt.profile.empty()) return RunProfile(opt, session, inputs.refs);
    // With --outputs-on-device the runs go through an IoBinding whose
    // outputs stay in device memory (ONNX Runtime's IOBinding; PyTorch's
    // outputs stay on the GPU too): no copy to the host is timed. The call
    // still returns only once the outputs are ready.
    std::optional<vigil::IoBinding> binding;
    if (opt.outputs_on_device) binding = OutputsOnDevice(session, inputs.refs);
    std::vector<double> times;
    const double p50 = TimeRuns(session, inputs.refs, binding ? &*binding : nullptr, 0, opt.iters, "timing", &times);
    const double p90 = Percentile(times, 90), p99 = Percentile(times, 99);
    // A float32 model run exactly on a GPU with TF32 tensor cores: what
    // --tf32 and --fp16 would gain here, timed the same way, and how far
    // they move the outputs.
    std::string gpu, hint_skipped = "--no-precision-hint";
    std::vector<PrecisionOption> precision;
    if (opt.precision_hint) hint_skipped = PrecisionHintSkipped(backend, session, &gpu);
    if (hint_skipped.empty()) {
      if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "timing --tf32 and --fp16 for comparison...\n");
      auto time_p50 = [&](const vigil::Session& s) {
        std::optional<vigil::IoBinding> b;
        if (opt.outputs_on_device) b = OutputsOnDevice(s, inputs.refs);
        std::vector<double> t;
        return TimeRuns(s, inputs.refs, b ? &*b : nullptr, opt.warmup + 1, opt.iters, "timing", &t);
      };
      precision = MeasurePrecisionOptions(opt.model_path, backend, session, p50, inputs.refs, time_p50);
    }
    nlohmann::json notes = nlohmann::json::parse(session.NotesJson());
    std::string graphs = "off";
    if (backend.device_graphs) {
      graphs = JoinNotes(notes["cuda_graphs"]);
      if (graphs.empty()) graphs = "not used: no device backend";
    }
    std::vector<std::string> backend_notes = notes.value("backend_notes", std::vector<std::string>{});
    const std::string layout = notes.value("layout", std::string{});
    const double load_ms = Ms(loaded - start), first_ms = Ms(first_done - first_start);
    const double first_result_ms = Ms(first_done - start);
    const uint64_t arena = plan.value("arena_bytes", uint64_t{0}), peak = plan.value("peak_live_bytes", uint64_t{0});
    const uint64_t dev_arena = plan.value("device_arena_bytes", uint64_t{0});
    const uint64_t dev_peak = plan.value("device_peak_live_bytes", uint64_t{0});
    const uint64_t body_arena = plan.value("body_arena_bytes", uint64_t{0});
    const uint64_t body_dev_arena = plan.value("body_device_arena_bytes", uint64_t{0});
    const std::vector<std::string> unplanned = plan.value("unplanned_bodies", std::vector<std::string>{});
    if (opt.json) {
      nlohmann::json j = {{"model", opt.model_path}, {"backend", opt.backend.backend}, {"iters", opt.iters},
                          {"warmup", opt.warmup}, {"load_ms", load_ms}, {"first_run_ms", first_ms},
                          {"time_to_first_result_ms", first_result_ms}, {"p50_ms", p50}, {"p90_ms", p90},
                          {"p99_ms", p99}, {"runs_per_s", 1000.0 / p50}, {"inputs_on_device", opt.inputs_on_device},
                          {"outputs_on_device", opt.outputs_on_device},
                          {"pageable_inputs", opt.pageable_inputs}, {"arena_bytes", arena},
                          {"peak_live_bytes", peak}, {"device_arena_bytes", dev_arena},
                          {"device_peak_live_bytes", dev_peak}, {"body_arena_bytes", body_arena},
                          {"body_device_arena_bytes", body_dev_arena}, {"unplanned_bodies", unplanned},
                          {"cuda_graphs", graphs},
                          {"backend_notes", backend_notes}, {"layout", layout}, {"providers", session.Backends()}};
      if (hint_skipped.empty()) j["precision_options"] = PrecisionOptionsJson(precision);
      else j["precision_options_skipped"] = hint_skipped;
      std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      return kExitOk;
    }
    std::printf("model:        %s (%s backend)\n", opt.model_path.c_str(), opt.backend.backend.c_str());
    std::printf("load:         %.2f ms; first run %.2f ms; time to first result %.2f ms\n", load_ms, first_ms,
                first_result_ms);
    std::printf("latency:      p50 %.3f ms, p90 %.3f ms, p99 %.3f ms over %d runs (%d warm-up)\n", p50, p90, p99,
                opt.iters, opt.warmup);
    std::printf("throughput:   %.1f runs/s (inputs %s; outputs %s)\n", 1000.0 / p50,
                opt.inputs_on_device  ? "already on the device"
                : opt.pageable_inputs ? "copied from pageable host memory in every run"
                                      : "copied from the host (page-locked buffers on a GPU) in every run",
                opt.outputs_on_device ? "left on the device" : "copied to the host");
    if (opt.backend.backend != "cpu") std::printf("cuda graphs:  %s\n", graphs.c_str());
    for (const std::string& n : backend_notes) std::printf("backend:      %s\n", n.c_str());
    if (!layout.empty()) std::printf("layout:       %s\n", layout.c_str());
    std::printf("memory plan:  arena %.2f MiB (peak live %.2f MiB)\n", arena / 1048576.0, peak / 1048576.0);
    if (dev_arena > 0) {
      std::printf("device plan:  arena %.2f MiB (peak live %.2f MiB)\n", dev_arena / 1048576.0, dev_peak / 1048576.0);
    }
    if (body_arena > 0 || body_dev_arena > 0) {
      std::printf("bodies:       up to %.2f MiB more while an If/Loop/Scan body runs (%.2f MiB on the device)\n",
                  body_arena / 1048576.0, body_dev_arena / 1048576.0);
    }
    for (const std::string& b : unplanned) {
      std::printf("bodies:       %s is planned when it runs (its entry shapes are known only then)\n",
                  b.c_str());  // stdout is filtered for control bytes (terminal_output.cpp)
    }
    if (hint_skipped.empty()) {
      for (const std::string& line : PrecisionOptionLines(gpu, p50, precision)) {
        std::printf("precision:    %s\n", line.c_str());
      }
    }
    return kExitOk;
  } catch (const vigil::Error& e) {
    return ReportError(e, opt.json);
  }
}

}  // namespace

Command AddBenchCommand(CLI::App& parent) {
  auto opt = std::make_shared<BenchOptions>();
  CLI::App* sub = parent.add_subcommand(
      "bench",
      "Measure latency (p50/p90/p99 of Session::Run after warm-up), throughput and time to first result.\n"
      "Inputs come from --input files, or are random values shaped from the model (symbolic dims from\n"
      "--dim NAME=VALUE, default 1). Example: vigil bench model.onnx --dim N=8 --iters 50");
  sub->add_option("MODEL", opt->model_path, "ONNX model file")->required();
  AddInputFilesOption(sub, opt->inputs);
  sub->add_option("--dim", opt->dims, "NAME=VALUE for a symbolic dim of generated inputs");
  AddBackendOptions(sub, opt->backend);
  sub->add_option("--warmup", opt->warmup, "untimed runs first (default 3)");
  sub->add_option("--iters", opt->iters, "timed runs (default 20)");
  sub->add_flag("--json", opt->json, "print JSON");
  sub->add_flag("--inputs-on-device", opt->inputs_on_device,
                "with --backend cuda: copy the inputs to the GPU once and time runs that read them there (as when "
                "the caller's data is already on the GPU); without it every run also copies the inputs, from "
                "page-locked host buffers the session gives (vigil_session_allocate)");
  sub->add_flag("--outputs-on-device", opt->outputs_on_device,
                "with --backend cuda: leave the outputs in device memory (an IoBinding with every output bound to "
                "the GPU), so that runs do not copy them to the host, as when the caller reads them on the GPU");
  sub->add_flag("--pageable-inputs", opt->pageable_inputs,
                "with --backend cuda, without --inputs-on-device: copy the inputs from ordinary (pageable) host "
                "memory instead, as a caller that does not use the session's buffers");
  sub->add_option("--profile", opt->profile,
                  "time every node instead (with --backend cuda, a synchronisation after each node), print the "
                  "slowest nodes and the time per op type, and write one run as a Chrome trace to FILE");
  sub->add_option("--profile-top", opt->profile_top, "with --profile: how many of the slowest nodes to list (25)");
  sub->add_option("--cuda-graphs", opt->cuda_graphs,
                  "on (default): with --backend cuda, the first run runs normally, the second is recorded as a CUDA "
                  "graph, and later runs replay it (one launch per run instead of one per node; only when every "
                  "node runs on the GPU, else runs go on normally and the report says why); off: every run "
                  "launches node by node. --profile turns it off")
      ->check(CLI::IsMember({"on", "off"}));
  sub->add_flag("--precision-hint,!--no-precision-hint", opt->precision_hint,
                "with --backend cuda, on a float32 model, without --tf32 or --fp16, on a GPU with TF32 tensor cores "
                "(compute capability 8.0+): also time the model with --tf32 and with --fp16 and report their "
                "speed-up and how far they move the outputs (default on; two more sessions are made)");
  return {sub, [opt] { return RunBench(*opt); }};
}

}  // namespace vigil::cli
