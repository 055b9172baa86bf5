// Optimised CPU paths, beside the reference kernels they stand in for (the
// way ncnn keeps src/layer/x86/ beside src/layer/). A reference kernel calls
// one of these when KernelContext::optimised() and the case fits; each
// returns whether it took the case, so that every other case stays on the
// reference code. Tests run both on odd sizes and compare them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/conv_pool_kernels.h"
#include "backends/cpu/gemm.h"

namespace vigil::cpu::fast {

// MaxPool over 2D float32 planes, values only (no Indices output): for each
// of `planes` planes of g.image, the maximum over each window, NaN winning
// as in the reference (the first NaN of a window), -inf for a window wholly
// in the padding. Returns false (nothing written) unless g is 2D.
bool MaxPool2dFloat(const SpatialGeometry& g, int64_t planes, const float* x, float* y);
// The same on channels-last float32: X [batch, image, channels], Y [batch,
// columns, channels], each channel by the reference's rule.
bool MaxPool2dNhwcFloat(const SpatialGeometry& g, int64_t batch, int64_t channels, const float* x, float* y);
// GlobalAveragePool on channels-last float32, X [batch, spatial, channels],
// Y [batch, channels]: each channel summed in double in spatial order,
// divided by `spatial` and rounded once, the reference's arithmetic (so its
// results bit for bit).
void GlobalAveragePoolNhwcFloat(int64_t batch, int64_t spatial, int64_t channels, const float* x, float* y);

// y = 1 / (1 + exp(-x)) over n float32 values (y may be x), as the
// reference Sigmoid computes it but with a vectorisable exp: within 4 units
// in the last place of the reference (activation.cpp).
void SigmoidFloat(const float* x, float* y, uint64_t n);
// y = x * SigmoidFloat(x) over n float32 values (y may be x): the Sigmoid
// and Mul pair it replaces (ai.vigil.Silu), bit for bit, in one pass.
void SiluFloat(const float* x, float* y, uint64_t n);

// y = tanh(x) over n float32 values (y may be x), vectorisable (fast/
// activation.cpp); within a few units in the last place of std::tanh (the
// test states the bound).
void TanhFloat(const float* x, float* y, uint64_t n);

// y = erf(x) over n float32 values (y may be x), vectorisable (fast/
// activation.cpp): within 2 units in the last place of the correctly rounded
// erf, so within 3 of the C library's erff (the reference).
void ErfFloat(const float* x, float* y, uint64_t n);
// y = 0.5 x (1 + erf(x / sqrt(2))) over n float32 values (GELU,
// approximate "none"), as the reference computes it with ErfFloat's erf:
// within 4 units in the last place of the reference, or, for negative x,
// where 1 + erf cancels and magnifies erf's error, within 3e-7 |x|.
void GeluFloat(const float* x, float* y, uint64_t n);

// One LSTM step's gates and states over `rows` rows, float32, with the
// default activations (Sigmoid, Tanh, Tanh), in the reference's order of
// operations (recurrent.cpp's LstmStep) but with the vectorised Sigmoid and
// Tanh above: `pre` [rows, 4*hidden] holds X*W^T + H*R^T + the biases, gates
// i, o, f, c; `peep` [3*hidden] the peepholes of i, o, f (zeros when the
// model has none); `c` [rows, hidden] the previous cell state; `clip` the
// cell clip (nullptr: none); `input_forget` couples f to 1 - i. Writes
// h_out and c_out [rows, hidden] (fast/recurrent_cell.cpp).
struct LstmCellArgs {
  const float* pre;
  const float* peep;
  const float* c;
  int64_t rows;
  int64_t hidden;
  const float* clip;
  bool input_forget;
  float* h_out;
  float* c_out;
};
void LstmCellFloat(const LstmCellArgs& a);


// Resize of float32 planes along their last two axes by per-axis taps (the
// reference's AxisTaps: `width` source indices and weights per output
// position), rows first, then columns: the reference's arithmetic (double
// sums in tap order, zero weights skipped, one rounding to float at the
// end), row by row instead of through two double copies of the tensor
// (fast/resize.cpp). `x` holds `planes` planes of [in_h, in_w, inner],
// `out` planes of [out_h, out_w, inner]: `inner` elements carried along
// (1 for NCHW images; the channels for NHWC ones), each summed alone.
struct SeparableTaps {
  int64_t in = 0, out = 0;
  size_t width = 0;  // 0: the axis is not resized (out == in), copied
  const int64_t* index = nullptr;  // [out * width]
  const double* weight = nullptr;  // [out * width]
};
void SeparableResizeFloat(const float* x, int64_t planes, const SeparableTaps& rows, const SeparableTaps& cols,
                          float* out, int64_t inner = 1);

// out = alpha * op(a) * op(b) (+ out when `accumulate`), row-major, through
// oneDNN's sgemm on `threads` threads (gemm_dnnl.cpp). False, with nothing
// written, where oneDNN is not loaded, the product is empty or oneDNN
// refuses it: the caller then computes it.
bool SgemmDnnl(const GemmShape& s, const float* a, const float* b, float* out, float alpha, bool accumulate,
               int threads);

// LayerNormalization of `rows` contiguous rows of `inner` float32 values,
// x to y, with `scale` and `bias` (may be null) of `inner` values each, as
// the reference computes it but with vectorised sums, on the thread pool:
// within one unit in the last place of the reference (fast/normalization.cpp).
// False, nothing written, for empty rows (the reference's NaN statistics).
bool LayerNormRowsFloat(const float* x, float* y, int64_t rows, int64_t inner, const double* scale,
                        const double* bias, double epsilon);

// Softmax of one contiguous line of n float32 values into y (y may be x):
// exp(x - max) with activation.cpp's exp, summed in double, times 1 / sum;
// within 4 units in the last place of the reference. False, with y
// unspecified, for a line holding a NaN or an infinite maximum, which the
// reference computes instead.
bool SoftmaxLineFloat(const float* x, float* y, int64_t n);

// Nearest-neighbour resize as a gather of whole elements: out[i0, ..., ik]
// = x[index[0][i0], ..., index[k][ik]], `index[a]` holding out_shape[a]
// source positions along axis a (all in range), elements of
// `element_bytes` bytes (resize.cpp). The reference computes the same
// through double (so a -0.0 comes out +0.0 there, and the same otherwise).
void GatherResize(const uint8_t* x, const std::vector<int64_t>& in_shape, uint8_t* out,
                  const std::vector<int64_t>& out_shape, const std::vector<std::vector<int64_t>>& index,
                  size_t element_bytes);

class KernelCache;  // kernel_cache.h

// One float32 Conv: X [batch, in_channels, image], W [out_channels,
// in_channels / group, kernel], optional B [out_channels], Y [batch,
// out_channels, columns], all contiguous NCHW; or, with `channels_last`
// (ai.vigil.ConvNhwc, 2D), X [batch, H, W, in_channels], W [out_channels,
// kH, kW, in_channels / group] and Y [batch, OH, OW, out_channels], and then
// optionally Y = act(conv + B + Z) with Z of Y's shape and layout (the
// op's epilogue; each step rounded to float32 as the separate ops would).
// `w_tensor` is W as the node received it: a constant's packed copy is kept
// in `cache` (may be null).
enum class ConvActivation { kNone, kRelu, kRelu6 };
struct ConvProblem {
  int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  const SpatialGeometry* g = nullptr;
  const runtime::Tensor* w_tensor = nullptr;
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  bool channels_last = false;
  const float* z = nullptr;  // channels_last only
  ConvActivation activation = ConvActivation::kNone;  // channels_last only
};
// Runs it through oneDNN (conv_dnnl.cpp): true when done; false, with
// nothing written, when oneDNN is not loaded, the convolution is not 2D or
// oneDNN has no implementation for it; an error when oneDNN failed running it.
Result<bool> ConvDnnl(const ConvProblem& p, KernelCache* cache);

}  // namespace vigil::cpu::fast
