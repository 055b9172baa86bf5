// The session's layout choice (SessionOptions::conv_layout) end to end,
// without a GPU: a fake device backend runs every node with the CPU kernels
// on "device" tensors that live in host memory, so the selection, the NHWC
// pass, the folding of the weight transposes and the run can all be checked.
#include "runtime/conv_layout.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/fast/dnnl_library.h"
#include "vigil/float16.h"
#include "runtime/session.h"
#include "fake_device_backend.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using namespace vigil::ir::testing;
using ir::DataType;

using testing::FakeDeviceBackend;

ir::Tensor RandomHalf(std::string name, std::vector<int64_t> dims, uint32_t seed, DataType dtype = DataType::kFloat16) {
  ir::Tensor t = Initializer(std::move(name), dtype, std::move(dims));
  uint64_t n = *t.ElementCount();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  size_t size = dtype == DataType::kFloat32 ? 4 : 2;
  auto data = std::make_shared<std::vector<uint8_t>>(n * size);
  for (uint64_t i = 0; i < n; ++i) {
    float v = u(rng);
    if (size == 4) {
      std::memcpy(data->data() + i * 4, &v, 4);
    } else {
      uint16_t h = FloatToFloat16(v);
      std::memcpy(data->data() + i * 2, &h, 2);
    }
  }
  t.storage = ir::Tensor::Storage::kTypedDecoded;
  t.bytes = {data->data(), data->size()};
  t.keep_alive = data;
  return t;
}

ir::Attribute Ints(std::string name, std::vector<int64_t> v) {
  ir::Attribute a;
  a.name = std::move(name);
  a.type = ir::AttributeType::kInts;
  a.ints = std::move(v);
  return a;
}

// x [2,3,9,8] -> Conv(5x3 kernel, bias) -> Relu -> Conv(stride 2) ->
// Add(per-channel [8,1,1]) -> Relu -> GlobalAveragePool -> y [2,8,1,1]
ir::Model SmallCnn(DataType dtype = DataType::kFloat16) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  m.graph.name = "cnn";
  m.graph.inputs = {TensorValue("x", dtype, {2, 3, 9, 8})};
  m.graph.outputs = {TensorValue("y", dtype, {2, 8, 1, 1})};
  m.graph.initializers = {RandomHalf("w0", {8, 3, 5, 3}, 1, dtype), RandomHalf("b0", {8}, 2, dtype),
                          RandomHalf("w1", {8, 8, 3, 3}, 3, dtype), RandomHalf("k", {8, 1, 1}, 4, dtype)};
  ir::Node c0 = MakeNode("Conv", {"x", "w0", "b0"}, {"c0"}, "conv0");
  c0.attributes = {Ints("pads", {2, 1, 2, 1})};
  ir::Node c1 = MakeNode("Conv", {"r0", "w1"}, {"c1"}, "conv1");
  c1.attributes = {Ints("pads", {1, 1, 1, 1}), Ints("strides", {2, 2})};
  m.graph.nodes = {c0, MakeNode("Relu", {"c0"}, {"r0"}, "relu0"), c1, MakeNode("Add", {"c1", "k"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"r1"}, "relu1"), MakeNode("GlobalAveragePool", {"r1"}, {"y"}, "gap")};
  return m;
}

SessionOptions Options(ConvLayout layout, bool device = true) {
  SessionOptions o;
  if (device) o.backends.push_back(std::make_shared<FakeDeviceBackend>());
  o.backends.push_back(cpu::MakeCpuBackend());
  o.conv_layout = layout;
  return o;
}

size_t Count(const ir::Model& m, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

// Convolutions in the model's layout: Conv, or FusedConv where a device
// session fused one with its Add and activation (ir/fuse_conv_epilogue.h).
size_t NchwConvs(const ir::Model& m) { return Count(m, "Conv") + Count(m, "FusedConv"); }

std::vector<float> RunOn(const Session& s, DataType dtype) {
  std::vector<float> x(2 * 3 * 9 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * i);
  std::vector<uint16_t> h;
  for (float v : x) h.push_back(FloatToFloat16(v));
  const void* data = dtype == DataType::kFloat32 ? static_cast<const void*>(x.data()) : h.data();
  size_t bytes = dtype == DataType::kFloat32 ? x.size() * 4 : h.size() * 2;
  auto out = s.Run({{"x", dtype, {2, 3, 9, 8}, data, bytes, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> y;
  if (!out.ok()) return y;
  const Tensor& t = (*out)[0].tensor;
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 8, 1, 1}));
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    y.push_back(dtype == DataType::kFloat32 ? t.data<float>()[i] : Float16ToFloat(t.data<uint16_t>()[i]));
  }
  return y;
}

