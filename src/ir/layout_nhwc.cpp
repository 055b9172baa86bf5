#include "ir/layout_nhwc.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "vigil/float16.h"
#include "ir/extract_subgraph.h"
#include "ir/fuse_qdq.h"
#include "ir/layout_nhwc_ops.h"
#include "ir/layout_nhwc_pool.h"
#include "ir/graph_index.h"  // IsClipZeroSix
#include "ir/use_index.h"
#include "ir/validate.h"

namespace vigil::ir {
namespace {

bool IsDefaultDomain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

bool IsTransposeWith(const Node& n, const std::vector<int64_t>& perm) {
  if (n.op_type != "Transpose" || !IsDefaultDomain(n.domain) || n.inputs.size() != 1 || n.outputs.size() != 1) {
    return false;
  }
  const Attribute* a = n.FindAttribute("perm");
  return a && a->type == AttributeType::kInts && a->ints == perm;
}

// Ops that compute each output element from the operand elements at the same
// (broadcast) position, and nothing else: they give the same values in any
// layout as long as every operand is permuted alike. Every input counts as an
// operand (Clip's min and max, PRelu's slope).
bool IsPositionwiseOp(const Node& n) {
  static const std::unordered_set<std::string> kOps = {
      "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Elu", "Selu", "Softplus",
      "Neg",  "Abs",  "Exp",       "Sqrt",    "Erf",         "Identity",  "Cast", "PRelu", "Add", "Sub",
      "Mul",  "Div",  "Max",       "Min",     "Sum",         "Pow"};
  if (n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  // QAdd's scales are scalars, which SinkPast finds layout-free.
  if (n.domain == kVigilDomain) return n.op_type == kQAddOp;
  return IsDefaultDomain(n.domain) && kOps.count(n.op_type) > 0;
}

// Whether PermuteConstantToNhwc can move `t`: rank <= 4 and whole-byte
// elements all present (no strings, no sub-byte types, no missing data).
bool Permutable(const Tensor& t) { return t.dims.size() <= 4 && t.HasDenseBytes(); }

// `t` (Permutable; its dims padded with leading 1s to NCHW [a, b, c, d])
// permuted to NHWC [a, c, d, b].
Tensor PermuteConstantToNhwc(const Tensor& t, std::string name) {
  const size_t size = static_cast<size_t>(DataTypeBits(t.dtype) / 8);
  std::vector<int64_t> d(4 - t.dims.size(), 1);
  d.insert(d.end(), t.dims.begin(), t.dims.end());
  auto owned = std::shared_ptr<uint8_t[]>(new uint8_t[std::max<size_t>(1, t.bytes.size())]);
  const uint8_t* src = t.bytes.data();
  uint8_t* dst = owned.get();
  // dst[n, h, w, c] = src[n, c, h, w]
  for (int64_t n = 0; n < d[0]; ++n) {
    for (int64_t h = 0; h < d[2]; ++h) {
      for (int64_t w = 0; w < d[3]; ++w) {
        for (int64_t c = 0; c < d[1]; ++c) {
          int64_t from = ((n * d[1] + c) * d[2] + h) * d[3] + w;
          int64_t to = ((n * d[2] + h) * d[3] + w) * d[1] + c;
          std::memcpy(dst + to * size, src + from * size, size);
        }
      }
    }
  }
  Tensor out;
  out.name = std::move(name);
  out.dtype = t.dtype;
  out.dims = {d[0], d[2], d[3], d[1]};
  out.storage = Tensor::Storage::kTypedDecoded;
  out.bytes = {owned.get(), t.bytes.size()};
  out.keep_alive = std::shared_ptr<const void>(owned, owned.get());
  return out;
}

// The one element of a 1-element float tensor, as double.
std::optional<double> ScalarOf(const Tensor& t) {
  std::optional<uint64_t> count = t.ElementCount();
  if (!count || *count != 1 || !Permutable(t)) return std::nullopt;
  const uint8_t* p = t.bytes.data();
  switch (t.dtype) {
    case DataType::kFloat32: { float v; std::memcpy(&v, p, 4); return v; }
    case DataType::kFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    case DataType::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); return Float16ToFloat(v); }
    case DataType::kBfloat16: { uint16_t v; std::memcpy(&v, p, 2); return Bfloat16ToFloat(v); }
    default: return std::nullopt;
  }
}

// How one operand of a positionwise op reads once the op runs in NHWC.
struct NhwcOperand {
  enum Kind { kAbsent, kTransposed, kLayoutFree, kConstant, kTwin, kNone } kind = kNone;
  size_t node = 0;  // kTransposed: the to-NCHW Transpose; kTwin: an existing to-NHWC Transpose of the operand
};

class NhwcRewriter {
 public:
  NhwcRewriter(Model& model, const std::unordered_map<std::string, TypeInfo>& types)
      : model_(model), g_(model.graph), types_(types) {
    for (const Node& n : g_.nodes) {
      node_names_.insert(n.name);
      for (const std::string& s : n.inputs) names_.insert(s);
      for (const std::string& s : n.outputs) names_.insert(s);
    }
    for (const ValueInfo& vi : g_.inputs) {
      names_.insert(vi.name);
      graph_inputs_.insert(vi.name);
    }
    for (const ValueInfo& vi : g_.outputs) {
      names_.insert(vi.name);
      graph_outputs_.insert(vi.name);
    }
    for (size_t i = 0; i < g_.initializers.size(); ++i) {
      names_.insert(g_.initializers[i].name);
      initializer_index_[g_.initializers[i].name] = i;
    }
    dead_.assign(g_.nodes.size(), false);
    idx_ = UseIndex::Build(g_, dead_);
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (g_.nodes[i].op_type == "Transpose") transposes_.push_back(i);
    }
  }

