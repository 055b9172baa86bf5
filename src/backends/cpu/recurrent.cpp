// CPU kernels of the recurrent ops: RNN, GRU, LSTM (opsets 7, 14, 22).
//
// One driver runs every direction over time; each op supplies only its cell
// step. Inputs are converted once to a compute type (double for float64,
// float otherwise) in a canonical layout — time-major X, direction-major
// states — so the layout attribute touches only loading and storing.
// Eigen does the per-step matrix products, except for an LSTM run through
// RunLstmWithProducts (lstm_products.h), whose caller supplies them.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <Eigen/Dense>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/lstm_products.h"
#include "ops/recurrent_params.h"
#include "vigil/float16.h"
#include "backends/cpu/kernel_families.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

// The attributes are read by ops/recurrent_params.h, shared with the other backends.
using ActKind = ops::RecurrentActKind;
using Activation = ops::RecurrentActivation;

template <typename C>
C Apply(const Activation& a, C x) {
  const C alpha = static_cast<C>(a.alpha), beta = static_cast<C>(a.beta);
  switch (a.kind) {
    case ActKind::kRelu: return x > 0 ? x : C(0);
    case ActKind::kTanh: return std::tanh(x);
    case ActKind::kSigmoid: return C(1) / (C(1) + std::exp(-x));
    case ActKind::kAffine: return alpha * x + beta;
    case ActKind::kLeakyRelu: return x >= 0 ? x : alpha * x;
    case ActKind::kThresholdedRelu: return x >= alpha ? x : C(0);  // ">=" as the RNN spec writes it
    case ActKind::kScaledTanh: return alpha * std::tanh(beta * x);
    case ActKind::kHardSigmoid: return std::min(std::max(alpha * x + beta, C(0)), C(1));
    case ActKind::kElu: return x >= 0 ? x : alpha * (std::exp(x) - C(1));
    case ActKind::kSoftsign: return x / (C(1) + std::abs(x));
    case ActKind::kSoftplus: return x > C(30) ? x : std::log1p(std::exp(x));  // avoids exp overflow
  }
  return x;
}

using Cell = ops::RecurrentCell;

struct Config {
  Cell cell = Cell::kRnn;
  int64_t gates = 1;  // 1, 3, 4
  int64_t num_dir = 1, seq = 0, batch = 0, input = 0, hidden = 0, layout = 0;
  bool reverse = false;  // direction == "reverse"
  int64_t acts_per_dir = 1;
  std::vector<Activation> acts;  // acts_per_dir * num_dir
  std::optional<double> clip;
  bool input_forget = false;
  bool linear_before_reset = false;
  // W [num_dir, input, gates*hidden] and R [num_dir, hidden, gates*hidden],
  // read by an LstmProducts, not loaded here.
  bool external_weights = false;
  // The kernel may take the optimised LSTM cell (fast/recurrent_cell.cpp).
  bool optimised = false;
};

// ---- element conversion -------------------------------------------------

bool IsRecurrentFloat(DataType t) {
  return t == DataType::kFloat32 || t == DataType::kFloat64 || t == DataType::kFloat16 || t == DataType::kBfloat16;
}

// The dtype chosen once per call, the elements converted in a loop per dtype
// (a switch per element was 4% of the LSTM tagger's time).
template <typename C>
std::vector<C> ReadAs(const runtime::Tensor& t) {
  const size_t n = t.element_count();
  std::vector<C> out(n);
  auto each = [&](const auto* src, auto convert) {
    for (size_t i = 0; i < n; ++i) out[i] = static_cast<C>(convert(src[i]));
  };
  switch (t.dtype()) {
    case DataType::kFloat32: each(t.data<float>(), [](float v) { return v; }); break;
    case DataType::kFloat64: each(t.data<double>(), [](double v) { return v; }); break;
    case DataType::kFloat16: each(t.data<uint16_t>(), Float16ToFloat); break;
    default: each(t.data<uint16_t>(), Bfloat16ToFloat); break;
  }
  return out;
}

