// CPU kernels of the signal-processing ops (ops/signal.h): DFT, STFT,
// HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix. Parameters
// are resolved by ops/signal.cpp, which shape inference shares. Everything
// is computed in double; the DFT is the direct O(n^2) sum over a table of
// twiddle factors (exact index k * t mod n), written for clarity rather than
// speed.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <optional>
#include <vector>

#include "backends/cpu/element_codec.h"
#include "backends/cpu/element_types.h"
#include "backends/cpu/kernel_families.h"
#include "backends/cpu/shape_ops_common.h"
#include "ops/signal.h"

namespace vigil::cpu {
namespace {

using Complex = std::complex<double>;

// The value of integer input i, which must hold one value (a scalar or a
// one-element tensor).
Result<int64_t> ReadScalar(const KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor& t = *ctx.input(i);
  if (t.rank() > 1 || t.element_count() != 1) {
    return ctx.Fail("input {} ({}) is {}, expected a scalar", i, name, t.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> v, shape_family::ReadInts(ctx, i, name));
  return v[0];
}

// The value of float input i, which must hold one value.
Result<double> ReadFloatScalar(KernelContext& ctx, size_t i, const char* name) {
  const runtime::Tensor& t = *ctx.input(i);
  if (t.rank() > 1 || t.element_count() != 1) {
    return ctx.Fail("input {} ({}) is {}, expected a scalar", i, name, t.Describe());
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> v, ReadParamAsDoubles(ctx, i));
  return v[0];
}

// --- The transform ---------------------------------------------------------------------

// e^{-2 pi i m / n} for m in [0, n): the forward kernel; the inverse uses the
// conjugates.
Result<std::vector<Complex>> Twiddles(const KernelContext& ctx, int64_t n) {
  std::vector<Complex> w;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, w, static_cast<size_t>(n)));
  for (int64_t m = 0; m < n; ++m) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n);
    w[static_cast<size_t>(m)] = Complex(std::cos(angle), std::sin(angle));
  }
  return w;
}

// out[k] = scale * sum_{t < used} in[t] * w[k * t mod n] (conjugated w for the
// inverse), k in [0, out_len): the DFT of length n = w.size() of a signal
// whose values past `used` are zero.
void TransformLine(const Complex* in, int64_t used, const std::vector<Complex>& w, bool inverse, double scale,
                   int64_t out_len, Complex* out) {
  const int64_t n = static_cast<int64_t>(w.size());
  for (int64_t k = 0; k < out_len; ++k) {
    Complex sum = 0;
    int64_t m = 0;  // k * t mod n, stepped by k
    for (int64_t t = 0; t < used; ++t) {
      const Complex& tw = w[static_cast<size_t>(m)];
      sum += in[t] * (inverse ? std::conj(tw) : tw);
      m += k;
      if (m >= n) m -= n;
    }
    out[k] = sum * scale;
  }
}

// The inverse of a one-sided spectrum (IRFFT): the real signal of length n
// whose spectrum is X[k] = in[k] for k <= n / 2 and conj(in[n - k]) above,
// the imaginary parts of X[0] (and of X[n / 2] for even n) dropped:
//   out[t] = (Re X[0] + 2 sum_{0<k<n/2} Re(X[k] e^{2 pi i k t / n}) + [n even] Re X[n/2] (-1)^t) / n
void RealInverseLine(const Complex* in, const std::vector<Complex>& w, double* out) {
  const int64_t n = static_cast<int64_t>(w.size());
  const int64_t half = (n - 1) / 2;  // bins with a distinct mirror image
  for (int64_t t = 0; t < n; ++t) {
    double sum = in[0].real();
    int64_t m = t;  // k * t mod n for k = 1
    for (int64_t k = 1; k <= half; ++k) {
      sum += 2.0 * (in[k] * std::conj(w[static_cast<size_t>(m)])).real();
      m += t;
      if (m >= n) m -= n;
    }
    if (n % 2 == 0) sum += (t % 2 == 0 ? 1.0 : -1.0) * in[n / 2].real();
    out[t] = sum / static_cast<double>(n);
  }
}