  void ConvertConv(size_t index);
  // The pool op types Optimize moves to channels-last (NhwcOptions::nhwc_pools).
  void SetNhwcPools(std::vector<std::string> ops) { nhwc_pools_ = std::move(ops); }
  // The Concat and Resize op types Optimize moves (NhwcOptions::nhwc_layout_ops).
  void SetNhwcLayoutOps(std::vector<std::string> ops) { nhwc_layout_ops_ = std::move(ops); }
  // Sinks and cancels transposes until nothing changes.
  void Optimize();
  void FuseResiduals();
  void FuseActivations(bool relu, bool relu6);
  void MoveActivationsToDepthwise();
  Status Finish();

  NhwcStats stats;

 private:
  std::string UniqueValue(const std::string& base);
  std::string UniqueNode(const std::string& base);
  size_t AddTranspose(const std::string& in, const std::string& out, const std::vector<int64_t>& perm,
                      const std::string& node_name);
  // The NHWC copy of `name`, one Transpose per value however many convs read it.
  std::string NhwcCopy(const std::string& name, const std::string& for_node);
  bool TryCancel();
  bool TrySink();
  bool SinkPast(size_t e);
  bool SinkLayoutOp(size_t e);
  bool CancelsAfter(const std::string& y) const;
  void MoveOutputToNhwc(size_t e, std::vector<std::string> inputs);
  bool PairedReader(size_t e, const std::unordered_set<size_t>& transposes) const;
  bool TryConvertPool();
  bool ConvertPool(size_t p, const char* nhwc_op);
  NhwcOperand Classify(const std::string& name) const;
  void RemoveDeadTransposes();
  bool OnlyConsumer(const std::string& value, size_t node) const;
  bool LayoutFree(const std::string& name) const;
  const Tensor* Constant(const std::string& name) const;
  std::optional<std::string> PermutedConstant(const std::string& name);
  void ReplaceUses(const std::string& from, const std::string& to);
  // The NCHW type of the value that NHWC value `name` is a copy of.
  const TypeInfo* NchwTypeOf(const std::string& name) const;
  std::optional<size_t> ResidualAdd(size_t conv) const;
  bool IsRelu6(const Node& clip) const;
  bool IsDepthwiseNhwc(const Node& conv) const;

  Model& model_;
  Graph& g_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  std::vector<bool> dead_;
  // Kept current by every rewrite below (Unlink before a node changes, Link
  // after), never rebuilt.
  UseIndex idx_;
  // The Transpose nodes, dead or alive, in node order: the only nodes that
  // TryCancel and RemoveDeadTransposes look at (no rewrite makes another).
  std::vector<size_t> transposes_;
  std::unordered_set<std::string> names_, node_names_, graph_inputs_, graph_outputs_;
  std::unordered_map<std::string, size_t> initializer_index_;
  std::unordered_map<std::string, std::string> nhwc_copy_;       // value -> its NHWC transpose's output
  std::unordered_map<std::string, std::string> permuted_const_;  // initializer -> its NHWC copy
  std::unordered_set<size_t> conv_nodes_;
  // NHWC value -> the NCHW value it holds, permuted (for shapes: the NHWC
  // values are new and `types_` does not know them).
  std::unordered_map<std::string, std::string> nchw_of_;
  std::vector<std::string> nhwc_pools_;
  std::vector<std::string> nhwc_layout_ops_;
};

std::string NhwcRewriter::UniqueValue(const std::string& base) {
  std::string name = base;
  for (int i = 1; names_.count(name); ++i) name = fmt::format("{}_{}", base, i);
  names_.insert(name);
  return name;
}

std::string NhwcRewriter::UniqueNode(const std::string& base) {
  std::string name = base;
  for (int i = 1; node_names_.count(name); ++i) name = fmt::format("{}_{}", base, i);
  node_names_.insert(name);
  return name;
}