// t[dst[k]] = v[k] for k < n, converted to t's dtype; `dst(k)` gives the index.
template <typename C, typename Index>
void StoreAll(runtime::Tensor& t, size_t n, const C* v, Index dst) {
  auto each = [&](auto* out, auto convert) {
    for (size_t k = 0; k < n; ++k) out[dst(k)] = convert(v[k]);
  };
  switch (t.dtype()) {
    case DataType::kFloat32: each(t.data<float>(), [](C x) { return static_cast<float>(x); }); break;
    case DataType::kFloat64: each(t.data<double>(), [](C x) { return static_cast<double>(x); }); break;
    case DataType::kFloat16: each(t.data<uint16_t>(), [](C x) { return FloatToFloat16(static_cast<float>(x)); }); break;
    default: each(t.data<uint16_t>(), [](C x) { return FloatToBfloat16(static_cast<float>(x)); }); break;
  }
}

// ---- inputs ---------------------------------------------------------------

Status CheckShape(const KernelContext& ctx, size_t i, const char* name, const std::vector<int64_t>& want) {
  const runtime::Tensor* t = ctx.input(i);
  if (t->shape() != want) {
    runtime::Tensor expected = runtime::Tensor::View(t->dtype(), want, nullptr);
    return ctx.Fail("input {} ({}) is {}, expected {}", i, name, t->Describe(), expected.Describe());
  }
  return Status::Ok();
}

Status ReadConfig(const KernelContext& ctx, Cell cell, Config& cfg) {
  cfg.cell = cell;
  const bool ext = cfg.external_weights;
  const ir::Node& node = ctx.node();
  VIGIL_ASSIGN_OR_RETURN(ops::RecurrentAttrs attrs, ops::ReadRecurrentAttrs(node, cell, ctx.opset() >= 14));
  cfg.gates = attrs.gates;
  cfg.num_dir = attrs.num_dir;
  cfg.reverse = attrs.reverse;
  cfg.layout = attrs.layout;
  if (attrs.clip) cfg.clip = *attrs.clip;
  cfg.input_forget = attrs.input_forget;
  cfg.linear_before_reset = attrs.linear_before_reset;
  cfg.acts_per_dir = attrs.acts_per_dir;
  cfg.acts = std::move(attrs.acts);

  // Shapes: X, W, R decide the sizes; every other input is checked against them.
  const runtime::Tensor* x = ctx.input(0);
  const runtime::Tensor* w = ctx.input(1);
  const runtime::Tensor* r = ctx.input(2);
  if (!x || !w || !r) return ctx.Fail("inputs X, W and R are required");
  if (x->rank() != 3) return ctx.Fail("input 0 (X) is {}, expected rank 3", x->Describe());
  if (r->rank() != 3) return ctx.Fail("input 2 (R) is {}, expected rank 3", r->Describe());
  cfg.seq = x->dim(cfg.layout == 0 ? 0 : 1);
  cfg.batch = x->dim(cfg.layout == 0 ? 1 : 0);
  cfg.input = x->dim(2);
  cfg.hidden = r->dim(ext ? 1 : 2);
  VIGIL_ASSIGN_OR_RETURN(int64_t hidden_attr, ops::IntAttr(node, "hidden_size", cfg.hidden));
  if (hidden_attr != cfg.hidden) {
    return ctx.Fail("hidden_size is {} but R ({}) implies {}", hidden_attr, r->Describe(), cfg.hidden);
  }
  const int64_t gh = cfg.gates * cfg.hidden;
  if (ext) {
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 1, "W", {cfg.num_dir, cfg.input, gh}));
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 2, "R", {cfg.num_dir, cfg.hidden, gh}));
  } else {
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 1, "W", {cfg.num_dir, gh, cfg.input}));
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 2, "R", {cfg.num_dir, gh, cfg.hidden}));
  }
  if (ctx.has_input(3)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 3, "B", {cfg.num_dir, 2 * gh}));
  if (ctx.has_input(4)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 4, "sequence_lens", {cfg.batch}));
  std::vector<int64_t> state = cfg.layout == 0 ? std::vector<int64_t>{cfg.num_dir, cfg.batch, cfg.hidden}
                                               : std::vector<int64_t>{cfg.batch, cfg.num_dir, cfg.hidden};
  if (ctx.has_input(5)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 5, "initial_h", state));
  if (cell == Cell::kLstm && ctx.has_input(6)) VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 6, "initial_c", state));
  if (cell == Cell::kLstm && ctx.has_input(7)) {
    VIGIL_RETURN_IF_ERROR(CheckShape(ctx, 7, "P", {cfg.num_dir, 3 * cfg.hidden}));
  }
  // Inputs past P (DynamicQuantizeLSTM's scales and zero points) are the caller's.
  for (size_t i = 0; i < std::min<size_t>(ctx.num_inputs(), 8); ++i) {
    if (i == 4 || !ctx.has_input(i) || (ext && (i == 1 || i == 2))) continue;
    if (ctx.input(i)->dtype() != x->dtype()) {
      return ctx.Fail("input {} has dtype {}, expected {} like X", i, ir::DataTypeName(ctx.input(i)->dtype()),
                      ir::DataTypeName(x->dtype()));
    }
  }
  return Status::Ok();
}