// The float16 output of session `nhwc` against the CPU's on `model` as
// given (NCHW): relative L2 error at most 1e-3.
void ExpectMatchesTheCpu(const Session& nhwc, ir::Model model) {
  auto plain = Session::Create(std::move(model), Options(ConvLayout::kAsModel, /*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  std::vector<float> got = RunOn(nhwc, DataType::kFloat16), want = RunOn(**plain, DataType::kFloat16);
  ASSERT_EQ(got.size(), want.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    err += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  EXPECT_LE(std::sqrt(err / norm), 1e-3);
}

TEST(ConvLayout, HalfPrecisionConvsRunNhwcOnTheDevice) {
  auto nhwc = Session::Create(SmallCnn(), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  EXPECT_EQ(Count(m, "ConvNhwc"), 2u);
  EXPECT_EQ(Count(m, "Conv"), 0u);
  EXPECT_EQ(Count(m, "Transpose"), 2u);  // x in, and y out behind the pool
  EXPECT_EQ(Count(m, "Relu"), 1u);       // relu0 fused into conv0; relu1 follows the Add
  // The device runs the pool channels-last, so it moved into the NHWC region.
  EXPECT_EQ(Count(m, "GlobalAveragePoolNhwc"), 1u);
  EXPECT_EQ(Count(m, "GlobalAveragePool"), 0u);
  // The weight transposes were folded into KRSC initializers at load.
  std::map<std::string, std::vector<int64_t>> initializers;
  for (const ir::Tensor& t : m.graph.initializers) initializers[t.name] = t.dims;
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "Transpose") {
      EXPECT_FALSE(initializers.count(n.inputs[0])) << n.inputs[0];
    }
    if (n.op_type != "ConvNhwc") continue;
    ASSERT_TRUE(initializers.count(n.inputs[1])) << n.inputs[1] << " is not an initializer";
    if (n.name == "conv0") {
      EXPECT_EQ(initializers[n.inputs[1]], (std::vector<int64_t>{8, 5, 3, 3}));
    }
  }
  for (const NodePlacement& p : (*nhwc)->placement()) EXPECT_EQ(p.backend, "fakegpu") << p.node;

  ExpectMatchesTheCpu(**nhwc, SmallCnn());
}

ir::Tensor HalfScalar(std::string name, float v) {
  ir::Tensor t = Initializer(std::move(name), DataType::kFloat16, {});
  auto data = std::make_shared<uint16_t>(FloatToFloat16(v));
  t.storage = ir::Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data.get()), 2};
  t.keep_alive = data;
  return t;
}

// x [2,3,9,8] -> Conv+Relu (r0) -> Conv -> Add(r0, .) -> Relu -> Conv(1x1,
// bias) -> Clip(0, 6) -> GlobalAveragePool -> y [2,8,1,1]: a residual block
// and a MobileNet ReLU6.
ir::Model ResidualCnn() {
  ir::Model m = SmallCnn();
  m.graph.initializers = {RandomHalf("w0", {8, 3, 3, 3}, 1), RandomHalf("w1", {8, 8, 3, 3}, 3),
                          RandomHalf("w2", {8, 8, 1, 1}, 5), RandomHalf("b2", {8}, 6), HalfScalar("lo", 0),
                          HalfScalar("hi", 6)};
  ir::Node c0 = MakeNode("Conv", {"x", "w0"}, {"c0"}, "conv0");
  c0.attributes = {Ints("pads", {1, 1, 1, 1})};
  ir::Node c1 = MakeNode("Conv", {"r0", "w1"}, {"c1"}, "conv1");
  c1.attributes = {Ints("pads", {1, 1, 1, 1})};
  m.graph.nodes = {c0,
                   MakeNode("Relu", {"c0"}, {"r0"}, "relu0"),
                   c1,
                   MakeNode("Add", {"r0", "c1"}, {"s"}, "add"),
                   MakeNode("Relu", {"s"}, {"r1"}, "relu1"),
                   MakeNode("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2"),
                   MakeNode("Clip", {"c2", "lo", "hi"}, {"d"}, "relu6"),
                   MakeNode("GlobalAveragePool", {"d"}, {"y"}, "gap")};
  return m;
}

TEST(ConvLayout, ResidualAndRelu6FuseAndMatchTheCpu) {
  auto nhwc = Session::Create(ResidualCnn(), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  EXPECT_EQ(Count(m, "ConvNhwc"), 3u);
  EXPECT_EQ(Count(m, "Add"), 0u);
  EXPECT_EQ(Count(m, "Relu"), 0u);
  EXPECT_EQ(Count(m, "Clip"), 0u);
  size_t with_z = 0;
  for (const ir::Node& n : m.graph.nodes) with_z += n.op_type == "ConvNhwc" && n.inputs.size() == 4;
  EXPECT_EQ(with_z, 1u);

  ExpectMatchesTheCpu(**nhwc, ResidualCnn());
}

// x [2,3,9,8] -> Conv+Relu (e1) -> Conv stride 2 (e2) -> Resize linear to
// 9x8 (up) -> Concat(up, e1, Sin(x)) -> Conv+Relu -> GlobalAveragePool -> y
// [2,8,1,1]: a UNet level, with a skip operand (Sin(x)) from outside the
// channels-last region.
ir::Model UnetLevel(DataType dtype = DataType::kFloat16) {
  ir::Model m = SmallCnn(dtype);
  m.graph.initializers = {RandomHalf("w0", {8, 3, 3, 3}, 1, dtype), RandomHalf("w1", {8, 8, 3, 3}, 3, dtype),
                          RandomHalf("w2", {8, 19, 3, 3}, 5, dtype),
                          OwnedInitializer<int64_t>("sizes", DataType::kInt64, {4}, {2, 8, 9, 8})};
  ir::Node c0 = MakeNode("Conv", {"x", "w0"}, {"c0"}, "conv0");
  c0.attributes = {Ints("pads", {1, 1, 1, 1})};
  ir::Node c1 = MakeNode("Conv", {"e1", "w1"}, {"e2"}, "conv1");
  c1.attributes = {Ints("pads", {1, 1, 1, 1}), Ints("strides", {2, 2})};
  ir::Node resize = MakeNode("Resize", {"e2", "", "", "sizes"}, {"up"}, "resize");
  resize.attributes.push_back(ir::StringAttribute("mode", "linear"));
  ir::Node concat = MakeNode("Concat", {"up", "e1", "sx"}, {"cat"}, "concat");
  concat.attributes = {IntAttr("axis", 1)};
  ir::Node c2 = MakeNode("Conv", {"cat", "w2"}, {"c2"}, "conv2");
  c2.attributes = {Ints("pads", {1, 1, 1, 1})};
  m.graph.nodes = {c0,     MakeNode("Relu", {"c0"}, {"e1"}, "relu0"), c1, resize, MakeNode("Sin", {"x"}, {"sx"}, "sin"),
                   concat, c2, MakeNode("Relu", {"c2"}, {"r2"}, "relu2"), MakeNode("GlobalAveragePool", {"r2"}, {"y"}, "gap")};
  return m;
}

TEST(ConvLayout, UnetLevelRunsChannelsLastThroughResizeAndConcat) {
  auto nhwc = Session::Create(UnetLevel(), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  EXPECT_EQ(Count(m, "ConvNhwc"), 3u);
  // In: x for conv0, and Sin(x) for the Concat; out: y behind the pool.
  EXPECT_EQ(Count(m, "Transpose"), 3u);
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "Concat") {
      ASSERT_NE(n.FindAttribute("axis"), nullptr);
      EXPECT_EQ(n.FindAttribute("axis")->i, 3);
    }
    if (n.op_type == "Resize") {
      ASSERT_EQ(n.inputs.size(), 4u);
      for (const ir::Tensor& t : m.graph.initializers) {
        if (t.name != n.inputs[3]) continue;
        std::vector<int64_t> sizes(4);
        ASSERT_EQ(t.bytes.size(), 32u);
        std::memcpy(sizes.data(), t.bytes.data(), 32);
        EXPECT_EQ(sizes, (std::vector<int64_t>{2, 9, 8, 8}));
      }
    }
  }
  ExpectMatchesTheCpu(**nhwc, UnetLevel());
}

TEST(ConvLayout, AsModelKeepsEveryConvolutionInItsLayout) {
  auto s = Session::Create(SmallCnn(), Options(ConvLayout::kAsModel));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(NchwConvs((*s)->model()), 2u);
  EXPECT_EQ(Count((*s)->model(), "ConvNhwc"), 0u);
  EXPECT_EQ(Count((*s)->model(), "Transpose"), 0u);
}

// Float32 stays NCHW unless SessionOptions::nhwc_float32 says otherwise (the
// library sets it; the runtime default is off).
TEST(ConvLayout, Float32AndHostOnlySessionsStayNchw) {
  auto f32 = Session::Create(SmallCnn(DataType::kFloat32), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(f32.ok()) << f32.status().ToString();
  EXPECT_EQ(Count((*f32)->model(), "ConvNhwc"), 0u);
  RunOn(**f32, DataType::kFloat32);
  auto host = Session::Create(SmallCnn(), Options(ConvLayout::kNhwcWhereFaster, /*device=*/false));
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(Count((*host)->model(), "ConvNhwc"), 0u);
}