// --- DFT -----------------------------------------------------------------------------------

Status Dft(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  const runtime::Tensor& x = *ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  VIGIL_RETURN_IF_ERROR(ops::CheckSignalLayout(ctx.node(), "input", rank,
                                               rank > 0 ? std::optional<int64_t>(x.dim(x.rank() - 1)) : std::nullopt));
  VIGIL_ASSIGN_OR_RETURN(bool inverse, ops::ReadFlagAttr(ctx.node(), "inverse", 0));
  VIGIL_ASSIGN_OR_RETURN(bool onesided, ops::ReadFlagAttr(ctx.node(), "onesided", 0));
  int64_t axis_value = -2;
  if (ctx.opset() < 20) {
    VIGIL_ASSIGN_OR_RETURN(axis_value, ops::IntAttr(ctx.node(), "axis", 1));
  } else if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(axis_value, ReadScalar(ctx, 2, "axis"));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::ResolveDftAxis(ctx.node(), axis_value, rank));
  std::optional<int64_t> given;
  if (ctx.has_input(1)) {
    VIGIL_ASSIGN_OR_RETURN(given, ReadScalar(ctx, 1, "dft_length"));
  }
  const int64_t in_len = x.dim(static_cast<size_t>(axis));
  VIGIL_ASSIGN_OR_RETURN(int64_t n, ops::ResolveDftLength(ctx.node(), given, in_len, inverse, onesided));
  const bool real_inverse = inverse && onesided;
  const int64_t out_len = ops::DftOutputAxisSize(n, inverse, onesided);
  const int64_t out_last = ops::DftOutputLastDim(inverse, onesided);
  std::vector<int64_t> out_shape = x.shape();
  out_shape[static_cast<size_t>(axis)] = out_len;
  out_shape.back() = out_last;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<size_t>(d));
  for (int64_t d = axis + 1; d + 1 < rank; ++d) inner *= x.dim(static_cast<size_t>(d));
  const int64_t in_last = x.dim(x.rank() - 1);
  // The input values a line reads: up to n (n / 2 + 1 for the IRFFT, whose
  // input is a one-sided spectrum); past them the signal is zero.
  const int64_t line_len = real_inverse ? n / 2 + 1 : n;
  const int64_t used = std::min(in_len, line_len);
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, x.dtype(), out_shape));
    if (y->element_count() == 0) return Status::Ok();
    std::vector<typename C::Compute> scratch;
    VIGIL_ASSIGN_OR_RETURN(const typename C::Compute* xs, ComputeView<D>(ctx, x, scratch));
    VIGIL_ASSIGN_OR_RETURN(std::vector<Complex> w, Twiddles(ctx, n));
    std::vector<Complex> line, spectrum;
    std::vector<double> real_out;
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, line, static_cast<size_t>(line_len)));
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, spectrum, static_cast<size_t>(out_len)));
    if (real_inverse) VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, real_out, static_cast<size_t>(n)));
    auto* ys = y->data<typename C::Storage>();
    const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        std::fill(line.begin(), line.end(), Complex(0));
        for (int64_t t = 0; t < used; ++t) {
          const auto* v = xs + ((o * in_len + t) * inner + i) * in_last;
          line[static_cast<size_t>(t)] = Complex(v[0], in_last == 2 ? static_cast<double>(v[1]) : 0.0);
        }
        auto* out = ys + (o * out_len * inner + i) * out_last;
        const int64_t out_step = inner * out_last;
        if (real_inverse) {
          RealInverseLine(line.data(), w, real_out.data());
          for (int64_t k = 0; k < n; ++k) out[k * out_step] = C::Store(static_cast<typename C::Compute>(real_out[k]));
          continue;
        }
        TransformLine(line.data(), used, w, inverse, scale, out_len, spectrum.data());
        for (int64_t k = 0; k < out_len; ++k) {
          out[k * out_step] = C::Store(static_cast<typename C::Compute>(spectrum[k].real()));
          out[k * out_step + 1] = C::Store(static_cast<typename C::Compute>(spectrum[k].imag()));
        }
      }
    }
    return Status::Ok();
  });
}

