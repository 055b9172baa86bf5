// An LSTM whose two matrix products are supplied by the caller: the CPU
// LSTM driver (recurrent.cpp) runs the time loop, the sequence lengths,
// directions and gate math, and asks an LstmProducts for X*W^T and H*R^T.
// com.microsoft DynamicQuantizeLSTM (dynamic_quantize_lstm.cpp) uses it with
// products of dynamically quantized inputs and int8/uint8 weights.
#pragma once

#include <cstdint>

#include "backends/cpu/kernel.h"

namespace vigil::cpu {

class LstmProducts {
 public:
  virtual ~LstmProducts() = default;
  // out[rows, 4*hidden] = x[rows, input] times direction d's input weights.
  // x is the time-major input's first `rows` rows: every batch entry of the
  // steps up to the longest sequence, valid or not.
  virtual void Input(int64_t d, const float* x, int64_t rows, float* out) const = 0;
  // out[rows, 4*hidden] = h[rows, hidden] times direction d's recurrent
  // weights. Rows of sequences that ended before the previous step are zero.
  virtual void Recurrent(int64_t d, const float* h, int64_t rows, float* out) const = 0;
};

// Runs the LSTM node of ctx (inputs X, W, R, B, sequence_lens, initial_h,
// initial_c, P and the LSTM attributes, layout 0, float32) with `products`
// for the matrix products. W and R are [num_dir, input, 4*hidden] and
// [num_dir, hidden, 4*hidden], of any dtype (the products read them); only
// their shapes are checked here.
[[nodiscard]] Status RunLstmWithProducts(KernelContext& ctx, const LstmProducts& products);

// com.microsoft DynamicQuantizeLSTM (dynamic_quantize_lstm.cpp).
[[nodiscard]] Status DynamicQuantizeLstmKernel(KernelContext& ctx);

}  // namespace vigil::cpu