// A CPU session (no device) with nhwc_float32, as the library makes one:
// where oneDNN loads, its float32 convolutions, their Relu and the pool run
// channels-last, within float32 roundings of the NCHW session; a backend on
// reference kernels, or a float16 model, keeps the graph as it is.
// The float32 SmallCnn output of `nhwc` against a plain NCHW CPU session's:
// within float32 roundings of a reordered sum, and no NaN.
void ExpectFloat32MatchesTheCpu(const Session& nhwc) {
  auto plain = Session::Create(SmallCnn(DataType::kFloat32), Options(ConvLayout::kAsModel, /*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  std::vector<float> got = RunOn(nhwc, DataType::kFloat32), want = RunOn(**plain, DataType::kFloat32);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << i;
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
  }
}

// A CPU session runs the UNet level's Resize and Concat channels-last too
// where oneDNN takes its convolutions (CpuBackend::PrefersChannelsLast):
// within float32 roundings of the NCHW session, no NaN.
TEST(ConvLayout, CpuSessionsRunResizeAndConcatNhwcWhereOneDnnLoads) {
  SessionOptions o = Options(ConvLayout::kNhwcWhereFaster, /*device=*/false);
  o.nhwc_float32 = true;
  auto nhwc = Session::Create(UnetLevel(DataType::kFloat32), std::move(o));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  if (!cpu::fast::DnnlLoaded()) {
    EXPECT_EQ(Count(m, "ConvNhwc"), 0u) << cpu::fast::DnnlDescription();
    return;
  }
  EXPECT_EQ(Count(m, "ConvNhwc"), 3u);
  EXPECT_EQ(Count(m, "Transpose"), 3u);  // x, Sin(x) in; y out
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type == "Concat") {
      EXPECT_EQ(n.FindAttribute("axis")->i, 3);
    }
  }
  auto plain = Session::Create(UnetLevel(DataType::kFloat32), Options(ConvLayout::kAsModel, /*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  std::vector<float> got = RunOn(**nhwc, DataType::kFloat32), want = RunOn(**plain, DataType::kFloat32);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << i;
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
  }
}

TEST(ConvLayout, CpuSessionsRunFloat32ConvsNhwcWhereOneDnnLoads) {
  SessionOptions o = Options(ConvLayout::kNhwcWhereFaster, /*device=*/false);
  o.nhwc_float32 = true;
  auto nhwc = Session::Create(SmallCnn(DataType::kFloat32), std::move(o));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  const size_t converted = cpu::fast::DnnlLoaded() ? 2 : 0;
  EXPECT_EQ(Count(m, "ConvNhwc"), converted) << cpu::fast::DnnlDescription();
  EXPECT_EQ(Count(m, "GlobalAveragePoolNhwc"), converted / 2);
  EXPECT_EQ(Count(m, "Relu"), 2 - converted / 2);  // relu0 fused into conv0
  ExpectFloat32MatchesTheCpu(**nhwc);

  SessionOptions ref;
  ref.backends.push_back(cpu::MakeCpuBackend(cpu::CpuOptions{0, /*reference_kernels=*/true}));
  ref.conv_layout = ConvLayout::kNhwcWhereFaster;
  ref.nhwc_float32 = true;
  auto reference = Session::Create(SmallCnn(DataType::kFloat32), std::move(ref));
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  EXPECT_EQ(Count((*reference)->model(), "ConvNhwc"), 0u);
  SessionOptions half = Options(ConvLayout::kNhwcWhereFaster, /*device=*/false);
  half.nhwc_float32 = true;
  auto f16 = Session::Create(SmallCnn(), std::move(half));
  ASSERT_TRUE(f16.ok()) << f16.status().ToString();
  EXPECT_EQ(Count((*f16)->model(), "ConvNhwc"), 0u);
}

