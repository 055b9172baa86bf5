// What --tf32 and --fp16 would gain on a float32 model that runs exact on a
// GPU with tensor cores for them (compute capability 8.0 and later), and
// what they cost in accuracy: `vigil bench` measures both on the user's
// model and inputs, `vigil run` says once that bench can. A client of the
// public API only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command.h"
#include "vigil/vigil.hpp"

namespace vigil::cli {

// How many QDQ convolutions and matrix products run in int8, by a
// session's NotesJson() ("int8_convolutions", "int8_matmuls"); 0 when
// the notes are not JSON.
size_t Int8NodeCount(const std::string& notes_json);
// The number of convolution nodes the session notes count (0 when absent).
size_t ConvolutionCount(const std::string& notes_json);

// "" when the hint applies to `session` (created with `choice`): CUDA
// backend, neither --tf32 nor --fp16, a float32 output, no QDQ node run in
// int8, and a GPU of compute capability 8.0 or later. Otherwise why not (for the JSON).
// `gpu` gets "NVIDIA H200 (sm_90)" when known.
std::string PrecisionHintSkipped(const BackendChoice& choice, const vigil::Session& session, std::string* gpu);

struct PrecisionOption {
  std::string flag;        // "--tf32", "--fp16", "--no-tf32x3"
  double p50_ms = 0;       // measured like the baseline
  double speedup = 0;      // baseline p50 / this p50
  double rel_l2 = 0;       // the largest over the float outputs, against the baseline's outputs
  bool nonfinite = false;  // a NaN or infinity where the baseline had a finite value
  std::string error;       // the session could not be made or run: its first line
};

// Times the model with each option added to `choice` (`time_p50` measures a
// session on `inputs` as the baseline was measured) and compares its
// outputs with `baseline`'s on the same inputs.
std::vector<PrecisionOption> MeasurePrecisionOptions(
    const std::string& model_path, const BackendChoice& choice, const vigil::Session& baseline,
    double baseline_p50_ms, const std::vector<vigil::TensorRef>& inputs,
    const std::function<double(const vigil::Session&)>& time_p50);

// The text lines bench prints, and the JSON it adds.
std::vector<std::string> PrecisionOptionLines(const std::string& gpu, double baseline_p50_ms,
                                              const std::vector<PrecisionOption>& options);
nlohmann::json PrecisionOptionsJson(const std::vector<PrecisionOption>& options);

// run's one line, or "" when the hint does not apply.
std::string PrecisionHintForRun(const BackendChoice& choice, const vigil::Session& session,
                                const std::string& model_path);

}  // namespace vigil::cli
