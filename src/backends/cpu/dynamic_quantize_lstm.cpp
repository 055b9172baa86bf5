// CPU kernel of com.microsoft DynamicQuantizeLSTM (opset 1), the LSTM that
// onnxruntime.quantization's dynamic mode writes: inputs X, W, R, B,
// sequence_lens, initial_h, initial_c, P (as ONNX LSTM, layout 0), then
// W_scale, W_zero_point, R_scale, R_zero_point. W [num_dir, input, 4*hidden]
// and R [num_dir, hidden, 4*hidden] are int8 or uint8 (transposed against
// ONNX LSTM's W and R); their scales and zero points are per direction
// ([num_dir]) or per column ([num_dir, 4*hidden]).
//
// Each product A*W (A = the inputs of all steps up to the longest sequence,
// at once; then each step's hidden state, all batch rows at once) quantizes
// A to uint8 as DynamicQuantizeLinear does (range widened to include 0,
// scale (max-min)/255, zero point round(-min/scale)), multiplies exactly in
// integers and dequantizes with float(acc) * (scale_a * scale_w[column]),
// as onnxruntime's CPU kernel does. The gate math is the float LSTM's
// (recurrent.cpp, through RunLstmWithProducts).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "backends/cpu/lstm_products.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

bool IsInt8Type(DataType t) { return t == DataType::kInt8 || t == DataType::kUint8; }

// A matrix quantized to uint8 with one scale and zero point.
struct QuantizedRows {
  std::vector<int32_t> q;  // q - zero point
  float scale = 1.0f;
};

QuantizedRows QuantizeDynamic(const float* a, size_t n) {
  float lo = 0.0f, hi = 0.0f;  // the range always includes 0
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, a[i]);
    hi = std::max(hi, a[i]);
  }
  QuantizedRows r;
  r.scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  const float zp = std::nearbyint(std::min(std::max(0.0f - lo / r.scale, 0.0f), 255.0f));
  r.q.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const float v = std::min(std::max(std::nearbyint(a[i] / r.scale) + zp, 0.0f), 255.0f);
    r.q[i] = static_cast<int32_t>(v) - static_cast<int32_t>(zp);
  }
  return r;
}

// One weight input (W or R) with its scales and zero points.
struct QuantizedWeight {
  const runtime::Tensor* w = nullptr;  // [num_dir, k, n]
  int64_t k = 0, n = 0;
  std::vector<float> scale;  // [num_dir, n], per column
  std::vector<int32_t> zp;   // [num_dir, n]

  int32_t At(int64_t d, int64_t row, int64_t col) const {
    const auto* bytes = static_cast<const uint8_t*>(w->raw_data());
    const size_t i = static_cast<size_t>((d * k + row) * n + col);
    return w->dtype() == DataType::kInt8 ? static_cast<int8_t>(bytes[i]) : bytes[i];
  }

  // out[rows, n] = dequantized (quantize(a[rows, k]) * W[d]).
  void Multiply(int64_t d, const float* a, int64_t rows, float* out) const {
    const QuantizedRows qa = QuantizeDynamic(a, static_cast<size_t>(rows * k));
    std::vector<float> mult(static_cast<size_t>(n));
    for (int64_t c = 0; c < n; ++c) mult[c] = qa.scale * scale[d * n + c];
    std::vector<int64_t> acc(static_cast<size_t>(n));
    for (int64_t i = 0; i < rows; ++i) {
      std::fill(acc.begin(), acc.end(), 0);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t qv = qa.q[i * k + j];
        if (qv == 0) continue;
        for (int64_t c = 0; c < n; ++c) acc[c] += qv * (At(d, j, c) - zp[d * n + c]);
      }
      for (int64_t c = 0; c < n; ++c) out[i * n + c] = static_cast<float>(acc[c]) * mult[c];
    }
  }
};

class QuantizedLstmProducts final : public LstmProducts {
 public:
  QuantizedLstmProducts(QuantizedWeight w, QuantizedWeight r) : w_(std::move(w)), r_(std::move(r)) {}
  void Input(int64_t d, const float* x, int64_t rows, float* out) const override { w_.Multiply(d, x, rows, out); }
  void Recurrent(int64_t d, const float* h, int64_t rows, float* out) const override {
    r_.Multiply(d, h, rows, out);
  }