// Where the session allows TF32 (nhwc_float32), float32 convolutions move
// channels-last as float16 ones do, and the result is the NCHW session's.
TEST(ConvLayout, Float32ConvsRunNhwcWhenTheSessionAllowsTf32) {
  SessionOptions o = Options(ConvLayout::kNhwcWhereFaster);
  o.nhwc_float32 = true;
  auto nhwc = Session::Create(SmallCnn(DataType::kFloat32), std::move(o));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  EXPECT_EQ(Count(m, "ConvNhwc"), 2u);
  EXPECT_EQ(Count(m, "Conv"), 0u);
  EXPECT_EQ(Count(m, "GlobalAveragePoolNhwc"), 1u);
  ExpectFloat32MatchesTheCpu(**nhwc);
}

// A device's float32 convolutions move together, weighed by multiply-adds:
// in SmallCnn conv0 carries 25,920 per image (69%), conv1 11,520 (31%).
// Where the device prefers channels-last only for conv1, both stay NCHW;
// only for conv0, both move (conv1 too, so that no transpose separates
// them). Float16 convolutions are still taken one by one.
SessionOptions PreferringOnly(const std::string& node_name, bool float32) {
  auto device = std::make_shared<FakeDeviceBackend>();
  device->prefers = [node_name](const ir::Node& n) { return n.name == node_name; };
  SessionOptions o;
  o.backends = {device, cpu::MakeCpuBackend()};
  o.conv_layout = ConvLayout::kNhwcWhereFaster;
  o.nhwc_float32 = float32;
  return o;
}

