// The CUDA support functions' answers for an input whose dtype is not known
// when the model loads (a value out of If, Loop or Scan: unknown_dtype.h),
// and the kernels' refusal at run time of a dtype they cannot handle. The
// ONNX node tests that need it (test_linear_attention_*_expanded,
// test_affine_grid_*_expanded, test_range_*_expanded) run it end to end.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/kernel_test_util.h"
#include "backends/cuda/cuda_test_util.h"

namespace vigil::cuda {
namespace {

using ir::DataType;
using runtime::Tensor;
using testing::CudaBackendForTests;
using testing::PoisonedDeviceOutputs;
namespace ct = cpu::testing;

ir::Node Node(const std::string& op, size_t inputs, std::vector<ir::Attribute> attrs = {}) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs; ++i) names.push_back("x" + std::to_string(i));
  return ct::MakeNode(op, names, {"y"}, std::move(attrs));
}

// Transpose, Concat, Cast, CastLike, the other data-movement kernels and
// Reshape/Flatten/Squeeze/Unsqueeze take an input whose dtype is not known
// when the model loads (out of If, Loop or Scan); a sequence, or a known
// dtype they cannot move (string), stays refused with the reason.
TEST(CudaUnknownDtype, SupportAtLoadAndRefusalAtRunTime) {
  VIGIL_SKIP_WITHOUT_CUDA();
  auto backend = CudaBackendForTests();
  ir::TypeInfo unknown;  // kind kUnknown: no type recorded
  ir::TypeInfo unknown_tensor;
  unknown_tensor.kind = ir::TypeInfo::Kind::kTensor;
  ir::TypeInfo sequence;
  sequence.kind = ir::TypeInfo::Kind::kSequence;
  const ir::TypeInfo f32 = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{2, 3});
  const ir::TypeInfo str = ops::TensorType(DataType::kString, std::vector<int64_t>{2, 3});
  auto claims = [&](const ir::Node& node, int64_t opset, std::vector<const ir::TypeInfo*> in, std::string* why) {
    runtime::NodeTypes types;
    types.inputs = std::move(in);
    return backend->SupportsTyped(node, opset, types, why);
  };
  std::string why;
  const ir::Node transpose = Node("Transpose", 1);
  EXPECT_TRUE(claims(transpose, 13, {&unknown}, &why)) << why;
  EXPECT_TRUE(claims(transpose, 13, {&unknown_tensor}, &why)) << why;
  EXPECT_TRUE(claims(transpose, 13, {nullptr}, &why)) << why;
  EXPECT_FALSE(claims(transpose, 13, {&sequence}, &why));
  EXPECT_FALSE(claims(transpose, 13, {&str}, &why));
  EXPECT_NE(why.find("dtype str"), std::string::npos) << why;

  const ir::Node concat = Node("Concat", 3, {ct::IntAttr("axis", 0)});
  EXPECT_TRUE(claims(concat, 13, {&unknown, &f32, &unknown_tensor}, &why)) << why;
  EXPECT_FALSE(claims(concat, 13, {&unknown, &f32, &str}, &why));
  const ir::TypeInfo i64 = ops::TensorType(DataType::kInt64, std::vector<int64_t>{2, 3});
  EXPECT_FALSE(claims(concat, 13, {&f32, &unknown, &i64}, &why));
  EXPECT_NE(why.find("mixed"), std::string::npos) << why;

  const ir::Node cast = Node("Cast", 1, {ct::IntAttr("to", static_cast<int64_t>(DataType::kFloat32))});
  EXPECT_TRUE(claims(cast, 13, {&unknown}, &why)) << why;
  EXPECT_FALSE(claims(cast, 13, {&sequence}, &why));
  EXPECT_FALSE(claims(cast, 13, {&str}, &why));
  const ir::Node cast_like = Node("CastLike", 2);
  EXPECT_TRUE(claims(cast_like, 15, {&unknown, &f32}, &why)) << why;
  EXPECT_FALSE(claims(cast_like, 15, {&sequence, &f32}, &why));

  // The other data-movement kernels and the views that cannot meet a
  // sequence take it too; Identity does not (a sequence of no recorded type
  // may reach it, and runs on the host).
  const ir::TypeInfo shape = ops::TensorType(DataType::kInt64, std::vector<int64_t>{2});
  EXPECT_TRUE(claims(Node("Reshape", 2), 14, {&unknown, &shape}, &why)) << why;
  EXPECT_TRUE(claims(Node("Unsqueeze", 2), 13, {&unknown, &shape}, &why)) << why;
  EXPECT_TRUE(claims(Node("Slice", 3), 13, {&unknown, &shape, &shape}, &why)) << why;
  EXPECT_TRUE(claims(Node("Gather", 2), 13, {&unknown, &shape}, &why)) << why;
  EXPECT_FALSE(claims(Node("Reshape", 2), 14, {&sequence, &shape}, &why));
  EXPECT_FALSE(claims(Node("Identity", 1), 14, {&unknown}, &why));

  // At run time a dtype the kernel cannot move is refused as Unsupported,
  // naming it (the kernel is reached here without the support function): 16
  // device bytes labelled as two strings, which it must not read.
  auto bytes = backend->ToDevice(ct::MakeTensor(DataType::kUint8, {16}, std::vector<uint8_t>(16, 0)));
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  ASSERT_TRUE(backend->Synchronize().ok());
  auto owner = std::make_shared<Tensor>(*bytes);
  const Tensor strings = Tensor::OnDevice(runtime::Device::kCuda, DataType::kString, {2}, bytes->raw_data(), owner);
  const Tensor* in[] = {&strings};
  std::vector<Tensor> out;
  PoisonedDeviceOutputs allocator(*backend);
  Status st = backend->Run(transpose, 13, in, out, allocator);
  EXPECT_EQ(st.code(), ErrorCode::kUnsupported) << st.ToString();
  EXPECT_NE(st.ToString().find("dtype str"), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace vigil::cuda
