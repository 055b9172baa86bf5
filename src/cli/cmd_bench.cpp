// `vigil bench MODEL [--input NAME=FILE ...] [--dim N=8 ...] [--warmup N]
// [--iters N] [--json] [--profile TRACE.json] [--cuda-graphs on|off]`: latency percentiles and throughput of
// Session::Run (on cuda, replaying a recorded CUDA graph unless --cuda-graphs off),
// with the time to first result (load + plan + first run).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <cstring>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "base/float16.h"
#include "cli/bench_profile.h"
#include "cli/command.h"
#include "ops/shape_helpers.h"

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
  bool pageable_inputs = false;
  std::string profile;  // Chrome trace file; enables per-node timing
  size_t profile_top = 25;
  std::string cuda_graphs = "on";
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

Result<std::map<std::string, int64_t>> ParseDims(const std::vector<std::string>& specs) {
  std::map<std::string, int64_t> dims;
  for (const std::string& s : specs) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidInputError("--dim '{}' is not NAME=VALUE (e.g. --dim N=8)", s);
    }
    try {
      dims[s.substr(0, eq)] = std::stoll(s.substr(eq + 1));
    } catch (...) {
      return InvalidInputError("--dim '{}': '{}' is not a number", s, s.substr(eq + 1));
    }
  }
  return dims;
}

