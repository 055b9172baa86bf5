// Shape, Size, ConstantOfShape and integer Range on the GPU, and a model with a symbolic
// batch dim whose shape arithmetic (Shape -> Gather -> Concat -> Reshape)
// cannot be folded at load: it must still be placed on the GPU as a whole.
#include <tuple>

#include "cuda_test_util.h"

namespace vigil::cuda::testing {
namespace {

using cpu::testing::I64;
using cpu::testing::IntAttr;

TEST(CudaShapeSource, ShapeSizeAndConstantOfShape) {
  VIGIL_SKIP_WITHOUT_CUDA();
  runtime::Tensor x = RandomTensor(ir::DataType::kFloat16, {3, 13, 5}, 1);
  NodeCase shape{"Shape", 15, {IntAttr("start", 1)}, {x}};
  ExpectCudaMatchesCpu(shape, 0);
  NodeCase size{"Size", 13, {}, {x}};
  ExpectCudaMatchesCpu(size, 0);
  ir::Attribute value;
  value.name = "value";
  value.type = ir::AttributeType::kTensor;
  runtime::Tensor seven = cpu::testing::F32({1}, {7.5f});
  value.t = seven.AsConstant("value");
  NodeCase fill{"ConstantOfShape", 9, {value}, {I64({3}, {2, 127, 3})}, {true}};
  ExpectCudaMatchesCpu(fill, 0);
  NodeCase zeros{"ConstantOfShape", 9, {}, {I64({2}, {5, 13})}, {true}};
  ExpectCudaMatchesCpu(zeros, 0);
}

// Integer Range with its scalars on the host: ascending, descending with a
// remainder, and empty; int64 and int32.
TEST(CudaShapeSource, IntegerRange) {
  VIGIL_SKIP_WITHOUT_CUDA();
  for (auto [start, limit, delta] : {std::tuple<int64_t, int64_t, int64_t>{0, 128, 1}, {130, -7, -4}, {5, 5, 3},
                                     {-3, 1000, 13}}) {
    SCOPED_TRACE(::testing::Message() << "Range(" << start << ", " << limit << ", " << delta << ")");
    NodeCase r64{"Range", 11, {}, {I64({}, {start}), I64({}, {limit}), I64({}, {delta})}, {true, true, true}};
    ExpectCudaMatchesCpu(r64, 0);
    auto i32 = [](int64_t v) {
      return cpu::testing::MakeTensor<int32_t>(ir::DataType::kInt32, {}, {static_cast<int32_t>(v)});
    };
    NodeCase r32{"Range", 11, {}, {i32(start), i32(limit), i32(delta)}, {true, true, true}};
    ExpectCudaMatchesCpu(r32, 0);
  }
}

TEST(CudaShapeSource, SymbolicBatchRunsWithoutFallback) {
  VIGIL_SKIP_WITHOUT_CUDA();
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  ir::ValueInfo x;
  x.name = "x";
  x.has_type = true;
  x.type = ops::TensorType(ir::DataType::kFloat32, std::vector<ir::Dim>{ir::Dim::Symbolic("N"), ir::Dim::Known(6)});
  m.graph.inputs = {x};
  ir::ValueInfo y;
  y.name = "y";
  m.graph.outputs = {y};
  m.graph.initializers.push_back(I64({1}, {0}).AsConstant("zero"));
  m.graph.initializers.push_back(I64({2}, {3, 2}).AsConstant("tail"));
  auto node = [](std::string op, std::vector<std::string> in, std::string out, std::vector<ir::Attribute> a = {}) {
    return cpu::testing::MakeNode(std::move(op), std::move(in), {std::move(out)}, std::move(a));
  };
  m.graph.nodes = {node("Shape", {"x"}, "s"), node("Gather", {"s", "zero"}, "n", {IntAttr("axis", 0)}),
                   node("Concat", {"n", "tail"}, "shape", {IntAttr("axis", 0)}), node("Reshape", {"x", "shape"}, "r"),
                   node("Relu", {"r"}, "y")};
  for (size_t i = 0; i < m.graph.nodes.size(); ++i) m.graph.nodes[i].name = "n" + std::to_string(i);
  runtime::SessionOptions options;
  options.backends = {CudaBackendForTests(), cpu::MakeCpuBackend()};
  options.no_fallback = true;
  auto session = runtime::Session::Create(m, options);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  runtime::Tensor in = RandomTensor(ir::DataType::kFloat32, {5, 6}, 3);
  auto out = (*session)->Run({{"x", in.dtype(), in.shape(), in.raw_data(), in.byte_size(), ""}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const runtime::Tensor& r = (*out)[0].tensor;
  ASSERT_EQ(r.shape(), (std::vector<int64_t>{5, 3, 2}));
  for (uint64_t i = 0; i < r.element_count(); ++i) {
    EXPECT_EQ(r.data<float>()[i], std::max(in.data<float>()[i], 0.0f)) << i;
  }
}

}  // namespace
}  // namespace vigil::cuda::testing