size_t NhwcRewriter::AddTranspose(const std::string& in, const std::string& out, const std::vector<int64_t>& perm,
                                  const std::string& node_name) {
  Node t;
  t.op_type = "Transpose";
  t.name = UniqueNode(node_name);
  t.inputs = {in};
  t.outputs = {out};
  t.attributes.push_back(IntsAttribute("perm", perm));
  g_.nodes.push_back(std::move(t));
  dead_.push_back(false);
  idx_.Link(g_, g_.nodes.size() - 1);
  transposes_.push_back(g_.nodes.size() - 1);
  return g_.nodes.size() - 1;
}

std::string NhwcRewriter::NhwcCopy(const std::string& name, const std::string& for_node) {
  auto it = nhwc_copy_.find(name);
  if (it != nhwc_copy_.end()) return it->second;
  std::string out = UniqueValue(name + "_nhwc");
  AddTranspose(name, out, kToNhwc, for_node + "/to_nhwc");
  nhwc_copy_.emplace(name, out);
  nchw_of_.emplace(out, name);
  return out;
}

void NhwcRewriter::ConvertConv(size_t index) {
  const Node& conv = g_.nodes[index];  // checked by ConvertConvsToNhwc
  const std::string label = conv.name.empty() ? fmt::format("conv{}", index) : conv.name;
  const std::string x_nchw = conv.inputs[0], w_oihw = conv.inputs[1];
  idx_.Unlink(g_, index);
  // NhwcCopy appends nodes, which moves `conv`.
  std::string x = NhwcCopy(x_nchw, label);
  std::string w = NhwcCopy(w_oihw, label);
  Node& c = g_.nodes[index];
  std::string y = c.outputs[0];
  std::string yt = UniqueValue(y + "_nhwc");
  // An int8 QConv (ir/fuse_qdq.h) becomes QConvNhwc; it already holds its
  // activation, and no residual or activation fuses into it here.
  const bool int8 = c.op_type == kQConvOp;
  c.domain = kVigilDomain;
  c.op_type = int8 ? kQConvNhwcOp : kConvNhwcOp;
  c.inputs[0] = x;
  c.inputs[1] = w;
  c.outputs[0] = yt;
  idx_.Link(g_, index);
  nchw_of_.emplace(yt, y);
  AddTranspose(yt, y, kToNchw, label + "/to_nchw");
  if (!int8) conv_nodes_.insert(index);
  ++stats.convs;
}

bool NhwcRewriter::OnlyConsumer(const std::string& value, size_t node) const {
  if (graph_outputs_.count(value) || idx_.opaque.count(value)) return false;
  auto it = idx_.consumers.find(value);
  if (it == idx_.consumers.end()) return false;
  return std::all_of(it->second.begin(), it->second.end(), [&](size_t c) { return c == node; });
}

void NhwcRewriter::ReplaceUses(const std::string& from, const std::string& to) {
  auto it = idx_.consumers.find(from);
  if (it == idx_.consumers.end()) return;
  std::vector<size_t> readers = it->second;  // sorted; a node reading `from` twice is listed twice
  readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
  for (size_t c : readers) {
    idx_.Unlink(g_, c);
    for (std::string& in : g_.nodes[c].inputs) {
      if (in == from) in = to;
    }
    idx_.Link(g_, c);
  }
}

// to-NCHW then to-NHWC is the identity: readers of the second read the
// first's input instead.
bool NhwcRewriter::TryCancel() {
  for (size_t i : transposes_) {
    if (dead_[i] || !IsTransposeWith(g_.nodes[i], kToNhwc)) continue;
    auto p = idx_.producer.find(g_.nodes[i].inputs[0]);
    if (p == idx_.producer.end() || !IsTransposeWith(g_.nodes[p->second], kToNchw)) continue;
    const std::string& out = g_.nodes[i].outputs[0];
    if (graph_outputs_.count(out) || idx_.opaque.count(out)) continue;
    ReplaceUses(out, g_.nodes[p->second].inputs[0]);
    idx_.Unlink(g_, i);
    dead_[i] = true;
    return true;
  }
  return false;
}

const Tensor* NhwcRewriter::Constant(const std::string& name) const {
  // An initializer that is also a graph input may be overridden at run time.
  if (graph_inputs_.count(name)) return nullptr;
  auto it = initializer_index_.find(name);
  return it == initializer_index_.end() ? nullptr : &g_.initializers[it->second];
}

// A value of rank <= 4 with every dim 1 broadcasts the same in any layout.
bool NhwcRewriter::LayoutFree(const std::string& name) const {
  std::vector<int64_t> dims;
  if (const Tensor* c = Constant(name)) {
    dims = c->dims;
  } else {
    auto it = types_.find(name);
    if (it == types_.end() || it->second.kind != TypeInfo::Kind::kTensor || !it->second.shape.rank_known) return false;
    for (const Dim& d : it->second.shape.dims) {
      if (!d.is_known()) return false;
      dims.push_back(*d.value);
    }
  }
  return dims.size() <= 4 && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d == 1; });
}