TEST(ConvLayout, Float32ConvsMoveTogetherByTheShareTheDevicePrefers) {
  auto minority = Session::Create(SmallCnn(DataType::kFloat32), PreferringOnly("conv1", true));
  ASSERT_TRUE(minority.ok()) << minority.status().ToString();
  EXPECT_EQ(Count((*minority)->model(), "ConvNhwc"), 0u);
  EXPECT_EQ(NchwConvs((*minority)->model()), 2u);
  EXPECT_EQ(Count((*minority)->model(), "Transpose"), 0u);
  EXPECT_EQ((*minority)->layout_note(),
            "2 float32 convolutions stay NCHW: fakegpu prefers channels-last for 31% of their multiply-adds, "
            "under half");
  ExpectFloat32MatchesTheCpu(**minority);

  auto majority = Session::Create(SmallCnn(DataType::kFloat32), PreferringOnly("conv0", true));
  ASSERT_TRUE(majority.ok()) << majority.status().ToString();
  EXPECT_EQ(Count((*majority)->model(), "ConvNhwc"), 2u);
  EXPECT_EQ(NchwConvs((*majority)->model()), 0u);
  EXPECT_EQ((*majority)->layout_note(),
            "2 float32 convolutions run channels-last (fakegpu prefers it for 69% of their multiply-adds)");
  ExpectFloat32MatchesTheCpu(**majority);

  auto half = Session::Create(SmallCnn(), PreferringOnly("conv1", true));
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  EXPECT_EQ(Count((*half)->model(), "ConvNhwc"), 1u);
  EXPECT_EQ(NchwConvs((*half)->model()), 1u);
  EXPECT_EQ((*half)->layout_note(), "");
  ExpectMatchesTheCpu(**half, SmallCnn());
}

// Where the spatial sizes are unknown there is nothing to weigh: the
// device's float32 convolutions move, as the ones it runs.
TEST(ConvLayout, Float32ConvsOfUnknownSizeMove) {
  ir::Model m = SmallCnn(DataType::kFloat32);
  m.graph.inputs[0].type.shape.dims[2] = ir::Dim::Symbolic("H");
  m.graph.inputs[0].type.shape.dims[3] = ir::Dim::Symbolic("W");
  auto s = Session::Create(std::move(m), PreferringOnly("conv1", true));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Count((*s)->model(), "ConvNhwc"), 2u);
  EXPECT_EQ((*s)->layout_note(),
            "2 float32 convolutions run channels-last (fakegpu prefers it for 100% of their multiply-adds)");
  ExpectFloat32MatchesTheCpu(**s);
}