// --- STFT -----------------------------------------------------------------------------------

// output[b, f, k] = sum_t signal[b, f * frame_step + t] * window[t] * e^{-2 pi i k t / frame_length}
// for k below frame_length (frame_length / 2 + 1 when onesided).
Status Stft(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 2));
  const runtime::Tensor& signal = *ctx.input(0);
  if (signal.rank() != 3) {
    return ctx.Fail("input 0 (signal) is {}, expected rank 3 [batch, length, 1 or 2]", signal.Describe());
  }
  VIGIL_RETURN_IF_ERROR(ops::CheckSignalLayout(ctx.node(), "0 (signal)", 3, signal.dim(2)));
  VIGIL_ASSIGN_OR_RETURN(bool onesided, ops::ReadFlagAttr(ctx.node(), "onesided", 1));
  VIGIL_ASSIGN_OR_RETURN(int64_t step, ReadScalar(ctx, 1, "frame_step"));
  std::optional<int64_t> window_length, frame_length;
  if (ctx.has_input(2)) {
    const runtime::Tensor& window = *ctx.input(2);
    if (window.rank() != 1) return ctx.Fail("input 2 (window) is {}, expected 1-D", window.Describe());
    if (window.dtype() != signal.dtype()) {
      return ctx.Fail("input 2 (window) is {}, expected {} like the signal", ir::DataTypeName(window.dtype()),
                      ir::DataTypeName(signal.dtype()));
    }
    window_length = window.dim(0);
  }
  if (ctx.has_input(3)) {
    VIGIL_ASSIGN_OR_RETURN(frame_length, ReadScalar(ctx, 3, "frame_length"));
  }
  const int64_t batch = signal.dim(0), length = signal.dim(1), parts = signal.dim(2);
  VIGIL_ASSIGN_OR_RETURN(ops::StftGeometry g,
                         ops::ResolveStft(ctx.node(), length, step, window_length, frame_length, onesided));
  std::vector<double> window(static_cast<size_t>(g.frame_length), 1.0);
  if (ctx.has_input(2)) {
    VIGIL_ASSIGN_OR_RETURN(window, ReadParamAsDoubles(ctx, 2));
  }
  return DispatchFloat(ctx, 0, [&]<ir::DataType D>() -> Status {
    using C = ElementCodec<D>;
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, signal.dtype(), {batch, g.frames, g.bins, 2}));
    if (y->element_count() == 0) return Status::Ok();
    std::vector<typename C::Compute> scratch;
    VIGIL_ASSIGN_OR_RETURN(const typename C::Compute* xs, ComputeView<D>(ctx, signal, scratch));
    VIGIL_ASSIGN_OR_RETURN(std::vector<Complex> w, Twiddles(ctx, g.frame_length));
    std::vector<Complex> frame, spectrum;
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, frame, static_cast<size_t>(g.frame_length)));
    VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, spectrum, static_cast<size_t>(g.bins)));
    auto* out = y->data<typename C::Storage>();
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < g.frames; ++f) {
        const auto* start = xs + (b * length + f * g.frame_step) * parts;
        for (int64_t t = 0; t < g.frame_length; ++t) {
          const auto* v = start + t * parts;
          const double wt = window[static_cast<size_t>(t)];
          frame[static_cast<size_t>(t)] = Complex(v[0] * wt, parts == 2 ? v[1] * wt : 0.0);
        }
        TransformLine(frame.data(), g.frame_length, w, false, 1.0, g.bins, spectrum.data());
        for (const Complex& c : spectrum) {
          *out++ = C::Store(static_cast<typename C::Compute>(c.real()));
          *out++ = C::Store(static_cast<typename C::Compute>(c.imag()));
        }
      }
    }
    return Status::Ok();
  });
}