// Inputs with random values (never all zeros: some kernels take shortcuts on
// zeros), shaped from the model with symbolic dims from --dim (default 1).
Result<InputFiles> GenerateInputs(const runtime::Session& session, const std::map<std::string, int64_t>& dims) {
  InputFiles files;
  std::mt19937 rng(1234);
  for (const ir::ValueInfo& vi : session.inputs().required) {
    if (vi.type.kind != ir::TypeInfo::Kind::kTensor || !vi.type.shape.rank_known) {
      return InvalidInputError("input '{}' has no fixed rank; give it with --input {}=FILE", vi.name, vi.name);
    }
    std::vector<int64_t> shape;
    for (const ir::Dim& d : vi.type.shape.dims) {
      if (d.value) shape.push_back(*d.value);
      else shape.push_back(dims.count(d.param) ? dims.at(d.param) : 1);
    }
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Allocate(vi.type.elem_type, shape));
    const uint64_t n = t.element_count();
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    switch (vi.type.elem_type) {
      case ir::DataType::kFloat32:
        for (uint64_t i = 0; i < n; ++i) t.data<float>()[i] = uniform(rng);
        break;
      case ir::DataType::kFloat16:
        for (uint64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = FloatToFloat16(uniform(rng));
        break;
      case ir::DataType::kBfloat16:
        for (uint64_t i = 0; i < n; ++i) t.data<uint16_t>()[i] = FloatToBfloat16(uniform(rng));
        break;
      case ir::DataType::kInt64:  // token ids and indices: small non-negative values
        for (uint64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = static_cast<int64_t>(rng() % 10);
        break;
      case ir::DataType::kInt32:
        for (uint64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
        break;
      default:
        return UnsupportedError("cannot generate random values for input '{}' of dtype {}; give it with --input",
                                vi.name, ir::DataTypeName(vi.type.elem_type));
    }
    files.bindings.push_back({vi.name, t.dtype(), t.shape(), t.raw_data(), t.byte_size(), "random"});
    files.tensors.push_back(std::move(t));
  }
  return files;
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
Status PlaceInputsOnDevice(const runtime::Session& session, InputFiles& inputs) {
  for (size_t i = 0; i < inputs.bindings.size(); ++i) {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor up, session.UploadInput(inputs.tensors[i]));
    inputs.bindings[i].data = up.raw_data();
    inputs.bindings[i].device = up.device();
    inputs.tensors[i] = std::move(up);
  }
  return Status::Ok();
}

// Without --inputs-on-device: the inputs are moved once into host buffers
// the device backend copies by DMA (page-locked), as a caller that allocates
// its input buffers from the session would have them.
Status PlaceInputsInHostBuffers(const runtime::Session& session, InputFiles& inputs) {
  for (size_t i = 0; i < inputs.bindings.size(); ++i) {
    const runtime::Tensor& t = inputs.tensors[i];
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor buffer, session.AllocateHostBuffer(t.dtype(), t.shape()));
    if (t.byte_size()) std::memcpy(buffer.raw_data(), t.raw_data(), t.byte_size());
    inputs.bindings[i].data = buffer.raw_data();
    inputs.tensors[i] = std::move(buffer);
  }
  return Status::Ok();
}

int RunProfile(const BenchOptions& opt, const runtime::Session& session,
               const std::vector<runtime::InputBinding>& inputs) {
  std::fprintf(stderr, "profiling %d run(s), synchronising after every node...\n", opt.iters);
  auto profile = ProfileRuns(session, inputs, opt.iters);
  if (!profile.ok()) return ReportFailure(profile.status(), opt.json);
  Status written = WriteChromeTrace(*profile, opt.profile);
  if (!written.ok()) return ReportFailure(written, opt.json);
  std::string text = ProfileText(*profile, opt.profile_top);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::printf("trace:        %s (open in chrome://tracing or https://ui.perfetto.dev)\n", opt.profile.c_str());
  return kExitOk;
}

int RunBench(const BenchOptions& opt) {
  if (opt.iters < 1 || opt.warmup < 0) {
    return ReportFailure(InvalidInputError("--iters must be at least 1 and --warmup at least 0"), opt.json);
  }
  if (!opt.profile.empty() && opt.backend.backend == "cuda") {
    // Read when the backend is created: a synchronisation after every node,
    // so that host time per node is device time per node.
    setenv("VIGIL_CUDA_SYNC", "1", 1);
  }
  BackendChoice backend = opt.backend;
  backend.device_graphs = opt.cuda_graphs == "on" && opt.profile.empty();
  auto start = Clock::now();
  auto session = LoadSession(opt.model_path, backend);
  if (!session.ok()) return ReportFailure(session.status(), opt.json);
  auto loaded = Clock::now();
  Result<InputFiles> inputs = InputFiles{};
  if (opt.inputs.empty()) {
    auto dims = ParseDims(opt.dims);
    if (!dims.ok()) return ReportFailure(dims.status(), opt.json);
    inputs = GenerateInputs(**session, *dims);
  } else {
    inputs = ReadInputFiles(opt.inputs);
  }
  if (!inputs.ok()) return ReportFailure(inputs.status(), opt.json);
  if (opt.inputs_on_device) {
    Status placed = PlaceInputsOnDevice(**session, *inputs);
    if (!placed.ok()) return ReportFailure(placed, opt.json);
  } else if (!opt.pageable_inputs) {
    Status placed = PlaceInputsInHostBuffers(**session, *inputs);
    if (!placed.ok()) return ReportFailure(placed, opt.json);
  }
  auto plan = (*session)->Plan(inputs->bindings);
  if (!plan.ok()) return ReportFailure(plan.status(), opt.json);
  auto first_start = Clock::now();
  auto first = (*session)->Run(inputs->bindings);
  if (!first.ok()) return ReportFailure(first.status(), opt.json);
  auto first_done = Clock::now();
  for (int i = 0; i < opt.warmup; ++i) {
    Progress("warm-up", i + 1, opt.warmup);
    if (auto r = (*session)->Run(inputs->bindings); !r.ok()) return ReportFailure(r.status(), opt.json);
  }
  if (!opt.profile.empty()) return RunProfile(opt, **session, inputs->bindings);
  std::vector<double> times;
  for (int i = 0; i < opt.iters; ++i) {
    Progress("timing", i + 1, opt.iters);
    auto t0 = Clock::now();
    auto r = (*session)->Run(inputs->bindings);
    auto t1 = Clock::now();
    if (!r.ok()) return ReportFailure(r.status(), opt.json);
    times.push_back(Ms(t1 - t0));
  }
  double p50 = Percentile(times, 50), p90 = Percentile(times, 90), p99 = Percentile(times, 99);
  std::string graphs = "off";
  if (backend.device_graphs) {
    std::vector<std::string> notes = (*session)->DeviceGraphNotes();
    graphs.clear();
    for (const std::string& n : notes) graphs += (graphs.empty() ? "" : "; ") + n;
    if (graphs.empty()) graphs = "not used: no device backend";
  }
  std::vector<std::string> backend_notes = (*session)->BackendNotes();
  double load_ms = Ms(loaded - start), first_ms = Ms(first_done - first_start);
  double first_result_ms = Ms(first_done - start);
  if (opt.json) {
    nlohmann::json j = {{"model", opt.model_path}, {"backend", opt.backend.backend}, {"iters", opt.iters},
                        {"warmup", opt.warmup}, {"load_ms", load_ms}, {"first_run_ms", first_ms},
                        {"time_to_first_result_ms", first_result_ms}, {"p50_ms", p50}, {"p90_ms", p90},
                        {"p99_ms", p99}, {"runs_per_s", 1000.0 / p50}, {"inputs_on_device", opt.inputs_on_device},
                        {"pageable_inputs", opt.pageable_inputs},
                        {"arena_bytes", plan->arena_bytes}, {"peak_live_bytes", plan->peak_live_bytes},
                        {"device_arena_bytes", plan->device_arena_bytes},
                        {"device_peak_live_bytes", plan->device_peak_live_bytes}, {"cuda_graphs", graphs},
                        {"backend_notes", backend_notes}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("model:        %s (%s backend)\n", opt.model_path.c_str(), opt.backend.backend.c_str());
  std::printf("load:         %.2f ms; first run %.2f ms; time to first result %.2f ms\n", load_ms, first_ms,
              first_result_ms);
  std::printf("latency:      p50 %.3f ms, p90 %.3f ms, p99 %.3f ms over %d runs (%d warm-up)\n", p50, p90, p99,
              opt.iters, opt.warmup);
  std::printf("throughput:   %.1f runs/s (inputs %s)\n", 1000.0 / p50,
              opt.inputs_on_device  ? "already on the device"
              : opt.pageable_inputs ? "copied from pageable host memory in every run"
                                    : "copied from the host (page-locked buffers on a GPU) in every run");
  if (opt.backend.backend != "cpu") std::printf("cuda graphs:  %s\n", graphs.c_str());
  for (const std::string& n : backend_notes) std::printf("backend:      %s\n", n.c_str());
  std::printf("memory plan:  arena %.2f MiB (peak live %.2f MiB)\n", plan->arena_bytes / 1048576.0,
              plan->peak_live_bytes / 1048576.0);
  if (plan->device_arena_bytes > 0) {
    std::printf("device plan:  arena %.2f MiB (peak live %.2f MiB)\n", plan->device_arena_bytes / 1048576.0,
                plan->device_peak_live_bytes / 1048576.0);
  }
  return kExitOk;
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
                "page-locked host buffers the session gives (Session::AllocateHostBuffer)");
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
  return {sub, [opt] { return RunBench(*opt); }};
}

}  // namespace vigil::cli