// Per-batch sequence lengths, validated against seq_length.
Result<std::vector<int64_t>> ReadSequenceLens(const KernelContext& ctx, const Config& cfg) {
  std::vector<int64_t> lens(cfg.batch, cfg.seq);
  const runtime::Tensor* t = ctx.input(4);
  if (!t) return lens;
  for (int64_t b = 0; b < cfg.batch; ++b) {
    if (t->dtype() == DataType::kInt32) lens[b] = t->data<int32_t>()[b];
    else if (t->dtype() == DataType::kInt64) lens[b] = t->data<int64_t>()[b];
    else return ctx.UnsupportedDtype(4);
    if (lens[b] < 0 || lens[b] > cfg.seq) {
      return ctx.Fail("sequence_lens[{}] = {} is outside [0, seq_length {}]", b, lens[b], cfg.seq);
    }
  }
  return lens;
}

// Reads a [num_dir, batch, hidden] state (initial_h/initial_c) direction-major;
// zeros when absent.
template <typename C>
std::vector<C> ReadState(const KernelContext& ctx, size_t i, const Config& cfg) {
  const size_t n = static_cast<size_t>(cfg.num_dir * cfg.batch * cfg.hidden);
  if (!ctx.has_input(i)) return std::vector<C>(n, C(0));
  std::vector<C> raw = ReadAs<C>(*ctx.input(i));
  if (cfg.layout == 0) return raw;
  std::vector<C> out(n);
  for (int64_t b = 0; b < cfg.batch; ++b)
    for (int64_t d = 0; d < cfg.num_dir; ++d)
      for (int64_t h = 0; h < cfg.hidden; ++h)
        out[(d * cfg.batch + b) * cfg.hidden + h] = raw[(b * cfg.num_dir + d) * cfg.hidden + h];
  return out;
}

// ---- the recurrence ---------------------------------------------------------

template <typename C>
using Mat = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename C>
using ConstMap = Eigen::Map<const Mat<C>>;

// One direction's parameters, as views into the loaded inputs.
template <typename C>
struct Direction {
  ConstMap<C> w, r;  // [gates*hidden, input], [gates*hidden, hidden]
  const C* wb;       // [gates*hidden]
  const C* rb;       // [gates*hidden]
  const C* p;        // [3*hidden] peepholes i, o, f (LSTM)
  const Activation* act;
};

template <typename C>
C Clip(const Config& cfg, C v) {
  if (!cfg.clip) return v;
  const C c = static_cast<C>(*cfg.clip);
  return std::min(std::max(v, -c), c);
}

// H * R^T for a step's hidden state H [batch, hidden] and R [rows, hidden]
// (row-major). For a small batch, one matrix-vector product per row of H
// (R times h^T, contiguous dot products): a matrix product packs all of R
// again at every step, which took 57% of an LSTM's time at batch 2. Larger
// batches keep the matrix product, whose packing pays there.
constexpr Eigen::Index kMaxRowsByVector = 8;