std::optional<std::string> NhwcRewriter::PermutedConstant(const std::string& name) {
  if (auto it = permuted_const_.find(name); it != permuted_const_.end()) return it->second;
  const Tensor* c = Constant(name);
  if (!c || !Permutable(*c)) return std::nullopt;
  Tensor p = PermuteConstantToNhwc(*c, UniqueValue(name + "_nhwc"));
  std::string out = p.name;
  initializer_index_[out] = g_.initializers.size();
  g_.initializers.push_back(std::move(p));
  permuted_const_.emplace(name, out);
  return out;
}

NhwcOperand NhwcRewriter::Classify(const std::string& name) const {
  if (name.empty()) return {NhwcOperand::kAbsent};
  auto p = idx_.producer.find(name);
  if (p != idx_.producer.end() && IsTransposeWith(g_.nodes[p->second], kToNchw)) {
    return {NhwcOperand::kTransposed, p->second};
  }
  if (LayoutFree(name)) return {NhwcOperand::kLayoutFree};
  if (const Tensor* c = Constant(name)) return {Permutable(*c) ? NhwcOperand::kConstant : NhwcOperand::kNone};
  // A value some convolution already reads in NHWC costs nothing more.
  if (auto it = idx_.consumers.find(name); it != idx_.consumers.end()) {
    for (size_t c : it->second) {
      if (IsTransposeWith(g_.nodes[c], kToNhwc)) return {NhwcOperand::kTwin, c};
    }
  }
  return {NhwcOperand::kNone};
}

// Moves the to-NCHW transposes in front of positionwise op `e` below it, when
// every operand can follow and the move does not add a transpose: one of
// them then dies (e was its only reader), or e's result only feeds to-NHWC
// transposes, which cancel with the one added after e.
bool NhwcRewriter::SinkPast(size_t e) {
  const Node& node = g_.nodes[e];
  std::vector<NhwcOperand> operands;
  std::unordered_set<size_t> transposes;
  for (const std::string& in : node.inputs) {
    operands.push_back(Classify(in));
    if (operands.back().kind == NhwcOperand::kNone) return false;
    if (operands.back().kind == NhwcOperand::kTransposed) transposes.insert(operands.back().node);
  }
  if (transposes.empty()) return false;
  bool frees_one = std::any_of(transposes.begin(), transposes.end(),
                               [&](size_t t) { return OnlyConsumer(g_.nodes[t].outputs[0], e); });
  if (!frees_one && !CancelsAfter(node.outputs[0]) && !PairedReader(e, transposes)) return false;

  std::vector<std::string> inputs = node.inputs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    switch (operands[k].kind) {
      case NhwcOperand::kTransposed: inputs[k] = g_.nodes[operands[k].node].inputs[0]; break;
      case NhwcOperand::kTwin: inputs[k] = g_.nodes[operands[k].node].outputs[0]; break;
      case NhwcOperand::kConstant: inputs[k] = PermutedConstant(inputs[k]).value_or(inputs[k]); break;
      default: break;  // absent or layout-free: as it is
    }
  }
  MoveOutputToNhwc(e, std::move(inputs));
  ++stats.sunk;
  return true;
}

// Whether every reader of `y` is a to-NHWC transpose (none a graph output),
// which would cancel with a to-NCHW one put after y's producer.
bool NhwcRewriter::CancelsAfter(const std::string& y) const {
  auto it = idx_.consumers.find(y);
  if (it == idx_.consumers.end() || graph_outputs_.count(y) || idx_.opaque.count(y)) return false;
  return std::all_of(it->second.begin(), it->second.end(), [&](size_t c) {
    const Node& t = g_.nodes[c];
    return IsTransposeWith(t, kToNhwc) && !graph_outputs_.count(t.outputs[0]) && !idx_.opaque.count(t.outputs[0]);
  });
}

// Node e reads `inputs` (NHWC) and writes an NHWC copy of its result, which
// a new to-NCHW transpose turns back into the value its readers know.
void NhwcRewriter::MoveOutputToNhwc(size_t e, std::vector<std::string> inputs) {
  const std::string y = g_.nodes[e].outputs[0];
  const std::string yt = UniqueValue(y + "_nhwc");
  const std::string label = g_.nodes[e].name.empty() ? fmt::format("{}{}", g_.nodes[e].op_type, e) : g_.nodes[e].name;
  idx_.Unlink(g_, e);
  g_.nodes[e].inputs = std::move(inputs);
  g_.nodes[e].outputs[0] = yt;
  idx_.Link(g_, e);
  nchw_of_.emplace(yt, y);
  AddTranspose(yt, y, kToNchw, label + "/to_nchw");
}

