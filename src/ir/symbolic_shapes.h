// Symbolic evaluation of the shape arithmetic that exporters leave in graphs
// with a dynamic batch dim. torch.onnx writes every Reshape of an attention
// block with a target computed at run time from Shape(x), Gather, Mul, Div,
// Unsqueeze and Concat; load-time folding cannot evaluate it while the batch
// is symbolic, and shape inference then knows nothing of the Reshape outputs.
// The fusion passes use this evaluator to prove what such a chain computes:
// each dim is a monomial, an integer times a product of symbols ("N"), so
// [S, N*H, D] can be compared with what a pattern needs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_index.h"

namespace vigil::ir {

// coeff * syms[0] * syms[1] * ...; syms sorted. Known when syms is empty.
struct SymDim {
  int64_t coeff = 1;
  std::vector<std::string> syms;

  static SymDim Known(int64_t v) { return SymDim{v, {}}; }
  bool known() const { return syms.empty(); }
  bool operator==(const SymDim& o) const { return coeff == o.coeff && syms == o.syms; }
};
using SymShape = std::vector<SymDim>;

// a * b, or nullopt on overflow.
std::optional<SymDim> MulDims(const SymDim& a, const SymDim& b);
// a / b when the division is exact (b's symbols all in a, coefficient
// divisible), else nullopt.
std::optional<SymDim> DivDims(const SymDim& a, const SymDim& b);

// Evaluates values of one graph on demand, memoised. Every answer is exact
// or absent: an op, attribute or operand it does not understand gives
// nullopt, never a guess.
class SymbolicShapes {
 public:
  // `g`, `idx` and `types` (inferred value types: known dims become numbers,
  // symbolic dims symbols) must outlive the evaluator and stay unchanged.
  SymbolicShapes(const Graph& g, const GraphIndex& idx, const std::unordered_map<std::string, TypeInfo>& types,
                 int64_t default_opset);

  // The shape of tensor `value`: derived through the view and matmul ops
  // that produce it (Reshape, Transpose, Squeeze, Unsqueeze, Gather, MatMul,
  // elementwise with a scalar), else from its inferred type (a dim with
  // neither value nor name becomes a symbol of its own).
  std::optional<SymShape> ShapeOf(const std::string& value);
  // The elements of the integer tensor `value` (shape arithmetic: constants,
  // Shape, Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, Mul, Div, Add,
  // Sub), in order; rank is not tracked.
  std::optional<SymShape> ValueOf(const std::string& value);
  // The number held by the single-element `value`: a constant, or Cast,
  // Sqrt, Mul, Div of such numbers, or a known shape element. Casts to
  // float16/bfloat16 round as the cast would.
  std::optional<double> ScalarOf(const std::string& value);
  // Takes `shape` as the shape of `value` from now on, for a rewrite that
  // checks it at run time instead (the attention fusion's mask Add); answers
  // already given are not revisited.
  void AssumeShape(const std::string& value, SymShape shape);

 private:
  const Node* Producer(const std::string& value) const;
  std::optional<SymShape> ComputeShape(const Node& n);
  std::optional<SymShape> ComputeValue(const Node& n);
  std::optional<double> ComputeScalar(const Node& n);
  std::optional<SymShape> ShapeFromType(const std::string& value) const;
  std::optional<std::vector<int64_t>> KnownInts(const std::string& value);
  std::optional<std::vector<int64_t>> Axes(const Node& n);

  const Graph& g_;
  const GraphIndex& idx_;
  const std::unordered_map<std::string, TypeInfo>& types_;
  int64_t opset_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, std::optional<SymShape>> shapes_, values_;
  int depth_ = 0;
};

}  // namespace vigil::ir
