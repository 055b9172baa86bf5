// Parameter resolution of the signal-processing ops (DFT, STFT, the
// Hann/Hamming/Blackman windows and MelWeightMatrix), shared by their shape
// inference (signal.cpp) and the CPU kernels (backends/cpu/signal.cpp), so
// that both accept the same nodes and fail with the same messages. Errors
// are InvalidModelError for attributes and InvalidInputError for input
// values, both "<node label>: <message>".
#pragma once

#include <cstdint>
#include <optional>

#include "base/status.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace vigil::ops {

// Sizes above this (DFT lengths, frame lengths, window sizes, bin counts)
// are refused, so that index products such as k * t stay far from
// overflowing int64.
inline constexpr int64_t kMaxSignalExtent = INT32_MAX;

// A 0/1 attribute (inverse, onesided, periodic).
Result<bool> ReadFlagAttr(const ir::Node& node, const char* name, int64_t fallback);

// --- DFT ---------------------------------------------------------------------------

// DFT's axis (attribute at opset 17, input 2 from opset 20) normalised
// against the input rank r: [-r, -2] or [0, r - 2], since the last dim holds
// the real and imaginary parts.
Result<int64_t> ResolveDftAxis(const ir::Node& node, int64_t axis, int64_t rank);

// The transform length: `given` (input dft_length), else the axis size, or
// 2 * (axis size - 1) for the inverse one-sided transform (IRFFT); it must be
// in [1, kMaxSignalExtent].
Result<int64_t> ResolveDftLength(const ir::Node& node, std::optional<int64_t> given, int64_t axis_size,
                                 bool inverse, bool onesided);

// The output's size along the axis for a transform of length n: n, or
// n / 2 + 1 for the forward one-sided transform (RFFT).
inline int64_t DftOutputAxisSize(int64_t n, bool inverse, bool onesided) {
  return onesided && !inverse ? n / 2 + 1 : n;
}
// The output's last dim: 1 (real) for the IRFFT, else 2 (complex).
inline int64_t DftOutputLastDim(bool inverse, bool onesided) { return onesided && inverse ? 1 : 2; }

// Checks the input's last dim (1: real, 2: complex) and rank (at least 2).
Status CheckSignalLayout(const ir::Node& node, const char* what, int64_t rank, std::optional<int64_t> last_dim);

// --- STFT --------------------------------------------------------------------------

struct StftGeometry {
  int64_t frame_step = 0;
  int64_t frame_length = 0;
  int64_t frames = 0;  // (signal_length - frame_length) / frame_step + 1
  int64_t bins = 0;    // frame_length / 2 + 1 when onesided, else frame_length
};

// STFT's frames from the signal length, frame_step (input 1), the window's
// length (input 2, when given) and frame_length (input 3, when given);
// without either, a frame is the whole signal.
Result<StftGeometry> ResolveStft(const ir::Node& node, int64_t signal_length, int64_t frame_step,
                                 std::optional<int64_t> window_length, std::optional<int64_t> frame_length,
                                 bool onesided);

// --- Windows and MelWeightMatrix ---------------------------------------------------------

// The 'output_datatype' attribute (default float32): an integer or float
// type of ONNX's T2/T3 (no bool, strings or 8/4-bit floats).
Result<ir::DataType> ReadOutputDatatype(const ir::Node& node);

// A window size (input 0 of the window ops): in [0, kMaxSignalExtent].
Status CheckWindowSize(const ir::Node& node, int64_t size);

// MelWeightMatrix's integer inputs: num_mel_bins in [0, kMaxSignalExtent],
// dft_length in [1, kMaxSignalExtent], sample_rate positive. Returns the
// number of spectrogram bins, dft_length / 2 + 1.
Result<int64_t> CheckMelSizes(const ir::Node& node, int64_t num_mel_bins, int64_t dft_length, int64_t sample_rate);

}  // namespace vigil::ops
