#include "precision_hint.h"

#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "user_io.h"
#include "vigil/float16.h"

namespace vigil::cli {
namespace {

// The GPU from the session's CUDA stack description ("..., NVIDIA H200
// (sm_90)"): its text and compute capability major version (0 if unknown).
std::pair<std::string, int> GpuOf(const vigil::Session& session) {
  nlohmann::json notes = nlohmann::json::parse(session.NotesJson(), nullptr, false);
  const std::string stack = notes.is_object() ? notes.value("cuda_stack", std::string()) : std::string();
  const size_t sm = stack.rfind("(sm_");
  const size_t comma = stack.rfind(", ", sm);
  if (sm == std::string::npos || comma == std::string::npos || sm + 5 >= stack.size()) return {"", 0};
  const char digit = stack[sm + 4];
  return {stack.substr(comma + 2), digit >= '0' && digit <= '9' ? digit - '0' : 0};
}

bool IsFloat(DType t) { return t == DType::kFloat32 || t == DType::kFloat16; }

double At(const vigil::Value& v, size_t i) {
  return v.GetDType() == DType::kFloat32 ? v.Data<float>()[i] : Float16ToFloat(v.Data<uint16_t>()[i]);
}

// The largest relative L2 distance over the float outputs, in float64, and
// whether `got` has a NaN or infinity where `want` is finite.
void Compare(const std::vector<vigil::Value>& got, const std::vector<vigil::Value>& want, PrecisionOption* out) {
  for (size_t k = 0; k < got.size() && k < want.size(); ++k) {
    if (!IsFloat(got[k].GetDType()) || !IsFloat(want[k].GetDType())) continue;
    const size_t n = std::min(got[k].ElementCount(), want[k].ElementCount());
    double err = 0, norm = 0;
    for (size_t i = 0; i < n; ++i) {
      const double g = At(got[k], i), w = At(want[k], i);
      if (!std::isfinite(w)) continue;
      if (!std::isfinite(g)) {
        out->nonfinite = true;
        continue;
      }
      err += (g - w) * (g - w);
      norm += w * w;
    }
    const double rel = norm > 0 ? std::sqrt(err / norm) : (err > 0 ? INFINITY : 0);
    out->rel_l2 = std::max(out->rel_l2, rel);
  }
}

}  // namespace

// The session notes' count of convolution nodes (0 when absent).
size_t ConvolutionCount(const std::string& notes_json) {
  nlohmann::json notes = nlohmann::json::parse(notes_json, nullptr, false);
  if (!notes.is_object()) return 0;
  auto it = notes.find("convolutions");
  return it != notes.end() && it->is_number_unsigned() ? it->get<size_t>() : 0;
}

size_t Int8NodeCount(const std::string& notes_json) {
  nlohmann::json notes = nlohmann::json::parse(notes_json, nullptr, false);
  if (!notes.is_object()) return 0;
  size_t n = 0;
  for (const char* key : {"int8_convolutions", "int8_matmuls"}) {
    auto it = notes.find(key);
    if (it == notes.end() || !it->is_array()) continue;
    for (const nlohmann::json& node : *it) {
      if (!node.is_object()) continue;
      auto f = node.find("int8");
      n += f != node.end() && f->is_boolean() && f->get<bool>();
    }
  }
  return n;
}

std::string PrecisionHintSkipped(const BackendChoice& choice, const vigil::Session& session, std::string* gpu) {
  if (choice.backend != "cuda") return "not on the GPU";
  if (choice.tf32 || choice.fp16) return "--tf32 or --fp16 already given";
  bool float32 = false;
  for (const vigil::IoInfo& out : session.Outputs()) float32 = float32 || out.dtype == DType::kFloat32;
  if (!float32) return "no float32 output: not a float32 model";
  // A QDQ model's convolutions already run in int8; --fp16 would move them
  // to float16 (ResNet-50 QDQ on an H200: 8.4x slower).
  if (size_t n = Int8NodeCount(session.NotesJson())) {
    return fmt::format("{} QDQ node(s) run in int8: --tf32 and --fp16 are for float models", n);
  }
  auto [name, major] = GpuOf(session);
  *gpu = name;
  if (major < 8) return "the GPU has no TF32 tensor cores (compute capability below 8.0)";
  return {};
}

std::vector<PrecisionOption> MeasurePrecisionOptions(
    const std::string& model_path, const BackendChoice& choice, const vigil::Session& baseline,
    double baseline_p50_ms, const std::vector<vigil::TensorRef>& inputs,
    const std::function<double(const vigil::Session&)>& time_p50) {
  std::vector<PrecisionOption> options;
  std::vector<vigil::Value> want;
  try {
    want = baseline.Run(inputs);
  } catch (const vigil::Error&) {
    return options;  // the baseline ran before; a failure now is reported by the caller's own runs
  }
  std::vector<const char*> flags = {"--tf32", "--fp16"};
  // The default runs large float32 products as 3xTF32: what CUDA cores
  // alone would cost, and how far the default is from them.
  if (!choice.no_tf32x3) flags.push_back("--no-tf32x3");
  // Convolutions as 3xTF32 are off by default (their error grows with a
  // network's depth): what they would gain on this model, and cost.
  if (!choice.tf32x3_convs && ConvolutionCount(baseline.NotesJson()) > 0) flags.push_back("--tf32x3-convs");
  for (const char* flag : flags) {
    PrecisionOption o;
    o.flag = flag;
    BackendChoice variant = choice;
    variant.tf32 = o.flag == "--tf32";
    variant.fp16 = o.flag == "--fp16";
    variant.no_tf32x3 = choice.no_tf32x3 || o.flag == "--no-tf32x3";
    variant.tf32x3_convs = choice.tf32x3_convs || o.flag == "--tf32x3-convs";
    try {
      vigil::Session session(model_path, ToSessionOptions(variant));
      Compare(session.Run(inputs), want, &o);
      o.p50_ms = time_p50(session);
      o.speedup = o.p50_ms > 0 ? baseline_p50_ms / o.p50_ms : 0;
    } catch (const vigil::Error& e) {
      o.error = e.headline();
    }
    options.push_back(std::move(o));
  }
  return options;
}

std::vector<std::string> PrecisionOptionLines(const std::string& gpu, double baseline_p50_ms,
                                              const std::vector<PrecisionOption>& options) {
  std::vector<std::string> lines;
  lines.push_back(fmt::format("float32 without TF32 on {}, p50 {:.3f} ms; measured on this model and these inputs:",
                              gpu.empty() ? "this GPU" : gpu, baseline_p50_ms));
  for (const PrecisionOption& o : options) {
    if (!o.error.empty()) {
      lines.push_back(fmt::format("  {}: not measured: {}", o.flag, o.error));
      continue;
    }
    lines.push_back(fmt::format("  {}: p50 {:.3f} ms, {:.2f}x {}; outputs move by rel L2 {:.2g} from the default "
                                "run's{}",
                                o.flag, o.p50_ms, o.speedup >= 1 ? o.speedup : 1 / o.speedup,
                                o.speedup >= 1 ? "faster" : "slower", o.rel_l2,
                                o.nonfinite ? ", and some become NaN or infinite" : ""));
  }
  lines.push_back("  (the default: no TF32, large float32 matrix products as 3xTF32 (near float32's accuracy); "
                  "--no-tf32x3 computes every float32 product on CUDA cores, --tf32x3-convs runs convolutions as "
                  "3xTF32 too; docs/cuda.md, Numerics)");
  return lines;
}

nlohmann::json PrecisionOptionsJson(const std::vector<PrecisionOption>& options) {
  nlohmann::json list = nlohmann::json::array();
  for (const PrecisionOption& o : options) {
    nlohmann::json j = {{"option", o.flag}};
    if (!o.error.empty()) {
      j["error"] = o.error;
    } else {
      j.update({{"p50_ms", o.p50_ms}, {"speedup", o.speedup}, {"rel_l2", o.rel_l2}, {"nonfinite", o.nonfinite}});
    }
    list.push_back(std::move(j));
  }
  return list;
}

std::string PrecisionHintForRun(const BackendChoice& choice, const vigil::Session& session,
                                const std::string& model_path) {
  std::string gpu;
  if (!PrecisionHintSkipped(choice, session, &gpu).empty()) return {};
  return fmt::format("note: this float32 model runs without TF32 on {}; `vigil bench {} --backend cuda` "
                     "measures what --tf32 and --fp16 would gain on it, what --no-tf32x3 would cost, and how far "
                     "each moves its outputs",
                     gpu.empty() ? "this GPU" : gpu, model_path);
}

}  // namespace vigil::cli