// --- Output of any numeric dtype ------------------------------------------------------------

// Writes `values` into a new output 0 of `dtype` and `shape`: floats rounded,
// integers truncated toward zero (as numpy's astype).
Status WriteOutput(KernelContext& ctx, ir::DataType dtype, std::vector<int64_t> shape,
                   const std::vector<double>& values) {
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dtype, std::move(shape)));
  return DispatchDtype<kNumericTypes>(
      dtype,
      [&](auto tag) -> Status {
        using E = Elem<decltype(tag)::value>;
        auto* out = y->data<typename E::Storage>();
        for (size_t i = 0; i < values.size(); ++i) out[i] = E::Store(ConvertValue<typename E::Compute>(values[i]));
        return Status::Ok();
      },
      [&]() -> Status { return ctx.Unsupported("output_datatype {} is not supported", ir::DataTypeName(dtype)); });
}

// --- Windows ---------------------------------------------------------------------------------

// w[i] = a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N), N = size (periodic) or
// size - 1 (symmetric). A symmetric window of size 1, where N is 0, is [1]
// (as numpy's and torch's windows; the formula is 0 / 0 there).
template <int kA0Num, int kA0Den, int kA1Num, int kA1Den, int kA2Num, int kA2Den>
Status CosineWindow(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 1));
  VIGIL_ASSIGN_OR_RETURN(bool periodic, ops::ReadFlagAttr(ctx.node(), "periodic", 1));
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, ops::ReadOutputDatatype(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(int64_t size, ReadScalar(ctx, 0, "size"));
  VIGIL_RETURN_IF_ERROR(ops::CheckWindowSize(ctx.node(), size));
  constexpr double a0 = static_cast<double>(kA0Num) / kA0Den;
  constexpr double a1 = static_cast<double>(kA1Num) / kA1Den;
  constexpr double a2 = static_cast<double>(kA2Num) / kA2Den;
  const int64_t period = periodic ? size : size - 1;
  std::vector<double> w;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, w, static_cast<size_t>(size)));
  for (int64_t i = 0; i < size; ++i) {
    if (period == 0) {
      w[static_cast<size_t>(i)] = 1.0;
      continue;
    }
    const double angle = 2.0 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(period);
    w[static_cast<size_t>(i)] = a0 - a1 * std::cos(angle) + a2 * std::cos(2.0 * angle);
  }
  return WriteOutput(ctx, dtype, {size}, w);
}

// --- MelWeightMatrix --------------------------------------------------------------------------

// mel(f) = 2595 log10(1 + f / 700), through log1p and expm1 as ONNX's
// reference computes it, so that band edges falling on a bin boundary round
// the same way.
double HertzToMel(double hz) { return 2595.0 * std::log1p(hz / 700.0) / std::numbers::ln10; }
double MelToHertz(double mel) { return 700.0 * std::expm1(mel / 2595.0 * std::numbers::ln10); }

