// The CUDA kernel dtype probe (src/backends/cuda/kernel_dtype_probe.h) on
// support functions written here, whose answers are known: it finds the
// dtypes they take, tries the other inputs at their CPU-declared dtypes,
// sets `to`, tries output dtypes, and says "undecided" where no synthesized
// node is taken. Host code only: runs without a GPU.
#include "backends/cuda/kernel_dtype_probe.h"

#include <gtest/gtest.h>

#include "backends/cpu/kernel_type_constraints.h"
#include "ops/attributes.h"

namespace vigil::cuda {
namespace {

using ir::DataType;

constexpr uint64_t Bits(std::initializer_list<DataType> dtypes) {
  uint64_t m = 0;
  for (DataType d : dtypes) m |= uint64_t{1} << static_cast<int>(d);
  return m;
}

Status NoKernel(CudaKernelContext&) { return Status::Ok(); }

DataType Dtype(const runtime::NodeTypes& t, size_t i) {
  return i < t.inputs.size() && t.inputs[i] ? t.inputs[i]->elem_type : DataType::kUndefined;
}

// f16 or bf16 data with int64 (not int32) indices, both present.
bool HalfDataInt64Indices(const ir::Node& node, const runtime::NodeTypes& t, std::string*) {
  if (node.inputs.size() < 2) return false;
  const DataType d = Dtype(t, 0);
  return (d == DataType::kFloat16 || d == DataType::kBfloat16) && Dtype(t, 1) == DataType::kInt64;
}

// Only with an attribute the probe never sets.
bool NeedsModeAttribute(const ir::Node& node, const runtime::NodeTypes& t, std::string*) {
  auto mode = ops::StringAttr(node, "mode", "");
  return mode.ok() && *mode == "special" && Dtype(t, 0) == DataType::kFloat32;
}

// Cast: the `to` attribute must be set, and both ends float32 or int64.
bool CastToSame(const ir::Node& node, const runtime::NodeTypes& t, std::string*) {
  auto to = ops::RequiredIntAttr(node, "to");
  const DataType d = Dtype(t, 0);
  return to.ok() && static_cast<DataType>(*to) == d && (d == DataType::kFloat32 || d == DataType::kInt64);
}

// Concat of two or more float32 inputs of rank 2 (not unknown).
bool TwoRankTwoFloats(const ir::Node& node, const runtime::NodeTypes& t, std::string*) {
  if (node.inputs.size() < 2) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (Dtype(t, i) != DataType::kFloat32 || !t.inputs[i]->shape.rank_known || t.inputs[i]->shape.dims.size() != 2) {
      return false;
    }
  }
  return true;
}

// float data quantized to an int8 or uint8 output, which must be known.
bool FloatToInt8Output(const ir::Node&, const runtime::NodeTypes& t, std::string*) {
  const DataType y = t.outputs.empty() || !t.outputs[0] ? DataType::kUndefined : t.outputs[0]->elem_type;
  return Dtype(t, 0) == DataType::kFloat16 && (y == DataType::kInt8 || y == DataType::kUint8);
}

TEST(KernelDtypeProbe, NoSupportFunctionTakesAnyDtype) {
  const CudaKernelDef def{"", "Shape", 1, kLatest, NoKernel, nullptr};
  ProbedDtypes p = ProbeKernelDtypes(def);
  EXPECT_TRUE(p.decided);
  EXPECT_EQ(p.dtypes, cpu::kAnyDtype);
}

TEST(KernelDtypeProbe, FindsTheMainDtypesWithTheOtherInputsAtTheirCpuDtypes) {
  // Gather's CPU declaration: T (input 0), Tind (input 1: int32, int64).
  const CudaKernelDef def{"", "Gather", 13, kLatest, NoKernel, HalfDataInt64Indices};
  ProbedDtypes p = ProbeKernelDtypes(def);
  EXPECT_TRUE(p.decided);
  EXPECT_EQ(p.dtypes, Bits({DataType::kFloat16, DataType::kBfloat16}));
}

TEST(KernelDtypeProbe, SetsToForCast) {
  const CudaKernelDef def{"", "Cast", 19, kLatest, NoKernel, CastToSame};
  ProbedDtypes p = ProbeKernelDtypes(def);
  EXPECT_TRUE(p.decided);
  EXPECT_EQ(p.dtypes, Bits({DataType::kFloat32, DataType::kInt64}));
}

TEST(KernelDtypeProbe, TriesVariadicInputsAndRanks) {
  const CudaKernelDef def{"", "Concat", 13, kLatest, NoKernel, TwoRankTwoFloats};
  ProbedDtypes p = ProbeKernelDtypes(def);
  EXPECT_TRUE(p.decided);
  EXPECT_EQ(p.dtypes, Bits({DataType::kFloat32}));
}

TEST(KernelDtypeProbe, TriesOutputDtypesWhereUnknownOnesFindNothing) {
  const CudaKernelDef def{"", "QuantizeLinear", 21, kLatest, NoKernel, FloatToInt8Output};
  ProbedDtypes p = ProbeKernelDtypes(def);
  EXPECT_TRUE(p.decided);
  EXPECT_EQ(p.dtypes, Bits({DataType::kFloat16}));
}

TEST(KernelDtypeProbe, UndecidedWhereNoSynthesizedNodeIsTaken) {
  const CudaKernelDef def{"", "Resize", 19, kLatest, NoKernel, NeedsModeAttribute};
  ProbedDtypes p = ProbeKernelDtypes(def);
  EXPECT_FALSE(p.decided);
  EXPECT_EQ(p.dtypes, 0u);
}

}  // namespace
}  // namespace vigil::cuda
