// The chain matcher of the attention fusion (fuse_attention.h): internal to
// the pass, shared by its two pattern files, fuse_attention.cpp (packed
// in-projection, sequence first: nn.MultiheadAttention) and
// fuse_attention_projected.cpp (three projections, batch first: BERT).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_index.h"
#include "ir/symbolic_shapes.h"

namespace vigil::ir {

// One matched chain.
struct AttentionMatch {
  std::string qkv;                // packed pattern: the projection output the op reads
  std::string mask;               // the additive mask, or empty
  bool zero_undefined_rows = false;  // the exporter's IsNaN/Where guard was on P
  bool batch_first = false;       // layout "bse" (else "sbe")
  int64_t heads = 0;
  int64_t head_dim = 0;
  double scale = 1;
  size_t out_transpose = 0;       // the Transpose the rewrite replaces
  std::vector<size_t> chain;      // every node of the chain, out_transpose included
  // Projected pattern: the MatMulBias nodes of q, k and v, which read `x`;
  // the rewrite packs them into one whose output becomes qkv.
  bool projected = false;
  std::array<size_t, 3> projections{};
  std::string x;
};

bool IsOp(const Node& n, const char* op, size_t inputs);
// The initializer `name` of `g` when it is a constant (not also a graph
// input) of a fixed-width dtype with all its bytes, else null.
const Tensor* ConstantBytes(const Graph& g, const std::string& name);
bool HasPerm(const Node& n, const std::vector<int64_t>& perm);

class AttentionMatcher {
 public:
  AttentionMatcher(const Model& model, const GraphIndex& idx, const std::unordered_map<std::string, TypeInfo>& types);

  // The chain whose Softmax is node `softmax`, of either pattern, or nullopt.
  std::optional<AttentionMatch> Match(size_t softmax);

 private:
  std::optional<AttentionMatch> MatchPacked(size_t softmax);
  std::optional<AttentionMatch> MatchProjected(size_t softmax);

  // The node producing `value` when it is `op` with `inputs` inputs.
  std::optional<size_t> ProducerOp(const std::string& value, const char* op, size_t inputs) const;
  // The node producing `value`, if any.
  std::optional<size_t> Producer(const std::string& value) const;
  // The only node reading `value`, when exactly one does.
  std::optional<size_t> OnlyConsumer(const std::string& value) const;
  // The only node reading `value` that is not a Shape node, if there is one.
  std::optional<size_t> OnlyConsumerBesidesShapes(const std::string& value) const;
  // Steps back over a scale node (Mul by or Div by a single-element value)
  // that produces `value`, if there is one: returns its data input.
  std::string SkipScale(const std::string& value, AttentionMatch& m);
  bool SoftmaxOnLastAxis(const Node& sm);

  // Packed pattern (fuse_attention.cpp).
  std::optional<int64_t> HeadSplit(const std::string& value, AttentionMatch& m, std::string* split,
                                   std::optional<SymShape>* sbe);
  bool Split(const std::string& split, const SymShape& sbe, AttentionMatch& m);

  // Projected pattern (fuse_attention_projected.cpp).
  std::optional<std::string> MaskedScores(const std::string& value, AttentionMatch& m);
  std::optional<std::string> KeyHeads(const std::string& value, AttentionMatch& m);
  std::optional<size_t> Probabilities(const std::string& softmax_out, AttentionMatch& m);
  bool Projection(const std::string& heads4, size_t which, AttentionMatch& m, std::optional<SymShape>* bsh);

  const Graph& g_;
  const GraphIndex& idx_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  int64_t opset_;
  SymbolicShapes sym_;
  std::unordered_map<std::string, size_t> producer_;
};

}  // namespace vigil::ir