// Writes into `out`, whose buffer is reused when it already has the size
// (the LSTM's per-step product). `optimised` (float32, with oneDNN loaded):
// through the shared product (gemm.h), which is then oneDNN's sgemm: one
// pass over R for all rows, at its widest vectors (the LSTM tagger at batch
// 2: 0.86 -> 0.62 ms per run).
template <typename C, typename R>
void TimesTransposed(const Mat<C>& h, const R& r, Mat<C>& out, bool optimised = false) {
  out.resize(h.rows(), r.rows());
  if constexpr (std::is_same_v<C, float>) {
    if (optimised && r.outerStride() == h.cols() && fast::DnnlLoaded()) {
      const GemmShape shape{h.rows(), r.rows(), h.cols(), false, true};
      GemmRowMajor(shape, h.data(), r.data(), out.data(), 1.0f, false);
      return;
    }
  }
  if (h.rows() > kMaxRowsByVector) {
    out.noalias() = h * r.transpose();
    return;
  }
  for (Eigen::Index b = 0; b < h.rows(); ++b) out.row(b).noalias() = (r * h.row(b).transpose()).transpose();
}

template <typename C, typename R>
Mat<C> TimesTransposed(const Mat<C>& h, const R& r, bool optimised = false) {
  Mat<C> out;
  TimesTransposed<C>(h, r, out, optimised);
  return out;
}

// `gx` holds X_t*W^T plus the biases that are always added outside an
// activation (for GRU with linear_before_reset, Rbh is kept out of it).
template <typename C>
void RnnStep(const Config& cfg, const Direction<C>& dir, const Mat<C>& gx, const Mat<C>& h, Mat<C>& h_out) {
  Mat<C> pre = gx + TimesTransposed<C>(h, dir.r, cfg.optimised);
  for (Eigen::Index b = 0; b < pre.rows(); ++b)
    for (Eigen::Index j = 0; j < pre.cols(); ++j) h_out(b, j) = Apply(dir.act[0], Clip(cfg, pre(b, j)));
}

// m = act(clip(m)) in place. On the optimised float32 path a Sigmoid or Tanh
// runs over the whole matrix at once, vectorised (fast/activation.cpp),
// after the clip where the node has one; elsewhere element by element.
template <typename C>
void ClipAndActivate(const Config& cfg, const Activation& act, Mat<C>& m) {
  C* v = m.data();
  const Eigen::Index n = m.size();
  if constexpr (std::is_same_v<C, float>) {
    if (cfg.optimised && (act.kind == ActKind::kSigmoid || act.kind == ActKind::kTanh)) {
      if (cfg.clip) {
        for (Eigen::Index i = 0; i < n; ++i) v[i] = Clip(cfg, v[i]);
      }
      if (act.kind == ActKind::kSigmoid) {
        fast::SigmoidFloat(v, v, static_cast<uint64_t>(n));
      } else {
        fast::TanhFloat(v, v, static_cast<uint64_t>(n));
      }
      return;
    }
  }
  for (Eigen::Index i = 0; i < n; ++i) v[i] = Apply(act, Clip(cfg, v[i]));
}

template <typename C>
void GruStep(const Config& cfg, const Direction<C>& dir, const Mat<C>& gx, const Mat<C>& h, Mat<C>& h_out) {
  const Eigen::Index hs = cfg.hidden, rows = h.rows();
  // With linear_before_reset the three gates' products are one: H*R^T
  // [rows, 3*hidden], z | r | h (one library call a step instead of two;
  // at the GRU regressor's sizes the calls cost more than their work).
  Mat<C> all;
  if (cfg.linear_before_reset) all = TimesTransposed<C>(h, dir.r, cfg.optimised);
  Mat<C> zr = cfg.linear_before_reset ? Mat<C>(all.leftCols(2 * hs))
                                      : TimesTransposed<C>(h, dir.r.topRows(2 * hs), cfg.optimised);
  zr += gx.leftCols(2 * hs);
  ClipAndActivate(cfg, dir.act[0], zr);  // z | r
  auto rh = dir.r.bottomRows(hs);
  Mat<C> hh;
  if (cfg.linear_before_reset) {
    hh.resize(rows, hs);
    for (Eigen::Index b = 0; b < rows; ++b)
      for (Eigen::Index j = 0; j < hs; ++j) hh(b, j) = zr(b, hs + j) * (all(b, 2 * hs + j) + dir.rb[2 * hs + j]);
  } else {
    hh = TimesTransposed<C>(Mat<C>(zr.rightCols(hs).cwiseProduct(h)), rh, cfg.optimised);
  }
  hh += gx.rightCols(hs);
  ClipAndActivate(cfg, dir.act[1], hh);  // the candidate
  for (Eigen::Index b = 0; b < rows; ++b)
    for (Eigen::Index j = 0; j < hs; ++j) h_out(b, j) = (C(1) - zr(b, j)) * hh(b, j) + zr(b, j) * h(b, j);
}

