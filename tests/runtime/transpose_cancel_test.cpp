// The session's Transpose -> Reshape -> Transpose cancellation
// (ir/transpose_reshape.h) end to end, without a GPU: a fake device backend
// runs every node with the CPU kernels, so the pass runs as in a GPU session
// and the outputs can be compared with VIGIL_CANCEL_TRANSPOSES=0 and with
// CPU-only sessions, which never rewrite.
#include <cstdlib>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "vigil/float16.h"
#include "onnx/reader.h"
#include "runtime/conv_layout.h"
#include "runtime/session.h"
#include "fake_device_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

using testing::FakeDeviceBackend;

// Sets VIGIL_CANCEL_TRANSPOSES while it lives; unset again after.
class CancelSwitch {
 public:
  explicit CancelSwitch(const char* value) { setenv(kName, value, 1); }
  ~CancelSwitch() { unsetenv(kName); }
  CancelSwitch(const CancelSwitch&) = delete;
  CancelSwitch& operator=(const CancelSwitch&) = delete;

 private:
  static constexpr const char* kName = "VIGIL_CANCEL_TRANSPOSES";
};

SessionOptions Options(bool device) {
  SessionOptions o;
  if (device) o.backends.push_back(std::make_shared<FakeDeviceBackend>());
  o.backends.push_back(cpu::MakeCpuBackend());
  o.conv_layout = ConvLayout::kNhwcWhereFaster;
  return o;
}

ir::Node TransposeNode(std::string in, std::string out, std::vector<int64_t> perm) {
  ir::Node n = MakeNode("Transpose", {in}, {out}, out);
  n.attributes.push_back(IntsAttr("perm", std::move(perm)));
  return n;
}

// x [2,3,5,7] -> Transpose(0,3,1,2) -> Reshape [2,7,15] -> Transpose(0,2,1)
// -> Relu -> y [2,15,7].
ir::Model PatchFlatten() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "patch";
  m.graph.inputs = {TensorValue("x", DataType::kFloat32, {2, 3, 5, 7})};
  m.graph.outputs = {TensorValue("y", DataType::kFloat32, {2, 15, 7})};
  m.graph.initializers = {OwnedInitializer<int64_t>("target", DataType::kInt64, {3}, {2, 7, 15})};
  m.graph.nodes = {TransposeNode("x", "a", {0, 3, 1, 2}), MakeNode("Reshape", {"a", "target"}, {"r"}, "flatten"),
                   TransposeNode("r", "t", {0, 2, 1}), MakeNode("Relu", {"t"}, {"y"}, "relu")};
  return m;
}

// The bytes of output 0 of `s` for input `name` of `dims`, filled with
// fixed pseudo-random values of `dt`.
std::vector<uint8_t> RunBytes(const Session& s, const std::string& name, DataType dt, std::vector<int64_t> dims) {
  const size_t n = ElementsOf(dims), size = dt == DataType::kFloat16 ? 2 : 4;
  std::vector<uint8_t> x(n * size);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < n; ++i) {
    const float v = u(rng);
    const uint16_t h = FloatToFloat16(v);
    std::memcpy(x.data() + i * size, size == 2 ? static_cast<const void*>(&h) : &v, size);
  }
  auto out = s.Run({{name, dt, std::move(dims), x.data(), x.size(), ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const auto* p = static_cast<const uint8_t*>((*out)[0].tensor.raw_data());
  return std::vector<uint8_t>(p, p + (*out)[0].tensor.byte_size());
}

TEST(TransposeCancel, DeviceSessionsRunThePatchFlattenAsOneReshape) {
  auto rewritten = Session::Create(PatchFlatten(), Options(/*device=*/true));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  EXPECT_EQ(CountNodes((*rewritten)->model(), "Transpose"), 0u);
  EXPECT_EQ((*rewritten)->model().graph.nodes.size(), 2u);  // Reshape, Relu
  Result<std::unique_ptr<Session>> kept = InternalError("not created");
  {
    CancelSwitch off("0");
    kept = Session::Create(PatchFlatten(), Options(/*device=*/true));
  }
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(CountNodes((*kept)->model(), "Transpose"), 2u);
  auto plain = Session::Create(PatchFlatten(), Options(/*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(CountNodes((*plain)->model(), "Transpose"), 2u);  // CPU graphs stay as written

  const std::vector<int64_t> dims = {2, 3, 5, 7};
  const auto got = RunBytes(**rewritten, "x", DataType::kFloat32, dims);
  ASSERT_EQ(got.size(), 2u * 15 * 7 * 4);
  EXPECT_EQ(got, RunBytes(**kept, "x", DataType::kFloat32, dims));
  EXPECT_EQ(got, RunBytes(**plain, "x", DataType::kFloat32, dims));
}

// The exported 2-layer ViT (dynamic batch N, float16): after the NHWC
// layout pass its patch embedding reads ConvNhwc -> Transpose(0,3,1,2) ->
// Reshape(target from Shape arithmetic) -> Transpose(0,2,1).
ir::Model TinyVit() {
  auto m = onnx::ReadModel(std::string(VIGIL_TEST_MODELS_DIR) + "/vit_tiny/vit_tiny_fp16.onnx");
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : ir::Model{};
}

TEST(TransposeCancel, TheTinyVitPatchEmbeddingLosesBothTransposes) {
  auto rewritten = Session::Create(TinyVit(), Options(/*device=*/true));
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  Result<std::unique_ptr<Session>> kept = InternalError("not created");
  {
    CancelSwitch off("0");
    kept = Session::Create(TinyVit(), Options(/*device=*/true));
  }
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  const ir::Model& with = (*rewritten)->model();
  const ir::Model& without = (*kept)->model();
  EXPECT_EQ(CountTransposes(without, {0, 3, 1, 2}), 1u) << "the layout pass's to_nchw is there to cancel";
  EXPECT_EQ(CountTransposes(with, {0, 3, 1, 2}), 0u);
  EXPECT_EQ(CountTransposes(with, {0, 2, 1}) + 1, CountTransposes(without, {0, 2, 1}));
  EXPECT_LE(with.graph.nodes.size() + 2, without.graph.nodes.size());

  // Pure data movement: bitwise the same logits.
  const std::vector<int64_t> dims = {3, 3, 32, 32};
  const auto got = RunBytes(**rewritten, "input_0", DataType::kFloat16, dims);
  ASSERT_EQ(got.size(), 3u * 10 * 2);
  EXPECT_EQ(got, RunBytes(**kept, "input_0", DataType::kFloat16, dims));
}

}  // namespace
}  // namespace vigil::runtime
