// Model → validated Session with the requested backend, shared by the
// commands that run models.
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "backends/cpu/cpu_backend.h"
#include "backends/module/backend_module.h"
#include "cli/command.h"
#include "ir/layout_nhwc.h"
#include "ir/validate.h"
#include "onnx/reader.h"

namespace vigil::cli {
namespace {

// "512M", "2G", "1.5G", "1000000" -> bytes.
Result<uint64_t> ParseBytes(const std::string& text) {
  char* stop = nullptr;
  double v = std::strtod(text.c_str(), &stop);
  size_t end = static_cast<size_t>(stop - text.c_str());
  std::string unit = text.substr(end);
  double scale = unit.empty() || unit == "B" ? 1 : unit == "K" ? 1 << 10 : unit == "M" ? 1 << 20 : unit == "G" ? 1 << 30 : -1;
  if (end == 0 || scale < 0 || v < 0) {
    return InvalidInputError("--gpu-mem-limit '{}' is not a size", text).WithFix("write it as bytes or with K, M or G: 512M, 2G");
  }
  return static_cast<uint64_t>(v * scale);
}

}  // namespace

void AddBackendOptions(CLI::App* sub, BackendChoice& c) {
  sub->add_option("--backend", c.backend,
                  "where to run: cpu (default) or cuda (nodes the CUDA backend cannot run fall back to the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_flag("--no-fallback", c.no_fallback,
                "with --backend cuda: fail at load, naming the node and why, instead of running it on the CPU");
  sub->add_flag("--tf32", c.tf32, "with --backend cuda: let float32 convolutions and products use TF32 tensor cores");
  sub->add_flag("--deterministic", c.deterministic,
                "with --backend cuda: only deterministic algorithms (bitwise-identical outputs across runs)");
  sub->add_option("--gpu-mem-limit", c.gpu_mem_limit,
                  "with --backend cuda: refuse a run whose planned device memory exceeds this (512M, 2G)");
  sub->add_option("--device", c.device, "with --backend cuda: the CUDA device ordinal (default 0)");
  sub->add_option("--cudnn-log", c.cudnn_log,
                  "with --backend cuda: write cuDNN's API log (every call, CUDNN_LOGLEVEL_DBG=3) to FILE; on a cuDNN "
                  "failure its tail is attached to the diagnosis");
  sub->add_option("--layout", c.layout,
                  "with --backend cuda: auto (default) runs float16/bfloat16 2D convolutions channels-last (NHWC, "
                  "for tensor cores), with the fewest transposes; nchw keeps every convolution as the model says")
      ->check(CLI::IsMember({"auto", "nchw"}));
  sub->add_flag("--tune", c.tune,
                "with --backend cuda: autotune: the first run of each convolution and matrix-product shape times up "
                "to 8 cuDNN engines or cuBLASLt algorithms and keeps the fastest (slower first run; see "
                "--tuning-cache)");
  sub->add_option("--tuning-cache", c.tuning_cache,
                  "with --backend cuda: FILE of algorithm choices keyed by GPU, library versions, shape, dtype and "
                  "layout: used where it has one; with --tune new choices are appended (docs/tuning.md)");
}

std::vector<std::string> BackendArguments(const BackendChoice& c) {
  std::vector<std::string> args = {"--backend", c.backend, "--device", std::to_string(c.device)};
  if (c.no_fallback) args.push_back("--no-fallback");
  if (c.tf32) args.push_back("--tf32");
  if (c.deterministic) args.push_back("--deterministic");
  if (!c.gpu_mem_limit.empty()) args.insert(args.end(), {"--gpu-mem-limit", c.gpu_mem_limit});
  if (!c.cudnn_log.empty()) args.insert(args.end(), {"--cudnn-log", c.cudnn_log});
  args.insert(args.end(), {"--layout", c.layout});
  if (c.tune) args.push_back("--tune");
  if (!c.tuning_cache.empty()) args.insert(args.end(), {"--tuning-cache", c.tuning_cache});
  return args;
}

Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const BackendChoice& choice) {
  runtime::SessionOptions options;
  if (choice.backend == "cuda") {
    backends::CudaBackendOptions cuda;
    cuda.device = choice.device;
    cuda.allow_tf32 = choice.tf32;
    cuda.deterministic = choice.deterministic;
    cuda.tune = choice.tune;
    cuda.tuning_cache = choice.tuning_cache;
    if (!choice.gpu_mem_limit.empty()) {
      VIGIL_ASSIGN_OR_RETURN(cuda.memory_limit, ParseBytes(choice.gpu_mem_limit));
    }
    if (!choice.cudnn_log.empty()) {
      // cuDNN reads its logging variables when it starts, so they must be set
      // before the module (which links libcudnn) is loaded.
      setenv("CUDNN_LOGLEVEL_DBG", "3", 1);
      setenv("CUDNN_LOGDEST_DBG", choice.cudnn_log.c_str(), 1);
    }
    VIGIL_ASSIGN_OR_RETURN(backends::LoadedBackend loaded, backends::LoadCudaBackend(cuda));
    if (std::getenv("VIGIL_VERBOSE")) {
      std::fprintf(stderr, "vigil: CUDA backend from %s: %s\n", loaded.module_path.c_str(), loaded.description.c_str());
    }
    options.backends.push_back(loaded.backend);
    options.no_fallback = choice.no_fallback;
    options.conv_layout = choice.layout == "nchw" ? runtime::ConvLayout::kAsModel : runtime::ConvLayout::kNhwcOnDevice;
    options.device_graphs = choice.device_graphs;
  } else if (choice.backend != "cpu") {
    return InvalidInputError("unknown backend '{}'", choice.backend).WithFix("use --backend cpu or --backend cuda");
  }
  options.backends.push_back(cpu::MakeCpuBackend());
  VIGIL_ASSIGN_OR_RETURN(ir::Model model, onnx::ReadModel(model_path));
  Status valid = ir::ValidateModel(model);
  if (!valid.ok()) return valid.WithFact("model", model_path);
  auto session = runtime::Session::Create(std::move(model), std::move(options));
  if (!session.ok()) return std::move(session).TakeStatus().WithFact("model", model_path);
  if (std::getenv("VIGIL_VERBOSE")) {
    size_t nhwc = 0, transposes = 0;
    for (const ir::Node& n : (*session)->model().graph.nodes) {
      nhwc += n.op_type == ir::kConvNhwcOp && n.domain == ir::kVigilDomain;
      transposes += n.op_type == "Transpose";
    }
    if (nhwc > 0) {
      std::fprintf(stderr, "vigil: layout: %zu convolutions run NHWC; the graph has %zu Transpose nodes\n", nhwc,
                   transposes);
    }
    for (const runtime::NodePlacement& p : (*session)->placement()) {
      if (!p.fallback_reason.empty()) {
        std::fprintf(stderr, "vigil: %s runs on %s: %s\n", p.node.c_str(), p.backend.c_str(), p.fallback_reason.c_str());
      }
    }
  }
  return session;
}

Result<std::unique_ptr<runtime::Session>> LoadSession(const std::string& model_path, const std::string& backend) {
  BackendChoice choice;
  choice.backend = backend;
  return LoadSession(model_path, choice);
}

}  // namespace vigil::cli