// `hr` is H_{t-1}*R^T.
template <typename C>
void LstmStep(const Config& cfg, const Direction<C>& dir, const Mat<C>& gx, const Mat<C>& hr, const Mat<C>& c,
              Mat<C>& h_out, Mat<C>& c_out) {
  const Eigen::Index hs = cfg.hidden;
  Mat<C> pre = gx + hr;  // gate order i, o, f, c
  if constexpr (std::is_same_v<C, float>) {
    if (cfg.optimised && dir.act[0].kind == ActKind::kSigmoid && dir.act[1].kind == ActKind::kTanh &&
        dir.act[2].kind == ActKind::kTanh) {
      const float clip = cfg.clip ? static_cast<float>(*cfg.clip) : 0.0f;
      fast::LstmCellFloat({pre.data(), dir.p, c.data(), pre.rows(), hs, cfg.clip ? &clip : nullptr, cfg.input_forget,
                           h_out.data(), c_out.data()});
      return;
    }
  }
  const C* pi = dir.p;
  const C* po = dir.p + hs;
  const C* pf = dir.p + 2 * hs;
  for (Eigen::Index b = 0; b < pre.rows(); ++b)
    for (Eigen::Index j = 0; j < hs; ++j) {
      const C cp = c(b, j);
      C i = Apply(dir.act[0], Clip(cfg, pre(b, j) + pi[j] * cp));
      // input_forget couples the gates: what is let in is what is forgotten.
      C f = cfg.input_forget ? C(1) - i : Apply(dir.act[0], Clip(cfg, pre(b, 2 * hs + j) + pf[j] * cp));
      C cand = Apply(dir.act[1], Clip(cfg, pre(b, 3 * hs + j)));
      C cell = f * cp + i * cand;
      C o = Apply(dir.act[0], Clip(cfg, pre(b, hs + j) + po[j] * cell));
      c_out(b, j) = cell;
      h_out(b, j) = o * Apply(dir.act[2], cell);
    }
}

template <typename C>
struct Outputs {
  std::vector<C> y;   // [seq, num_dir, batch, hidden], zero past each sequence's length
  std::vector<C> yh;  // [num_dir, batch, hidden]
  std::vector<C> yc;
};

template <typename C>
struct Loaded {
  std::vector<C> x;  // time-major [seq, batch, input]
  std::vector<C> w, r, b, p, h0, c0;
  // W and R as the kernels read them: the input tensors' own data where
  // they already hold C (no copy of the weights per run), else w and r.
  const C* w_data = nullptr;
  const C* r_data = nullptr;
  std::vector<int64_t> lens;
};

// hr = H_{t-1}*R^T for step s, by Eigen or by `products` (float only). The
// products see the rows of sequences that ended before step s-1 as zero, as
// onnxruntime's LSTM, which zeroes their output rows, feeds them to its
// quantized product (where a row can move the quantization range).
template <typename C>
void RecurrentProduct(const Config& cfg, const Direction<C>& dir, int64_t d, const std::vector<int64_t>& lens, int64_t s,
                      const Mat<C>& h, const LstmProducts* products, Mat<C>& hr) {
  if constexpr (std::is_same_v<C, float>) {
    if (products) {
      Mat<C> hin = h;
      for (int64_t b = 0; b < cfg.batch; ++b) {
        if (s > 0 && lens[b] < s) hin.row(b).setZero();
      }
      products->Recurrent(d, hin.data(), cfg.batch, hr.data());
      return;
    }
  }
  TimesTransposed<C>(h, dir.r, hr, cfg.optimised);
}

