// Small helpers to build ir::Model values directly in tests.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace vigil::ir::testing {

inline ValueInfo TensorValue(std::string name, DataType dtype, std::vector<int64_t> dims) {
  ValueInfo vi;
  vi.name = std::move(name);
  vi.has_type = true;
  vi.type.kind = TypeInfo::Kind::kTensor;
  vi.type.elem_type = dtype;
  vi.type.shape.rank_known = true;
  for (int64_t d : dims) vi.type.shape.dims.push_back(Dim::Known(d));
  return vi;
}

inline Node MakeNode(std::string op, std::vector<std::string> in, std::vector<std::string> out,
                     std::string name = {}) {
  Node n;
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.name = std::move(name);
  return n;
}

inline Tensor Initializer(std::string name, DataType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  return t;
}

// x -> Relu(a) -> Neg(b) -> y, opset 17.
inline Model ChainModel() {
  Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "chain";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, 3})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {2, 3})};
  m.graph.nodes = {MakeNode("Relu", {"x"}, {"a"}, "relu"), MakeNode("Neg", {"a"}, {"y"}, "neg")};
  return m;
}

}  // namespace vigil::ir::testing
