// The options shared by the commands that run models (command.h); no
// library internals, so both the public-API commands and the tooling use it.
#include <cstdlib>
#include <filesystem>

#include "command.h"

namespace vigil::cli {

bool ParseByteSize(const std::string& text, uint64_t* bytes) {
  char* stop = nullptr;
  double v = std::strtod(text.c_str(), &stop);
  size_t end = static_cast<size_t>(stop - text.c_str());
  std::string unit = text.substr(end);
  double scale = unit.empty() || unit == "B" ? 1
                 : unit == "K"              ? 1 << 10
                 : unit == "M"              ? 1 << 20
                 : unit == "G"              ? 1 << 30
                                            : -1;
  if (end == 0 || scale < 0 || !(v >= 0) || v * scale > 1.8e19) return false;
  *bytes = static_cast<uint64_t>(v * scale);
  return true;
}

CLI::Validator ByteSizeValidator() {
  return CLI::Validator(
      [](std::string& text) {
        uint64_t bytes = 0;
        return ParseByteSize(text, &bytes) ? std::string()
                                           : "'" + text + "' is not a size: write bytes or use K, M or G (512M, 2G)";
      },
      "SIZE");
}

void AddBackendOptions(CLI::App* sub, BackendChoice& c) {
  sub->add_option("--backend", c.backend,
                  "where to run: cpu (default) or cuda (nodes the CUDA backend cannot run fall back to the CPU)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub->add_flag("--no-fallback", c.no_fallback,
                "with --backend cuda: fail at load, naming the node and why, instead of running it on the CPU");
  sub->add_option("--threads", c.threads,
                  "threads the CPU backend may use for one node (its convolutions and matrix products); "
                  "0 (default): every core")
      ->check(CLI::Range(0, 4096));
  sub->add_flag("--tf32", c.tf32, "with --backend cuda: let float32 convolutions and products use TF32 tensor cores");
  sub->add_flag("--no-tf32x3", c.no_tf32x3,
                "with --backend cuda, without --tf32: compute every float32 matrix product on CUDA cores, instead of "
                "running large ones as three TF32 products of split operands (3xTF32: about 2e-5 relative error on "
                "transformers against 1e-6, about 1.6x faster at batch 64)");
  sub->add_flag("--tf32x3-convs", c.tf32x3_convs,
                "with --backend cuda, without --tf32: run float32 convolutions as three TF32 convolutions of split "
                "operands, channels-last (1.4x to 2x faster on ResNet-50 on an H200; further from exact than the "
                "products' 3xTF32, more so in deep networks: 3.2e-4 relative on a random-weight ResNet-50, 5.5e-5 on "
                "MobileNetV2, against 2e-2 with --tf32; vigil bench measures both on the model)");
  sub->add_flag("--fp16", c.fp16,
                "compute a float32 model in float16: its weights become float16 at load (clamped to +-65504), "
                "inputs and outputs stay float32; faster on tensor cores, less exact (vigil bench --backend cuda "
                "measures both)");
  sub->add_flag("--deterministic", c.deterministic,
                "with --backend cuda: only deterministic algorithms (bitwise-identical outputs across runs)");
  sub->add_option("--gpu-mem-limit", c.gpu_mem_limit,
                  "with --backend cuda: refuse a run whose planned device memory exceeds this (512M, 2G)")
      ->check(ByteSizeValidator());
  sub->add_option("--device", c.device, "with --backend cuda: the CUDA device ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--cudnn-log", c.cudnn_log,
                  "with --backend cuda: write cuDNN's API log (every call, CUDNN_LOGLEVEL_DBG=3) to FILE; on a cuDNN "
                  "failure its tail is attached to the diagnosis");
  sub->add_option("--layout", c.layout,
                  "auto (default) runs 2D convolutions channels-last (NHWC) where faster, with the fewest "
                  "transposes: every float dtype with --backend cuda (tensor cores want NHWC), float32 on the CPU "
                  "where oneDNN is loaded (no reorders, Add and Relu fused); nchw keeps every convolution as the "
                  "model says")
      ->check(CLI::IsMember({"auto", "nchw"}));
  sub->add_flag("--tune", c.tune,
                "with --backend cuda: autotune: the first run of each convolution and matrix-product shape times up "
                "to 8 cuDNN engines or cuBLASLt algorithms and keeps the fastest (slower first run; see "
                "--tuning-cache)");
  sub->add_flag("--no-measure-first-run", c.no_measure_first_run,
                "with --backend cuda, without --tune: take cuDNN's and cuBLASLt's first pick for every operation, for "
                "the fastest first result; by default the few whose pick is often slow (products of at least 2^31 "
                "multiply-adds, memory-bound float32 convolutions without --tf32) time their candidates on their "
                "first run and keep the fastest (up to about 0.3 s more on a large model's first run)");
  sub->add_option("--tuning-cache", c.tuning_cache,
                  "with --backend cuda: FILE of algorithm choices keyed by GPU, library versions, shape, dtype and "
                  "layout: used where it has one; with --tune new choices are appended (docs/tuning.md)");
}

void AddInputFilesOption(CLI::App* sub, std::vector<std::string>& specs) {
  sub->add_option("--input,-i", specs,
                  "NAME=FILE binds FILE (.npy or .pb) to the model input NAME; FILE alone binds by position "
                  "(required inputs first, in the model's order). Repeat for each input.")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

std::pair<std::string, std::string> SplitInputSpec(const std::string& spec) {
  const size_t eq = spec.find('=');
  std::error_code ec;
  if (eq == std::string::npos || eq == 0 || std::filesystem::exists(spec, ec)) return {std::string(), spec};
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

}  // namespace vigil::cli