// `products` (float only) replaces the Eigen products of an LSTM whose W
// and R were not loaded (cfg.external_weights).
template <typename C>
void RunDirection(const Config& cfg, const Loaded<C>& in, int64_t d, Outputs<C>& out, const LstmProducts* products) {
  const int64_t hs = cfg.hidden, gh = cfg.gates * hs, batch = cfg.batch;
  const bool ext = cfg.external_weights;
  Direction<C> dir{ConstMap<C>(ext ? nullptr : in.w_data + d * gh * cfg.input, ext ? 0 : gh, cfg.input),
                   ConstMap<C>(ext ? nullptr : in.r_data + d * gh * hs, ext ? 0 : gh, hs),
                   in.b.data() + d * 2 * gh,
                   in.b.data() + d * 2 * gh + gh,
                   in.p.data() + d * 3 * hs,
                   cfg.acts.data() + d * cfg.acts_per_dir};
  // X_t*W^T for every step at once, plus the biases that sit outside activations.
  Mat<C> xw;
  if constexpr (std::is_same_v<C, float>) {
    if (products) {  // up to the longest sequence, as onnxruntime quantizes them
      const int64_t longest = in.lens.empty() ? 0 : *std::max_element(in.lens.begin(), in.lens.end());
      xw = Mat<C>::Zero(cfg.seq * batch, gh);
      products->Input(d, in.x.data(), longest * batch, xw.data());
    }
  }
  if (!products) {
    // Through the shared product (gemm.h: Eigen at the CPU's widest vectors,
    // or oneDNN's sgemm on the optimised path), not this file's baseline
    // Eigen build.
    xw.resize(cfg.seq * batch, gh);
    const GemmShape shape{cfg.seq * batch, gh, cfg.input, false, true};
    GemmRowMajor(shape, in.x.data(), in.w_data + d * gh * cfg.input, xw.data(), C(1), false);
  }
  // Row by row (xw is row-major: a column walk touched a new cache line per
  // element, a fifth of the LSTM tagger's time).
  Eigen::Matrix<C, 1, Eigen::Dynamic> bias(gh);
  for (int64_t j = 0; j < gh; ++j) {
    const bool keep_rb_out = cfg.linear_before_reset && j >= 2 * hs;
    bias[j] = dir.wb[j] + (keep_rb_out ? C(0) : dir.rb[j]);
  }
  // Row by row: Eigen vectorises a contiguous row's sum, not rowwise()'s
  // broadcast (a scalar loop: 74% of this function's own time, the LSTM
  // tagger's biases).
  for (Eigen::Index r = 0; r < xw.rows(); ++r) xw.row(r) += bias;
  Mat<C> h = ConstMap<C>(in.h0.data() + d * batch * hs, batch, hs);
  Mat<C> c = ConstMap<C>(in.c0.data() + d * batch * hs, batch, hs);
  Mat<C> h_new(batch, hs), c_new(batch, hs), gx(batch, gh), hr(batch, gh);
  // The second direction of a bidirectional op, or a reverse op, walks each
  // sequence from its own last valid step back to step 0.
  const bool backward = cfg.reverse || d == 1;
  for (int64_t s = 0; s < cfg.seq; ++s) {
    gx.setZero();
    for (int64_t b = 0; b < batch; ++b) {
      if (s >= in.lens[b]) continue;
      const int64_t t = backward ? in.lens[b] - 1 - s : s;
      gx.row(b) = xw.row(t * batch + b);
    }
    if (cfg.cell == Cell::kRnn) RnnStep(cfg, dir, gx, h, h_new);
    else if (cfg.cell == Cell::kGru) GruStep(cfg, dir, gx, h, h_new);
    else {
      RecurrentProduct(cfg, dir, d, in.lens, s, h, products, hr);
      LstmStep(cfg, dir, gx, hr, c, h_new, c_new);
    }
    for (int64_t b = 0; b < batch; ++b) {
      if (s >= in.lens[b]) continue;  // this sequence has ended: its state stays
      const int64_t t = backward ? in.lens[b] - 1 - s : s;
      h.row(b) = h_new.row(b);
      if (cfg.cell == Cell::kLstm) c.row(b) = c_new.row(b);
      std::copy(h.row(b).data(), h.row(b).data() + hs, out.y.data() + ((t * cfg.num_dir + d) * batch + b) * hs);
    }
  }
  if (ext) {
    // onnxruntime's LSTM, whose op DynamicQuantizeLSTM is, gives an empty
    // sequence zero final states (the float LSTM here keeps the initial ones).
    for (int64_t b = 0; b < batch; ++b) {
      if (in.lens[b] == 0) {
        h.row(b).setZero();
        c.row(b).setZero();
      }
    }
  }
  std::copy(h.data(), h.data() + batch * hs, out.yh.data() + d * batch * hs);
  std::copy(c.data(), c.data() + batch * hs, out.yc.data() + d * batch * hs);
}