// Concat(Transpose_toNCHW(a), ...) -> Transpose_toNCHW(Concat(a, ...,
// axis in NHWC)), and Resize the same with its per-axis values permuted
// (layout_nhwc_ops.h), on SinkPast's condition. A Concat may also take
// operands that are not NHWC yet, each through a new to-NHWC transpose,
// where its result only feeds to-NHWC transposes: those cancel, and the
// result is at least as large as all the new ones together.
bool NhwcRewriter::SinkLayoutOp(size_t e) {
  const Node& node = g_.nodes[e];
  std::optional<NhwcLayoutOp> op = NhwcLayoutOpFor(node, model_.OpsetVersion(""), nhwc_layout_ops_);
  if (!op) return false;
  std::vector<NhwcOperand> operands(node.inputs.size(), NhwcOperand{NhwcOperand::kAbsent});
  std::unordered_set<size_t> transposes;
  bool adds = false;
  for (size_t k : op->data_inputs) {
    operands[k] = Classify(node.inputs[k]);
    switch (operands[k].kind) {
      case NhwcOperand::kTransposed: transposes.insert(operands[k].node); break;
      case NhwcOperand::kConstant:
        if (Constant(node.inputs[k])->dims.size() != 4) return false;
        break;
      case NhwcOperand::kNone: {
        auto t = types_.find(node.inputs[k]);
        if (!op->takes_nchw_inputs || t == types_.end() || !t->second.shape.rank_known ||
            t->second.shape.dims.size() != 4) {
          return false;
        }
        adds = true;
        break;
      }
      case NhwcOperand::kAbsent: return false;
      default: break;  // layout-free, or a twin
    }
  }
  if (transposes.empty()) return false;
  std::vector<std::string> inputs = node.inputs;
  // The per-axis constants' NHWC copies (named and added once the move is decided).
  std::vector<std::pair<size_t, Tensor>> permuted;
  for (size_t k : op->axis_inputs) {
    if (k >= inputs.size() || inputs[k].empty()) continue;
    const Tensor* c = Constant(inputs[k]);
    if (!c) return false;
    if (c->ElementCount() == std::optional<uint64_t>{0}) continue;
    std::optional<Tensor> p = PermuteAxisValues(*c, "");
    if (!p) return false;
    permuted.emplace_back(k, std::move(*p));
  }
  const bool frees_one = std::any_of(transposes.begin(), transposes.end(),
                                     [&](size_t t) { return OnlyConsumer(g_.nodes[t].outputs[0], e); });
  const bool cancels_after = CancelsAfter(node.outputs[0]);
  if (adds ? !cancels_after : !(frees_one || cancels_after)) return false;

  const std::string label = node.name.empty() ? fmt::format("{}{}", node.op_type, e) : node.name;
  for (size_t k : op->data_inputs) {
    switch (operands[k].kind) {
      case NhwcOperand::kTransposed: inputs[k] = g_.nodes[operands[k].node].inputs[0]; break;
      case NhwcOperand::kTwin: inputs[k] = g_.nodes[operands[k].node].outputs[0]; break;
      case NhwcOperand::kConstant: inputs[k] = PermutedConstant(inputs[k]).value_or(inputs[k]); break;
      case NhwcOperand::kNone: inputs[k] = NhwcCopy(inputs[k], label); break;
      default: break;
    }
  }
  for (auto& [k, p] : permuted) {
    p.name = UniqueValue(inputs[k] + "_nhwc");
    inputs[k] = p.name;
    initializer_index_[p.name] = g_.initializers.size();
    g_.initializers.push_back(std::move(p));
  }
  RewriteAxesToNhwc(g_.nodes[e]);
  MoveOutputToNhwc(e, std::move(inputs));
  ++stats.layout_ops;
  return true;
}

// Whether e's result leads, through a short chain of positionwise ops each
// the only reader of the one before, to a positionwise op r that also reads
// one of e's transposed operands, every other operand along the way can
// follow, and those transposes feed only e and r: x * Sigmoid(x) (SiLU),
// x * Clip(x + 3, 0, 6) (HardSwish). Moving e below its transpose then adds
// one for a moment; the chain moves next, each step freeing the one before,
// r reads both in NHWC, and the transpose before e dies.
bool NhwcRewriter::PairedReader(size_t e, const std::unordered_set<size_t>& transposes) const {
  constexpr int kMaxChain = 4;
  size_t cur = e;
  for (int hop = 0; hop < kMaxChain; ++hop) {
    const std::string& y = g_.nodes[cur].outputs[0];
    if (graph_outputs_.count(y) || idx_.opaque.count(y)) return false;
    auto it = idx_.consumers.find(y);
    if (it == idx_.consumers.end() || it->second.empty()) return false;
    const size_t r = it->second[0];
    if (!std::all_of(it->second.begin(), it->second.end(), [&](size_t c) { return c == r; })) return false;
    const Node& reader = g_.nodes[r];
    if (!IsPositionwiseOp(reader) || reader.outputs.empty()) return false;
    bool reads_transpose = false;
    for (const std::string& in : reader.inputs) {
      if (in == y) continue;
      const NhwcOperand o = Classify(in);
      if (o.kind == NhwcOperand::kNone) return false;
      reads_transpose = reads_transpose || (o.kind == NhwcOperand::kTransposed && transposes.count(o.node));
    }
    if (reads_transpose) {
      return std::all_of(transposes.begin(), transposes.end(), [&](size_t t) {
        const std::string& v = g_.nodes[t].outputs[0];
        if (graph_outputs_.count(v) || idx_.opaque.count(v)) return false;
        auto c = idx_.consumers.find(v);
        return c != idx_.consumers.end() &&
               std::all_of(c->second.begin(), c->second.end(), [&](size_t n) { return n == e || n == r; });
      });
    }
    cur = r;
  }
  return false;
}