 private:
  QuantizedWeight w_, r_;
};

// Reads weight input `wi` (W or R), its scale (input si) and its zero point
// (input zi), each per direction [num_dir] or per column [num_dir, columns].
Result<QuantizedWeight> ReadWeight(const KernelContext& ctx, size_t wi, const char* name, size_t si,
                                   const char* scale_name, size_t zi, const char* zp_name) {
  QuantizedWeight q;
  q.w = ctx.input(wi);
  if (!q.w) return ctx.Fail("required input {} ({}) is missing", wi, name);
  if (!IsInt8Type(q.w->dtype()) || q.w->rank() != 3) {
    return ctx.Fail("input {} ({}) is {}, expected int8 or uint8 of rank 3", wi, name, q.w->Describe());
  }
  const int64_t nd = q.w->dim(0);
  q.k = q.w->dim(1);
  q.n = q.w->dim(2);
  const runtime::Tensor* s = ctx.input(si);
  const runtime::Tensor* z = ctx.input(zi);
  if (!s) return ctx.Fail("required input {} ({}) is missing", si, scale_name);
  if (!z) return ctx.Fail("required input {} ({}) is missing", zi, zp_name);
  auto per_direction = [&](const runtime::Tensor& t) { return t.shape() == std::vector<int64_t>{nd}; };
  auto per_column = [&](const runtime::Tensor& t) { return t.shape() == std::vector<int64_t>{nd, q.n}; };
  if (s->dtype() != DataType::kFloat32 || !(per_direction(*s) || per_column(*s))) {
    return ctx.Fail("input {} ({}) is {}, expected float32 [{}] (per direction) or [{},{}] (per column of {})", si,
                    scale_name, s->Describe(), nd, nd, q.n, name);
  }
  if (z->dtype() != q.w->dtype() || !(per_direction(*z) || per_column(*z))) {
    return ctx.Fail("input {} ({}) is {}, expected {} [{}] or [{},{}] like input {} ({})", zi, zp_name, z->Describe(),
                    ir::DataTypeName(q.w->dtype()), nd, nd, q.n, wi, name);
  }
  q.scale.resize(static_cast<size_t>(nd * q.n));
  q.zp.resize(q.scale.size());
  const auto* zb = static_cast<const uint8_t*>(z->raw_data());
  for (int64_t d = 0; d < nd; ++d) {
    for (int64_t c = 0; c < q.n; ++c) {
      const size_t si_ = static_cast<size_t>(per_column(*s) ? d * q.n + c : d);
      const size_t zi_ = static_cast<size_t>(per_column(*z) ? d * q.n + c : d);
      q.scale[d * q.n + c] = s->data<float>()[si_];
      q.zp[d * q.n + c] = z->dtype() == DataType::kInt8 ? static_cast<int8_t>(zb[zi_]) : zb[zi_];
    }
  }
  return q;
}

}  // namespace

Status DynamicQuantizeLstmKernel(KernelContext& ctx) {
  if (ctx.num_inputs() < 12) {
    return ctx.Fail("has {} inputs, expected 12 (X, W, R, B, sequence_lens, initial_h, initial_c, P, W_scale, "
                    "W_zero_point, R_scale, R_zero_point)",
                    ctx.num_inputs());
  }
  VIGIL_ASSIGN_OR_RETURN(QuantizedWeight w, ReadWeight(ctx, 1, "W", 8, "W_scale", 9, "W_zero_point"));
  VIGIL_ASSIGN_OR_RETURN(QuantizedWeight r, ReadWeight(ctx, 2, "R", 10, "R_scale", 11, "R_zero_point"));
  if (r.w->dtype() != w.w->dtype()) {
    return ctx.Fail("input 2 (R) has dtype {}, expected {} like input 1 (W)", ir::DataTypeName(r.w->dtype()),
                    ir::DataTypeName(w.w->dtype()));
  }
  // RunLstmWithProducts checks W's and R's shapes against X and hidden_size.
  QuantizedLstmProducts products(std::move(w), std::move(r));
  return RunLstmWithProducts(ctx, products);
}

}  // namespace vigil::cpu