template <typename C>
Loaded<C> Load(const KernelContext& ctx, const Config& cfg, std::vector<int64_t> lens) {
  Loaded<C> in;
  std::vector<C> x = ReadAs<C>(*ctx.input(0));
  if (cfg.layout == 1) {  // [batch, seq, input] -> [seq, batch, input]
    in.x.resize(x.size());
    for (int64_t b = 0; b < cfg.batch; ++b)
      for (int64_t t = 0; t < cfg.seq; ++t)
        std::copy_n(x.data() + (b * cfg.seq + t) * cfg.input, cfg.input,
                    in.x.data() + (t * cfg.batch + b) * cfg.input);
  } else {
    in.x = std::move(x);
  }
  const int64_t gh = cfg.gates * cfg.hidden;
  if (!cfg.external_weights) {
    constexpr DataType kSame = std::is_same_v<C, float> ? DataType::kFloat32 : DataType::kFloat64;
    auto view = [&](const runtime::Tensor& t, std::vector<C>& converted) -> const C* {
      if (t.dtype() == kSame) return t.data<C>();
      converted = ReadAs<C>(t);
      return converted.data();
    };
    in.w_data = view(*ctx.input(1), in.w);
    in.r_data = view(*ctx.input(2), in.r);
  }
  in.b = ctx.has_input(3) ? ReadAs<C>(*ctx.input(3)) : std::vector<C>(cfg.num_dir * 2 * gh, C(0));
  const bool lstm = cfg.cell == Cell::kLstm;
  in.p = lstm && ctx.has_input(7) ? ReadAs<C>(*ctx.input(7)) : std::vector<C>(cfg.num_dir * 3 * cfg.hidden, C(0));
  in.h0 = ReadState<C>(ctx, 5, cfg);
  in.c0 = lstm ? ReadState<C>(ctx, 6, cfg) : std::vector<C>(in.h0.size(), C(0));
  in.lens = std::move(lens);
  return in;
}

// Writes the wanted outputs in the node's layout.
template <typename C>
Status WriteOutputs(KernelContext& ctx, const Config& cfg, DataType dtype, const Outputs<C>& out) {
  const int64_t nd = cfg.num_dir, batch = cfg.batch, hs = cfg.hidden;
  if (ctx.output_wanted(0)) {
    std::vector<int64_t> shape = cfg.layout == 0 ? std::vector<int64_t>{cfg.seq, nd, batch, hs}
                                                 : std::vector<int64_t>{batch, cfg.seq, nd, hs};
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, dtype, shape));
    // out.y is [seq, nd, batch, hs]; layout 1 writes [batch, seq, nd, hs].
    StoreAll(*y, out.y.size(), out.y.data(), [&](size_t src) {
      if (cfg.layout == 0) return src;
      const int64_t s = static_cast<int64_t>(src);
      const int64_t h = s % hs, b = s / hs % batch, d = s / (hs * batch) % nd, t = s / (hs * batch * nd);
      return static_cast<size_t>(((b * cfg.seq + t) * nd + d) * hs + h);
    });
  }
  const size_t last = cfg.cell == Cell::kLstm ? 2 : 1;
  for (size_t o = 1; o <= last; ++o) {
    if (!ctx.output_wanted(o)) continue;
    const std::vector<C>& state = o == 1 ? out.yh : out.yc;
    std::vector<int64_t> shape = cfg.layout == 0 ? std::vector<int64_t>{nd, batch, hs}
                                                 : std::vector<int64_t>{batch, nd, hs};
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * t, ctx.Output(o, dtype, shape));
    // state is [nd, batch, hs]; layout 1 writes [batch, nd, hs].
    StoreAll(*t, state.size(), state.data(), [&](size_t src) {
      if (cfg.layout == 0) return src;
      const int64_t s = static_cast<int64_t>(src);
      const int64_t h = s % hs, b = s / hs % batch, d = s / (hs * batch);
      return static_cast<size_t>((b * nd + d) * hs + h);
    });
  }
  return Status::Ok();
}

