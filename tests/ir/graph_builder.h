// Small helpers to build ir::Model values directly in tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
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

// An initializer that owns `values` (T is dtype's storage type; one value
// per element of dims).
template <typename T>
inline Tensor OwnedInitializer(std::string name, DataType dtype, std::vector<int64_t> dims, std::vector<T> values) {
  Tensor t = Initializer(std::move(name), dtype, std::move(dims));
  auto data = std::make_shared<std::vector<T>>(std::move(values));
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data->data()), data->size() * sizeof(T)};
  t.keep_alive = data;
  return t;
}

// The element count of a shape (1 for a scalar).
inline uint64_t ElementsOf(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

inline Attribute IntAttr(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInt;
  a.i = v;
  return a;
}

inline Attribute IntsAttr(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.type = AttributeType::kInts;
  a.ints = std::move(v);
  return a;
}

// The indices of m's nodes of type `op`, in order.
inline std::vector<size_t> OpIndices(const Model& m, const std::string& op) {
  std::vector<size_t> out;
  for (size_t i = 0; i < m.graph.nodes.size(); ++i) {
    if (m.graph.nodes[i].op_type == op) out.push_back(i);
  }
  return out;
}

// The declared types of m's graph inputs, by name.
inline std::unordered_map<std::string, TypeInfo> InputTypes(const Model& m) {
  std::unordered_map<std::string, TypeInfo> types;
  for (const ValueInfo& vi : m.graph.inputs) types[vi.name] = vi.type;
  return types;
}

// How many of m's nodes are of type `op`.
inline size_t CountNodes(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

// The node that writes `value`, or null.
inline const Node* ProducerOf(const Model& m, const std::string& value) {
  for (const Node& node : m.graph.nodes) {
    for (const std::string& out : node.outputs) {
      if (out == value) return &node;
    }
  }
  return nullptr;
}

// Transposes of activations (not of initializers) with permutation `perm`.
inline size_t CountTransposes(const Model& m, const std::vector<int64_t>& perm) {
  size_t n = 0;
  for (const Node& node : m.graph.nodes) {
    const Attribute* p = node.FindAttribute("perm");
    if (node.op_type != "Transpose" || !p || p->ints != perm) continue;
    bool weight = false;
    for (const Tensor& t : m.graph.initializers) weight |= t.name == node.inputs[0];
    n += !weight;
  }
  return n;
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

// n floats drawn uniformly from [lo, hi), fixed by `seed` (mt19937).
inline std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo = -1, float hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Whether two float32 (element_bytes 4) or float16 (2) buffers hold the
// same bits element for element, except that a NaN matches any NaN: IEEE
// 754 does not fix which operand's NaN a product passes on, and the
// compiler may order a commutative product's operands either way, so the
// sign and payload of a NaN are not part of a value.
inline bool SameBitsOrBothNaN(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, size_t element_bytes) {
  if (a.size() != b.size() || (element_bytes != 2 && element_bytes != 4)) return false;
  const auto nan = [element_bytes](uint32_t bits) {
    return element_bytes == 4 ? (bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0
                              : (bits & 0x7c00u) == 0x7c00u && (bits & 0x03ffu) != 0;
  };
  for (size_t i = 0; i + element_bytes <= a.size(); i += element_bytes) {
    uint32_t x = 0, y = 0;
    std::memcpy(&x, &a[i], element_bytes);
    std::memcpy(&y, &b[i], element_bytes);
    if (x != y && !(nan(x) && nan(y))) return false;
  }
  return true;
}

}  // namespace vigil::ir::testing