bool NhwcRewriter::TrySink() {
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (dead_[i]) continue;
    if (IsPositionwiseOp(g_.nodes[i]) ? SinkPast(i) : SinkLayoutOp(i)) return true;
  }
  return false;
}

// Transposes whose result nobody reads (not graph outputs).
void NhwcRewriter::RemoveDeadTransposes() {
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i : transposes_) {
      const Node& n = g_.nodes[i];
      if (dead_[i] || !(IsTransposeWith(n, kToNchw) || IsTransposeWith(n, kToNhwc))) continue;
      if (graph_outputs_.count(n.outputs[0]) || idx_.consumers.count(n.outputs[0])) continue;
      idx_.Unlink(g_, i);
      dead_[i] = true;
      changed = true;
    }
  }
}

bool NhwcRewriter::TryConvertPool() {
  if (nhwc_pools_.empty()) return false;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (dead_[i]) continue;
    const char* op = NhwcPoolOpFor(g_.nodes[i], nhwc_pools_);
    if (op && ConvertPool(i, op)) return true;
  }
  return false;
}

// Pool(Transpose_toNCHW(v)) -> Transpose_toNCHW(PoolNhwc(v)), on SinkPast's
// condition: the move must not add a transpose, so the pool is the first
// transpose's only reader, or its result only feeds to-NHWC transposes
// (which then cancel). A MaxPool whose Indices are read keeps NCHW: the
// channels-last op has none.
bool NhwcRewriter::ConvertPool(size_t p, const char* nhwc_op) {
  const Node& pool = g_.nodes[p];
  auto t = idx_.producer.find(pool.inputs[0]);
  if (t == idx_.producer.end() || !IsTransposeWith(g_.nodes[t->second], kToNchw)) return false;
  for (size_t k = 1; k < pool.outputs.size(); ++k) {
    const std::string& extra = pool.outputs[k];
    if (!extra.empty() && (graph_outputs_.count(extra) || idx_.consumers.count(extra))) return false;
  }
  const std::string y = pool.outputs[0];
  bool cancels_after = false;
  if (auto it = idx_.consumers.find(y); it != idx_.consumers.end() && !graph_outputs_.count(y) && !idx_.opaque.count(y)) {
    cancels_after = std::all_of(it->second.begin(), it->second.end(), [&](size_t c) {
      const Node& n = g_.nodes[c];
      return IsTransposeWith(n, kToNhwc) && !graph_outputs_.count(n.outputs[0]) && !idx_.opaque.count(n.outputs[0]);
    });
  }
  if (!OnlyConsumer(pool.inputs[0], p) && !cancels_after) return false;
  const std::string x_nhwc = g_.nodes[t->second].inputs[0];
  const std::string yt = UniqueValue(y + "_nhwc");
  const std::string label = pool.name.empty() ? fmt::format("{}{}", pool.op_type, p) : pool.name;
  idx_.Unlink(g_, p);
  RewriteAsNhwcPool(g_.nodes[p], nhwc_op, x_nhwc, yt);
  idx_.Link(g_, p);
  nchw_of_.emplace(yt, y);
  AddTranspose(yt, y, kToNchw, label + "/to_nchw");
  ++stats.pools;
  return true;
}

void NhwcRewriter::Optimize() {
  // Each step removes a node or moves a transpose further down the graph, so
  // this ends.
  for (;;) {
    RemoveDeadTransposes();
    if (TryCancel()) continue;
    if (TrySink()) continue;
    if (TryConvertPool()) continue;
    break;
  }
}

const TypeInfo* NhwcRewriter::NchwTypeOf(const std::string& name) const {
  std::string nchw;
  if (auto it = nchw_of_.find(name); it != nchw_of_.end()) {
    nchw = it->second;
  } else if (auto p = idx_.producer.find(name); p != idx_.producer.end() && IsTransposeWith(g_.nodes[p->second], kToNhwc)) {
    nchw = g_.nodes[p->second].inputs[0];  // a to-NHWC transpose the model had
  } else {
    return nullptr;
  }
  auto t = types_.find(nchw);
  return t == types_.end() || t->second.kind != TypeInfo::Kind::kTensor ? nullptr : &t->second;
}