template <typename C>
Status RunRecurrent(KernelContext& ctx, const Config& cfg, std::vector<int64_t> lens,
                    const LstmProducts* products = nullptr) {
  Loaded<C> in = Load<C>(ctx, cfg, std::move(lens));
  Outputs<C> out;
  const size_t state = static_cast<size_t>(cfg.num_dir * cfg.batch * cfg.hidden);
  out.y.assign(state * static_cast<size_t>(cfg.seq), C(0));
  out.yh.assign(state, C(0));
  out.yc.assign(state, C(0));
  // The two directions of a bidirectional op are independent (each writes
  // its own part of the outputs): one each on the OpenMP pool's threads
  // where the node may use two. Each direction's products then run on its
  // thread alone, with the node's product settings (set per thread: the
  // backend sets them on the calling thread from the same `optimised`).
  if (cfg.num_dir == 2 && ParallelPoolAvailable() && PoolThreadsFor(2, 1) > 1) {
    ParallelFor(cfg.num_dir, 1, [&](int64_t begin, int64_t end) {
      ScopedOptimisedProducts same(cfg.optimised);
      ScopedGemmThreadLimit alone(1);
      for (int64_t d = begin; d < end; ++d) RunDirection(cfg, in, d, out, products);
    });
  } else {
    for (int64_t d = 0; d < cfg.num_dir; ++d) RunDirection(cfg, in, d, out, products);
  }
  return WriteOutputs(ctx, cfg, ctx.input(0)->dtype(), out);
}

Status Recurrent(KernelContext& ctx, Cell cell) {
  if (!ctx.has_input(0)) return ctx.Fail("input 0 (X) is required");
  if (!IsRecurrentFloat(ctx.input(0)->dtype())) return ctx.UnsupportedDtype(0);
  Config cfg;
  VIGIL_RETURN_IF_ERROR(ReadConfig(ctx, cell, cfg));
  cfg.optimised = ctx.optimised();
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, ReadSequenceLens(ctx, cfg));
  if (ctx.input(0)->dtype() == DataType::kFloat64) return RunRecurrent<double>(ctx, cfg, std::move(lens));
  return RunRecurrent<float>(ctx, cfg, std::move(lens));
}

Status RnnKernel(KernelContext& ctx) { return Recurrent(ctx, Cell::kRnn); }
Status GruKernel(KernelContext& ctx) { return Recurrent(ctx, Cell::kGru); }
Status LstmKernel(KernelContext& ctx) { return Recurrent(ctx, Cell::kLstm); }

}  // namespace

Status RunLstmWithProducts(KernelContext& ctx, const LstmProducts& products) {
  if (!ctx.has_input(0)) return ctx.Fail("input 0 (X) is required");
  if (ctx.input(0)->dtype() != DataType::kFloat32) {
    return ctx.Fail("input 0 (X) has dtype {}, expected float32", ir::DataTypeName(ctx.input(0)->dtype()));
  }
  Config cfg;
  cfg.external_weights = true;
  VIGIL_RETURN_IF_ERROR(ReadConfig(ctx, Cell::kLstm, cfg));
  cfg.optimised = ctx.optimised();
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> lens, ReadSequenceLens(ctx, cfg));
  return RunRecurrent<float>(ctx, cfg, std::move(lens), &products);
}

namespace {

const KernelDef kRecurrentKernels[] = {
    {"", "RNN", 7, kLatest, RnnKernel},
    {"", "GRU", 7, kLatest, GruKernel},
    {"", "LSTM", 7, kLatest, LstmKernel},
};

}  // namespace

std::span<const KernelDef> RecurrentKernels() { return kRecurrentKernels; }

}  // namespace vigil::cpu