// num_mel_bins triangles over the spectrogram bins [0, dft_length / 2]: the
// band edges are num_mel_bins + 2 points evenly spaced in mel from
// lower_edge_hertz (with a step of (mel(upper) - mel(lower)) / (num_mel_bins
// + 2), as ONNX defines it), each mapped to the bin floor((dft_length + 1) *
// hz / sample_rate). Triangle i rises from edge i to 1 at edge i + 1 and
// falls to 0 at edge i + 2. Bins past the last spectrogram bin (above the
// Nyquist frequency) are dropped.
Status MelWeightMatrix(KernelContext& ctx) {
  VIGIL_RETURN_IF_ERROR(RequireInputs(ctx, 5));
  VIGIL_ASSIGN_OR_RETURN(ir::DataType dtype, ops::ReadOutputDatatype(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(int64_t mel_bins, ReadScalar(ctx, 0, "num_mel_bins"));
  VIGIL_ASSIGN_OR_RETURN(int64_t dft_length, ReadScalar(ctx, 1, "dft_length"));
  VIGIL_ASSIGN_OR_RETURN(int64_t sample_rate, ReadScalar(ctx, 2, "sample_rate"));
  VIGIL_ASSIGN_OR_RETURN(double lower, ReadFloatScalar(ctx, 3, "lower_edge_hertz"));
  VIGIL_ASSIGN_OR_RETURN(double upper, ReadFloatScalar(ctx, 4, "upper_edge_hertz"));
  VIGIL_ASSIGN_OR_RETURN(int64_t spectrum_bins, ops::CheckMelSizes(ctx.node(), mel_bins, dft_length, sample_rate));
  if (!(lower >= 0) || !std::isfinite(lower)) {
    return ctx.Fail("input 3 (lower_edge_hertz) is {}, expected a finite value >= 0", lower);
  }
  if (!(upper >= lower) || !std::isfinite(upper)) {
    return ctx.Fail("input 4 (upper_edge_hertz) is {}, expected a finite value >= lower_edge_hertz ({})", upper,
                    lower);
  }
  // Bin indices beyond this are refused so that they convert to int64 exactly.
  constexpr double kMaxBin = 1e15;
  const double low_mel = HertzToMel(lower), high_mel = HertzToMel(upper);
  const double mel_step = (high_mel - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edges(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    const double hz = MelToHertz(low_mel + static_cast<double>(i) * mel_step);
    const double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    if (!(bin < kMaxBin)) {
      return ctx.Fail("input 4 (upper_edge_hertz) is {}, which maps to spectrogram bin {}; expected far fewer bins",
                      upper, bin);
    }
    edges[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
  }
  int64_t count = 0;
  if (__builtin_mul_overflow(spectrum_bins, mel_bins, &count) || count > ops::kMaxSignalExtent) {
    return ctx.Fail("the matrix would be [{}, {}] (dft_length {}, num_mel_bins {}), more than {} elements",
                    spectrum_bins, mel_bins, dft_length, mel_bins, ops::kMaxSignalExtent);
  }
  std::vector<double> m;
  VIGIL_RETURN_IF_ERROR(ResizeScratch(ctx, m, static_cast<size_t>(count)));
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < spectrum_bins) m[static_cast<size_t>(row * mel_bins + col)] = v;
  };
  for (int64_t i = 0; i < mel_bins; ++i) {
    const int64_t left = edges[static_cast<size_t>(i)], centre = edges[static_cast<size_t>(i + 1)],
                  right = edges[static_cast<size_t>(i + 2)];
    if (centre == left) {
      set(centre, i, 1.0);
    } else {
      for (int64_t j = left; j <= std::min(centre, spectrum_bins - 1); ++j) {
        set(j, i, static_cast<double>(j - left) / static_cast<double>(centre - left));
      }
    }
    for (int64_t j = centre; j < std::min(right, spectrum_bins); ++j) {
      set(j, i, static_cast<double>(right - j) / static_cast<double>(right - centre));
    }
  }
  return WriteOutput(ctx, dtype, {spectrum_bins, mel_bins}, m);
}

const KernelDef kSignalKernels[] = {
    {"", "DFT", 17, kLatest, Dft},
    {"", "STFT", 17, kLatest, Stft},
    {"", "HannWindow", 17, kLatest, CosineWindow<1, 2, 1, 2, 0, 1>},
    {"", "HammingWindow", 17, kLatest, CosineWindow<25, 46, 21, 46, 0, 1>},
    {"", "BlackmanWindow", 17, kLatest, CosineWindow<42, 100, 1, 2, 8, 100>},
    {"", "MelWeightMatrix", 17, kLatest, MelWeightMatrix},
};

}  // namespace

std::span<const KernelDef> SignalKernels() { return kSignalKernels; }

}  // namespace vigil::cpu