// The Add that conv `c`'s result can fold into as Z: its only reader, with
// an other operand of exactly the result's type (no broadcasting). The other
// operand cannot depend on the result (the Add is its only reader), so the
// fused node keeps the graph acyclic; Finish re-sorts it.
std::optional<size_t> NhwcRewriter::ResidualAdd(size_t c) const {
  const Node& conv = g_.nodes[c];
  if (conv.inputs.size() > 3) return std::nullopt;
  const std::string& yt = conv.outputs[0];
  auto it = idx_.consumers.find(yt);
  if (it == idx_.consumers.end() || it->second.size() != 1 || !OnlyConsumer(yt, it->second[0])) {
    return std::nullopt;
  }
  const Node& add = g_.nodes[it->second[0]];
  if (add.op_type != "Add" || !IsDefaultDomain(add.domain) || add.inputs.size() != 2 || add.outputs.size() != 1) {
    return std::nullopt;
  }
  const std::string& z = add.inputs[0] == yt ? add.inputs[1] : add.inputs[0];
  const TypeInfo* yt_type = NchwTypeOf(yt);
  const TypeInfo* z_type = NchwTypeOf(z);
  if (z.empty() || !yt_type || !z_type || yt_type->elem_type != z_type->elem_type ||
      !SameDims(yt_type->shape, z_type->shape)) {
    return std::nullopt;
  }
  return it->second[0];
}

void NhwcRewriter::FuseResiduals() {
  std::vector<size_t> convs(conv_nodes_.begin(), conv_nodes_.end());
  std::sort(convs.begin(), convs.end());
  for (size_t c : convs) {
    if (dead_[c]) continue;
    std::optional<size_t> a = ResidualAdd(c);
    if (!a) continue;
    const Node& add = g_.nodes[*a];
    std::string z = add.inputs[0] == g_.nodes[c].outputs[0] ? add.inputs[1] : add.inputs[0];
    std::string out = add.outputs[0];
    idx_.Unlink(g_, c);
    idx_.Unlink(g_, *a);
    Node& conv = g_.nodes[c];
    conv.inputs.resize(3);  // B stays, or becomes the empty name
    conv.inputs.push_back(std::move(z));
    conv.outputs[0] = std::move(out);
    dead_[*a] = true;
    idx_.Link(g_, c);
    ++stats.fused_residuals;
  }
}

// Clip(0, 6): min and max constant 1-element initializers (opset >= 11), or
// attributes (before opset 11).
bool NhwcRewriter::IsRelu6(const Node& clip) const {
  return IsClipZeroSix(clip, model_.OpsetVersion(""), [this](const std::string& name) -> std::optional<double> {
    const Tensor* t = Constant(name);
    return t ? ScalarOf(*t) : std::nullopt;
  });
}

void NhwcRewriter::FuseActivations(bool relu, bool relu6) {
  for (size_t c : conv_nodes_) {
    if (dead_[c]) continue;
    const std::string yt = g_.nodes[c].outputs[0];
    auto it = idx_.consumers.find(yt);
    if (it == idx_.consumers.end() || it->second.size() != 1 || !OnlyConsumer(yt, it->second[0])) continue;
    size_t r = it->second[0];
    const Node& act_node = g_.nodes[r];
    const bool is_relu = relu && act_node.op_type == "Relu" && IsDefaultDomain(act_node.domain) &&
                         act_node.outputs.size() == 1;
    const bool is_relu6 = !is_relu && relu6 && act_node.inputs[0] == yt && IsRelu6(act_node);
    if (!is_relu && !is_relu6) continue;
    Attribute act;
    act.name = "activation";
    act.type = AttributeType::kString;
    act.s = is_relu ? kConvNhwcRelu : kConvNhwcRelu6;
    idx_.Unlink(g_, c);
    idx_.Unlink(g_, r);
    g_.nodes[c].attributes.push_back(std::move(act));
    g_.nodes[c].outputs[0] = act_node.outputs[0];
    dead_[r] = true;
    idx_.Link(g_, c);
    ++(is_relu ? stats.fused_relus : stats.fused_relu6s);
  }
}

