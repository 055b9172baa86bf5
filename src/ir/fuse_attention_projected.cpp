// The attention fusion's second pattern (fuse_attention.h): BERT-style
// chains, batch first, with separate q, k and v projections, an additive
// mask and the exporter's guard on P.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "ir/attention_matcher.h"
#include "ir/fuse_matmul_bias.h"  // kMatMulBiasOp
#include "ir/layout_nhwc.h"       // kVigilDomain

namespace vigil::ir {

// scores [+ M] -> Softmax: steps back over the mask's Add, when there is
// one, to the scores (scale steps skipped) and records the mask; a scale
// above the Add would scale M too and is not taken. The fused op needs M to
// broadcast into the scores, leaving their shape. Exporters compute masks
// with shape arithmetic the evaluator does not follow (transformers:
// Expand of a Range comparison), so where that cannot be proven here the
// op checks it at run time, and a mask that would broadcast the scores up
// is an error naming it. In this chain the unfused graph fails then too:
// P [.., R, S] with rows R != S cannot come back to [B, S, H, D] (the
// reshape to [B, S, E] or the output projection refuses the elements).
std::optional<std::string> AttentionMatcher::MaskedScores(const std::string& value, AttentionMatch& m) {
  const std::optional<size_t> add = ProducerOp(value, "Add", 2);
  if (!add) return SkipScale(value, m);
  const Node& a = g_.nodes[*add];
  for (int side = 0; side < 2; ++side) {
    AttentionMatch trial = m;
    const std::string scores = SkipScale(a.inputs[side], trial);
    if (!ProducerOp(scores, "MatMul", 2)) continue;
    const std::optional<SymShape> in = sym_.ShapeOf(a.inputs[side]);
    if (!in) return std::nullopt;
    // A known shape that differs is refused; an unknown one (symbols the
    // evaluator could not relate to the scores') is checked at run time.
    const std::optional<SymShape> out = sym_.ShapeOf(a.outputs[0]);
    const bool known = out && std::all_of(out->begin(), out->end(), [](const SymDim& d) { return d.known(); });
    if (known && *out != *in) return std::nullopt;
    if (!out || *out != *in) sym_.AssumeShape(a.outputs[0], *in);
    m = std::move(trial);
    m.mask = a.inputs[1 - side];
    m.chain.push_back(*add);
    return scores;
  }
  return std::nullopt;
}

// k'^T [B,H,D,S] back to the Reshape [B,S,H,D] of the k projection:
// Transpose(0,2,3,1), or Transpose(0,2,1,3) then Transpose(0,1,3,2), with
// scale steps anywhere between. Returns the Reshape's output.
std::optional<std::string> AttentionMatcher::KeyHeads(const std::string& value, AttentionMatch& m) {
  const std::optional<size_t> t = Producer(SkipScale(value, m));
  if (!t) return std::nullopt;
  const Node& tn = g_.nodes[*t];
  if (HasPerm(tn, {0, 2, 3, 1})) {
    m.chain.push_back(*t);
    return SkipScale(tn.inputs[0], m);
  }
  if (!HasPerm(tn, {0, 1, 3, 2})) return std::nullopt;
  const std::optional<size_t> t2 = Producer(SkipScale(tn.inputs[0], m));
  if (!t2 || !HasPerm(g_.nodes[*t2], {0, 2, 1, 3})) return std::nullopt;
  m.chain.insert(m.chain.end(), {*t, *t2});
  return SkipScale(g_.nodes[*t2].inputs[0], m);
}

// The MatMul that reads P: the Softmax's only reader, or behind the guard
// Where(IsNaN(P), 0, P) (whose IsNaN and Where read P and nothing else does).
std::optional<size_t> AttentionMatcher::Probabilities(const std::string& softmax_out, AttentionMatch& m) {
  if (idx_.outputs.count(softmax_out)) return std::nullopt;
  auto users = idx_.consumers.find(softmax_out);
  if (users == idx_.consumers.end()) return std::nullopt;
  std::string p = softmax_out;
  if (users->second.size() == 2) {
    size_t isnan = users->second[0], where = users->second[1];
    if (IsOp(g_.nodes[where], "IsNaN", 1)) std::swap(isnan, where);
    const Node& in = g_.nodes[isnan];
    const Node& wn = g_.nodes[where];
    if (!IsOp(in, "IsNaN", 1) || !IsOp(wn, "Where", 3) || OnlyConsumer(in.outputs[0]) != where ||
        wn.inputs[0] != in.outputs[0] || wn.inputs[2] != softmax_out) {
      return std::nullopt;
    }
    const std::optional<double> zero = sym_.ScalarOf(wn.inputs[1]);
    const std::optional<SymShape> shape = sym_.ShapeOf(softmax_out);
    if (!zero || *zero != 0 || !shape || sym_.ShapeOf(wn.outputs[0]) != shape) return std::nullopt;
    m.zero_undefined_rows = true;
    m.chain.insert(m.chain.end(), {isnan, where});
    p = wn.outputs[0];
  } else if (users->second.size() != 1) {
    return std::nullopt;
  }
  const std::optional<size_t> mm = OnlyConsumer(p);
  if (!mm || !IsOp(g_.nodes[*mm], "MatMul", 2) || g_.nodes[*mm].inputs[0] != p) return std::nullopt;
  return mm;
}

// The Reshape writing `heads4` [B,S,H,D] from projection `which` (0 q, 1 k,
// 2 v): a MatMulBias of x [B,S,K] with constant W [K,E] and b [E], read by
// that Reshape alone. Records the projection, H, D and x; every projection
// must agree on them and on [B,S,H,D] (`bsh`).
bool AttentionMatcher::Projection(const std::string& heads4, size_t which, AttentionMatch& m,
                                  std::optional<SymShape>* bsh) {
  const std::optional<size_t> r = ProducerOp(heads4, "Reshape", 2);
  if (!r) return false;
  const std::string& proj = g_.nodes[*r].inputs[0];
  const std::optional<size_t> p = Producer(proj);
  if (!p || OnlyConsumer(proj) != *r) return false;
  const Node& pn = g_.nodes[*p];
  if (pn.op_type != kMatMulBiasOp || pn.domain != kVigilDomain || pn.inputs.size() != 3 || pn.outputs.size() != 1) {
    return false;
  }
  if (!m.x.empty() && pn.inputs[0] != m.x) return false;
  const Tensor* w = ConstantBytes(g_, pn.inputs[1]);
  const Tensor* b = ConstantBytes(g_, pn.inputs[2]);
  auto x = types_.find(pn.inputs[0]);
  if (!w || !b || x == types_.end() || x->second.kind != TypeInfo::Kind::kTensor || w->dims.size() != 2 ||
      w->dtype != x->second.elem_type || b->dtype != w->dtype) {
    return false;
  }
  const DataType dt = w->dtype;
  if (dt != DataType::kFloat32 && dt != DataType::kFloat16 && dt != DataType::kBfloat16) return false;
  // [B,S,E] -> [B,S,H,D], proven dim by dim.
  const std::optional<SymShape> in = sym_.ShapeOf(proj);
  const std::optional<SymShape> out = sym_.ShapeOf(heads4);
  if (!in || in->size() != 3 || !out || out->size() != 4 || !(*in)[2].known() || !(*out)[2].known() ||
      !(*out)[3].known()) {
    return false;
  }
  const int64_t h = (*out)[2].coeff, d = (*out)[3].coeff;
  if (h <= 0 || d <= 0 || (*in)[2].coeff != h * d || !((*out)[0] == (*in)[0]) || !((*out)[1] == (*in)[1])) {
    return false;
  }
  if (w->dims[1] != h * d || b->ElementCount() != static_cast<uint64_t>(h * d)) return false;
  if (m.heads && (m.heads != h || m.head_dim != d)) return false;
  if (*bsh && **bsh != *out) return false;
  // Packed, the weights must agree on K and the dtype too.
  if (which > 0) {
    const Tensor* w0 = ConstantBytes(g_, g_.nodes[m.projections[0]].inputs[1]);
    if (!w0 || w0->dims != w->dims || w0->dtype != dt) return false;
  }
  *bsh = out;
  m.heads = h;
  m.head_dim = d;
  m.x = pn.inputs[0];
  m.projections[which] = *p;
  m.chain.insert(m.chain.end(), {*r, *p});
  return true;
}

std::optional<size_t> AttentionMatcher::OnlyConsumerBesidesShapes(const std::string& value) const {
  auto users = idx_.consumers.find(value);
  if (users == idx_.consumers.end() || idx_.outputs.count(value)) return std::nullopt;
  std::optional<size_t> only;
  for (size_t u : users->second) {
    if (IsOp(g_.nodes[u], "Shape", 1)) continue;
    if (only) return std::nullopt;
    only = u;
  }
  return only;
}

std::optional<AttentionMatch> AttentionMatcher::MatchProjected(size_t softmax) {
  const Node& sm = g_.nodes[softmax];
  AttentionMatch m;
  m.projected = true;
  m.batch_first = true;
  m.chain.push_back(softmax);
  const std::optional<std::string> scores = MaskedScores(sm.inputs[0], m);
  if (!scores) return std::nullopt;
  const std::optional<size_t> mm1 = ProducerOp(*scores, "MatMul", 2);
  if (!mm1) return std::nullopt;
  m.chain.push_back(*mm1);
  const std::optional<size_t> qt = Producer(SkipScale(g_.nodes[*mm1].inputs[0], m));
  if (!qt || !HasPerm(g_.nodes[*qt], {0, 2, 1, 3})) return std::nullopt;
  m.chain.push_back(*qt);
  const std::string q4 = SkipScale(g_.nodes[*qt].inputs[0], m);
  const std::optional<std::string> k4 = KeyHeads(g_.nodes[*mm1].inputs[1], m);
  if (!k4) return std::nullopt;

  const std::optional<size_t> mm2 = Probabilities(sm.outputs[0], m);
  if (!mm2) return std::nullopt;
  m.chain.push_back(*mm2);
  const std::optional<size_t> vt = Producer(g_.nodes[*mm2].inputs[1]);
  if (!vt || !HasPerm(g_.nodes[*vt], {0, 2, 1, 3})) return std::nullopt;
  m.chain.push_back(*vt);
  // [B,H,S,D], through an identity Reshape if there is one, then back to
  // [B,S,H,D]. Shape nodes may read these values too (the exporter computes
  // the Reshape's target from them); LiveAfterRewrite makes sure that they
  // go with the chain.
  std::string heads_out = g_.nodes[*mm2].outputs[0];
  std::optional<size_t> next = OnlyConsumerBesidesShapes(heads_out);
  if (next && IsOp(g_.nodes[*next], "Reshape", 2) && g_.nodes[*next].inputs[0] == heads_out) {
    const std::optional<SymShape> in = sym_.ShapeOf(heads_out);
    if (!in || sym_.ShapeOf(g_.nodes[*next].outputs[0]) != in) return std::nullopt;
    m.chain.push_back(*next);
    heads_out = g_.nodes[*next].outputs[0];
    next = OnlyConsumerBesidesShapes(heads_out);
  }
  if (!next || !HasPerm(g_.nodes[*next], {0, 2, 1, 3})) return std::nullopt;
  m.out_transpose = *next;
  m.chain.push_back(*next);

  std::optional<SymShape> bshd;
  if (!Projection(q4, 0, m, &bshd) || !Projection(*k4, 1, m, &bshd) ||
      !Projection(g_.nodes[*vt].inputs[0], 2, m, &bshd)) {
    return std::nullopt;
  }
  const SymDim &b = (*bshd)[0], &s = (*bshd)[1], h = SymDim::Known(m.heads), d = SymDim::Known(m.head_dim);
  if (sym_.ShapeOf(g_.nodes[*mm1].outputs[0]) != SymShape{b, h, s, s}) return std::nullopt;
  if (sym_.ShapeOf(heads_out) != SymShape{b, h, s, d}) return std::nullopt;
  if (sym_.ShapeOf(g_.nodes[m.out_transpose].outputs[0]) != SymShape{b, s, h, d}) return std::nullopt;
  if (!std::isfinite(m.scale) || m.scale == 0) return std::nullopt;
  return m;
}

}  // namespace vigil::ir