TEST(ConvLayout, GroupedConvsStayNchw) {
  ir::Model m = SmallCnn();
  // conv1 becomes a grouped convolution (2 groups of 4 channels).
  m.graph.initializers[2] = RandomHalf("w1", {8, 4, 3, 3}, 3);
  ir::Attribute group;
  group.name = "group";
  group.type = ir::AttributeType::kInt;
  group.i = 2;
  m.graph.nodes[2].attributes.push_back(group);
  auto s = Session::Create(std::move(m), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Count((*s)->model(), "ConvNhwc"), 1u);
  EXPECT_EQ(Count((*s)->model(), "Conv"), 1u);
  RunOn(**s, DataType::kFloat16);
}

// x [2,3,9,8] -> Conv 1x1 (16 channels, bias) -> Clip(0, 6) -> depthwise
// Conv 3x3 stride 2 (16 * multiplier channels, group 16, bias) -> Clip(0, 6)
// -> Conv 1x1 (8 channels) -> GlobalAveragePool -> y [2,8,1,1]: a MobileNetV2
// inverted-residual body.
ir::Model MobileBlock(int64_t multiplier) {
  ir::Model m = SmallCnn();
  const int64_t mid = 16 * multiplier;
  m.graph.initializers = {RandomHalf("w0", {16, 3, 1, 1}, 1), RandomHalf("b0", {16}, 2),
                          RandomHalf("wd", {mid, 1, 3, 3}, 3), RandomHalf("bd", {mid}, 4),
                          RandomHalf("wp", {8, mid, 1, 1}, 5), HalfScalar("lo", 0), HalfScalar("hi", 6)};
  ir::Node dw = MakeNode("Conv", {"r0", "wd", "bd"}, {"c1"}, "depthwise");
  ir::Attribute group;
  group.name = "group";
  group.type = ir::AttributeType::kInt;
  group.i = 16;
  dw.attributes = {Ints("pads", {1, 1, 1, 1}), Ints("strides", {2, 2}), group};
  m.graph.nodes = {MakeNode("Conv", {"x", "w0", "b0"}, {"c0"}, "expand"),
                   MakeNode("Clip", {"c0", "lo", "hi"}, {"r0"}, "relu6_0"),
                   dw,
                   MakeNode("Clip", {"c1", "lo", "hi"}, {"r1"}, "relu6_1"),
                   MakeNode("Conv", {"r1", "wp"}, {"p"}, "project"),
                   MakeNode("GlobalAveragePool", {"p"}, {"y"}, "gap")};
  return m;
}

// SmallCnn with a ResNet stem's MaxPool (3x3, stride 2, pads 1) between relu0
// and conv1.
ir::Model StemCnn() {
  ir::Model m = SmallCnn();
  ir::Node pool = MakeNode("MaxPool", {"r0"}, {"p"}, "pool");
  pool.attributes = {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}), Ints("pads", {1, 1, 1, 1})};
  m.graph.nodes[2].inputs[0] = "p";
  m.graph.nodes.insert(m.graph.nodes.begin() + 2, pool);
  return m;
}

TEST(ConvLayout, StemMaxPoolAndHeadPoolRunNhwcOnTheDevice) {
  auto nhwc = Session::Create(StemCnn(), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  EXPECT_EQ(Count(m, "MaxPoolNhwc"), 1u);
  EXPECT_EQ(Count(m, "MaxPool"), 0u);
  EXPECT_EQ(Count(m, "GlobalAveragePoolNhwc"), 1u);
  EXPECT_EQ(Count(m, "Transpose"), 2u);  // x in, y out: none around the pools
  for (const NodePlacement& p : (*nhwc)->placement()) EXPECT_EQ(p.backend, "fakegpu") << p.node;
  auto plain = Session::Create(StemCnn(), Options(ConvLayout::kAsModel, /*device=*/false));
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  std::vector<float> got = RunOn(**nhwc, DataType::kFloat16), want = RunOn(**plain, DataType::kFloat16);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-2) << i;
}

