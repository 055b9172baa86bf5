// Helpers to run one CPU kernel (and its shape inference) directly in tests,
// without a session.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/gemm.h"
#include "backends/cpu/kernel.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "runtime/tensor.h"

namespace vigil::cpu::testing {

class HeapAllocator : public runtime::OutputAllocator {
 public:
  Result<runtime::Tensor> Allocate(size_t, ir::DataType dtype, std::vector<int64_t> shape) override {
    VIGIL_ASSIGN_OR_RETURN(runtime::Tensor t, runtime::Tensor::Allocate(dtype, std::move(shape)));
    // Poison: every element must be written by the kernel.
    std::memset(t.raw_data(), 0xA5, t.byte_size());
    return t;
  }
};

// A tensor holding `values` (T must match dtype's storage type).
template <typename T>
runtime::Tensor MakeTensor(ir::DataType dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  runtime::Tensor t = runtime::Tensor::Allocate(dtype, std::move(shape)).value();
  EXPECT_EQ(t.byte_size(), values.size() * sizeof(T)) << "MakeTensor: value count does not match shape";
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), std::min(t.byte_size(), values.size() * sizeof(T)));
  return t;
}

inline runtime::Tensor F32(std::vector<int64_t> shape, const std::vector<float>& v) {
  return MakeTensor(ir::DataType::kFloat32, std::move(shape), v);
}
inline runtime::Tensor I64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return MakeTensor(ir::DataType::kInt64, std::move(shape), v);
}

template <typename T>
std::vector<T> Values(const runtime::Tensor& t) {
  std::vector<T> v(t.byte_size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.raw_data(), v.size() * sizeof(T));
  return v;
}

inline ir::Node MakeNode(std::string op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                         std::vector<ir::Attribute> attrs = {}) {
  ir::Node n;
  n.op_type = std::move(op);
  n.name = "n";
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attrs);
  return n;
}

inline ir::Attribute IntAttr(std::string name, int64_t v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kInt;
  a.i = v;
  return a;
}
inline ir::Attribute FloatAttr(std::string name, float v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kFloat;
  a.f = v;
  return a;
}
inline ir::Attribute StringAttr(std::string name, std::string v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kString;
  a.s = std::move(v);
  return a;
}
inline ir::Attribute IntsAttr(std::string name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kInts;
  a.ints = std::move(v);
  return a;
}
inline ir::Attribute FloatsAttr(std::string name, std::vector<float> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kFloats;
  a.floats = std::move(v);
  return a;
}

// While one lives on a thread, RunKernel keeps kernels on their reference
// code whatever its `optimised` argument says (a test of the reference code
// through helpers that call RunKernel with the default).
inline thread_local bool t_force_reference_kernels = false;
struct ForceReferenceKernels {
  bool previous = t_force_reference_kernels;
  ForceReferenceKernels() { t_force_reference_kernels = true; }
  ~ForceReferenceKernels() { t_force_reference_kernels = previous; }
  ForceReferenceKernels(const ForceReferenceKernels&) = delete;
  ForceReferenceKernels& operator=(const ForceReferenceKernels&) = delete;
};

// Runs the CPU kernel registered for node.op_type at `opset` on `inputs`
// (null entries are omitted optional inputs); `optimised` false keeps it on
// its reference code (KernelContext::optimised).
inline Result<std::vector<runtime::Tensor>> RunKernel(const ir::Node& node, int64_t opset,
                                                      const std::vector<const runtime::Tensor*>& inputs,
                                                      bool optimised = true) {
  const KernelDef* def = FindKernel(node.domain, node.op_type, opset);
  if (!def) return UnsupportedError("no CPU kernel for {} at opset {}", node.op_type, opset);
  std::vector<runtime::Tensor> outputs(node.outputs.size());
  HeapAllocator alloc;
  KernelContext ctx(node, opset, inputs, outputs, alloc);
  optimised = optimised && !t_force_reference_kernels;
  ctx.set_optimised(optimised);
  ScopedOptimisedProducts products(optimised);  // as the CPU backend sets it around a node
  VIGIL_RETURN_IF_ERROR(def->fn(ctx));
  return outputs;
}

// Runs the op's shape inference with the given input types (and constant
// values, where known); returns the output types.
inline Result<std::vector<ir::TypeInfo>> InferNode(const ir::Node& node, int64_t opset,
                                                   const std::vector<const ir::TypeInfo*>& types,
                                                   const std::vector<const ir::Tensor*>& values = {}) {
  const ops::OpSchema* schema = ops::FindSchema(node.domain, node.op_type, opset);
  if (!schema) return UnsupportedError("no schema for {} at opset {}", node.op_type, opset);
  VIGIL_RETURN_IF_ERROR(ops::CheckArity(*schema, node));
  int counter = 0;
  std::vector<const ir::Tensor*> vals = values;
  vals.resize(types.size(), nullptr);
  ops::InferenceContext ctx(node, opset, types, vals, &counter);
  VIGIL_RETURN_IF_ERROR(schema->infer(ctx));
  return ctx.outputs();
}

}  // namespace vigil::cpu::testing