// Whether ConvNhwc `conv` is depthwise with channel multiplier 1: group ==
// M > 1 and W (a constant, OIHW before the pass) [M, 1, kH, kW], so that C ==
// group too; C is checked as well where X's type is known.
bool NhwcRewriter::IsDepthwiseNhwc(const Node& conv) const {
  const Attribute* g = conv.FindAttribute("group");
  if (!g || g->type != AttributeType::kInt || g->i <= 1 || conv.inputs.size() < 2) return false;
  auto w_nchw = nchw_of_.find(conv.inputs[1]);
  const Tensor* w = w_nchw == nchw_of_.end() ? nullptr : Constant(w_nchw->second);
  if (!w || w->dims.size() != 4 || w->dims[0] != g->i || w->dims[1] != 1) return false;
  const TypeInfo* x = NchwTypeOf(conv.inputs[0]);
  if (x && x->shape.rank_known && x->shape.dims.size() == 4 && x->shape.dims[1].is_known()) {
    return *x->shape.dims[1].value == g->i;
  }
  return true;
}

// Moves a Relu/Relu6 activation from a convolution to the depthwise
// convolution that alone reads its result (NhwcOptions says why).
void NhwcRewriter::MoveActivationsToDepthwise() {
  std::vector<size_t> convs(conv_nodes_.begin(), conv_nodes_.end());
  std::sort(convs.begin(), convs.end());
  for (size_t c : convs) {
    if (dead_[c]) continue;
    Node& producer = g_.nodes[c];
    auto act = std::find_if(producer.attributes.begin(), producer.attributes.end(),
                            [](const Attribute& a) { return a.name == "activation"; });
    if (act == producer.attributes.end() || act->type != AttributeType::kString ||
        (act->s != kConvNhwcRelu && act->s != kConvNhwcRelu6)) {
      continue;
    }
    const std::string& y = producer.outputs[0];
    auto it = idx_.consumers.find(y);
    if (it == idx_.consumers.end() || it->second.size() != 1 || !OnlyConsumer(y, it->second[0])) continue;
    const size_t r = it->second[0];
    Node& reader = g_.nodes[r];
    // Only as X: W, B or Z must keep the activated values.
    if (!conv_nodes_.count(r) || dead_[r] || reader.inputs[0] != y || !IsDepthwiseNhwc(reader) ||
        reader.FindAttribute(kConvNhwcInputActivation)) {
      continue;
    }
    Attribute moved = *act;
    moved.name = kConvNhwcInputActivation;
    producer.attributes.erase(act);
    reader.attributes.push_back(std::move(moved));
    ++stats.input_activations;
  }
}

Status NhwcRewriter::Finish() {
  RemoveDeadTransposes();
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const Node& n = g_.nodes[i];
    if (!dead_[i] && (IsTransposeWith(n, kToNchw) || IsTransposeWith(n, kToNhwc)) && !Constant(n.inputs[0])) {
      ++stats.transposes;  // an activation transpose
    }
  }
  // New nodes were appended; put them back in producer-before-consumer order.
  VIGIL_RETURN_IF_ERROR(RemoveDeadAndSort(g_, dead_));
  dead_.assign(g_.nodes.size(), false);
  if ((stats.convs > 0 || stats.pools > 0) && model_.OpsetVersion(kVigilDomain) < 0) {
    model_.opset_imports.push_back({kVigilDomain, kVigilOpsetVersion});
  }
  return Status::Ok();
}

}  // namespace

Result<NhwcStats> ConvertConvsToNhwc(Model& model, const std::vector<size_t>& conv_nodes,
                                     const std::unordered_map<std::string, TypeInfo>& types,
                                     const NhwcOptions& options) {
  if (conv_nodes.empty()) return NhwcStats{};
  // Checked before anything changes, so that a failure leaves the model as it was.
  std::unordered_set<size_t> seen;
  for (size_t i : conv_nodes) {
    if (i >= model.graph.nodes.size() || !seen.insert(i).second) {
      return InternalError("NHWC pass: node index {} is out of range or listed twice", i);
    }
    const Node& n = model.graph.nodes[i];
    const bool conv = n.op_type == "Conv" && IsDefaultDomain(n.domain);
    const bool qconv = n.op_type == kQConvOp && n.domain == kVigilDomain;
    if ((!conv && !qconv) || n.inputs.size() < 2 || n.outputs.size() != 1 ||
        n.inputs[0].empty() || n.inputs[1].empty() || n.outputs[0].empty()) {
      return InternalError("NHWC pass: {} is not a Conv or QConv with X, W and one output", n.Describe(i));
    }
  }
  NhwcRewriter rewriter(model, types);
  rewriter.SetNhwcPools(options.nhwc_pools);
  rewriter.SetNhwcLayoutOps(options.nhwc_layout_ops);
  for (size_t i : conv_nodes) rewriter.ConvertConv(i);
  rewriter.Optimize();
  if (options.fuse_residual) rewriter.FuseResiduals();
  if (options.fuse_relu || options.fuse_relu6) rewriter.FuseActivations(options.fuse_relu, options.fuse_relu6);
  if (options.depthwise_input_activation) rewriter.MoveActivationsToDepthwise();
  VIGIL_RETURN_IF_ERROR(rewriter.Finish());
  return rewriter.stats;
}

}  // namespace vigil::ir