TEST(ConvLayout, DepthwiseConvsRunNhwcWithNoTransposesAroundThem) {
  auto nhwc = Session::Create(MobileBlock(1), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(nhwc.ok()) << nhwc.status().ToString();
  const ir::Model& m = (*nhwc)->model();
  EXPECT_EQ(Count(m, "ConvNhwc"), 3u);
  EXPECT_EQ(Count(m, "Conv"), 0u);
  EXPECT_EQ(Count(m, "Clip"), 0u);       // both ReLU6s fused
  EXPECT_EQ(Count(m, "Transpose"), 2u);  // x in, and out in front of GlobalAveragePool
  ExpectMatchesTheCpu(**nhwc, MobileBlock(1));
}

// ConvNhwc nodes of `m` whose `attr` is `value`.
size_t CountWith(const ir::Model& m, const char* attr, const std::string& value) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) {
    const ir::Attribute* a = node.FindAttribute(attr);
    n += node.op_type == "ConvNhwc" && a && a->s == value;
  }
  return n;
}

TEST(ConvLayout, ExpansionRelu6MovesIntoTheDepthwiseInput) {
  auto on = Session::Create(MobileBlock(1), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  const ir::Model& m = (*on)->model();
  EXPECT_EQ(Count(m, "Clip"), 0u);
  // Only the depthwise convolution still carries an activation epilogue; it
  // also clips its input.
  EXPECT_EQ(CountWith(m, "activation", "Relu6"), 1u);
  EXPECT_EQ(CountWith(m, ir::kConvNhwcInputActivation, "Relu6"), 1u);
  for (const ir::Node& n : m.graph.nodes) {
    if (n.name == "expand") {
      EXPECT_EQ(n.FindAttribute("activation"), nullptr);
    }
    if (n.name == "depthwise") {
      EXPECT_NE(n.FindAttribute(ir::kConvNhwcInputActivation), nullptr);
    }
  }
  ExpectMatchesTheCpu(**on, MobileBlock(1));

  // VIGIL_RELU6_PROLOGUE=0 (read at load) keeps the ReLU6 on the expansion convolution.
  setenv("VIGIL_RELU6_PROLOGUE", "0", 1);
  auto off = Session::Create(MobileBlock(1), Options(ConvLayout::kNhwcWhereFaster));
  unsetenv("VIGIL_RELU6_PROLOGUE");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(CountWith((*off)->model(), "activation", "Relu6"), 2u);
  EXPECT_EQ(CountWith((*off)->model(), ir::kConvNhwcInputActivation, "Relu6"), 0u);
  ExpectMatchesTheCpu(**off, MobileBlock(1));
}

TEST(ConvLayout, DepthwiseConvsStayNchwWhenCudnnIsAskedFor) {
  // VIGIL_DEPTHWISE=cudnn (read at load) restores the layout from before the depthwise kernel.
  setenv("VIGIL_DEPTHWISE", "cudnn", 1);
  auto s = Session::Create(MobileBlock(1), Options(ConvLayout::kNhwcWhereFaster));
  unsetenv("VIGIL_DEPTHWISE");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Count((*s)->model(), "ConvNhwc"), 2u);
  EXPECT_EQ(NchwConvs((*s)->model()), 1u);
  EXPECT_EQ(CountWith((*s)->model(), ir::kConvNhwcInputActivation, "Relu6"), 0u);
}

TEST(ConvLayout, DepthwiseWithAChannelMultiplierStaysNchw) {
  // group 16 with 32 output channels: grouped, not depthwise in the kernel's sense.
  auto s = Session::Create(MobileBlock(2), Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Count((*s)->model(), "ConvNhwc"), 2u);
  EXPECT_EQ(NchwConvs((*s)->model()), 1u);
  RunOn(**s, DataType::kFloat16);
}

TEST(ConvLayout, ComputedWeightsStayNchw) {
  // W as a graph input (with an initializer default, so overridable) is not a constant.
  ir::Model m = SmallCnn();
  m.graph.inputs.push_back(TensorValue("w1", DataType::kFloat16, {8, 8, 3, 3}));
  auto s = Session::Create(m, Options(ConvLayout::kNhwcWhereFaster));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(Count((*s)->model(), "ConvNhwc"), 1u);
  EXPECT_EQ(Count((*s)->model(), "Conv"), 1u);
}

}  // namespace
}  // namespace vigil::runtime
