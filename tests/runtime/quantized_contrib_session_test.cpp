// A QOperator-format chain of com.microsoft ops (QLinearAdd, QLinearSigmoid,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat) run as a
// session: the domain's opset import is looked up, shape inference carries a
// symbolic batch dim through, scales and zero points come from initializers,
// and the output equals the CPU kernels run one by one.
#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_test_util.h"
#include "runtime/session.h"
#include "../ir/graph_builder.h"

namespace vigil::runtime {
namespace {

using ir::DataType;
namespace it = vigil::ir::testing;

ir::Node Ms(std::string op, std::vector<std::string> in, std::string out, std::vector<ir::Attribute> attrs = {}) {
  ir::Node n = it::MakeNode(std::move(op), std::move(in), {std::move(out)}, "n_" + out);
  n.domain = "com.microsoft";
  n.attributes = std::move(attrs);
  return n;
}

// x uint8 [N,13,5,5] -> a = x (+) x -> s = sigmoid(a) -> p = avgpool3x3(s)
// -> g = globalavgpool(p) -> y = concat(g, g', axis 1) : [N,26,1,1].
ir::Model QOperatorModel(bool import_ms) {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 13}};
  if (import_ms) m.opset_imports.push_back({"com.microsoft", 1});
  ir::ValueInfo x = it::TensorValue("x", DataType::kUint8, {});
  x.type.shape.dims = {ir::Dim::Symbolic("N"), ir::Dim::Known(13), ir::Dim::Known(5), ir::Dim::Known(5)};
  m.graph.inputs = {x};
  m.graph.outputs = {it::TensorValue("y", DataType::kUint8, {})};
  m.graph.outputs[0].type.shape.rank_known = false;
  auto scale = [&](const char* name, float v) {
    m.graph.initializers.push_back(it::OwnedInitializer(name, DataType::kFloat32, {}, std::vector<float>{v}));
  };
  auto zp = [&](const char* name, uint8_t v) {
    m.graph.initializers.push_back(it::OwnedInitializer(name, DataType::kUint8, {}, std::vector<uint8_t>{v}));
  };
  scale("sx", 0.05f), zp("zx", 128), scale("sa", 0.07f), zp("za", 120), scale("ss", 1.0f / 256), zp("zs", 0);
  scale("sp", 0.003f), zp("zp", 3), scale("sg", 0.0031f), zp("zg", 7), scale("sy", 0.004f), zp("zy", 11);
  m.graph.nodes = {
      Ms("QLinearAdd", {"x", "sx", "zx", "x", "sx", "zx", "sa", "za"}, "a"),
      Ms("QLinearSigmoid", {"a", "sa", "za", "ss", "zs"}, "s"),
      Ms("QLinearAveragePool", {"s", "ss", "zs", "sp", "zp"}, "p",
         {it::IntsAttr("kernel_shape", {3, 3}), it::IntsAttr("pads", {1, 1, 1, 1}), it::IntAttr("count_include_pad", 1)}),
      Ms("QLinearGlobalAveragePool", {"p", "sp", "zp", "sg", "zg"}, "g"),
      Ms("QLinearConcat", {"sy", "zy", "g", "sg", "zg", "g", "sy", "zy"}, "y", {it::IntAttr("axis", 1)}),
  };
  return m;
}

TEST(QOperatorSession, ComMicrosoftChainRunsLikeItsKernels) {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  auto session = Session::Create(QOperatorModel(true), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::vector<uint8_t> x(2 * 13 * 5 * 5);
  std::mt19937 rng(5);
  for (uint8_t& v : x) v = static_cast<uint8_t>(rng() & 0xFF);
  InputBinding in{"x", DataType::kUint8, {2, 13, 5, 5}, x.data(), x.size(), ""};
  auto out = (*session)->Run({in});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const Tensor& y = (*out)[0].tensor;
  EXPECT_EQ(y.dtype(), DataType::kUint8);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 26, 1, 1}));

  // The same chain, kernel by kernel.
  const ir::Model m = QOperatorModel(true);
  std::map<std::string, Tensor> values;
  values["x"] = cpu::testing::MakeTensor(DataType::kUint8, {2, 13, 5, 5}, x);
  for (const ir::Tensor& t : m.graph.initializers) {
    std::vector<uint8_t> bytes(t.bytes.begin(), t.bytes.end());
    values[t.name] = cpu::testing::MakeTensor(t.dtype, {}, bytes);
  }
  for (const ir::Node& n : m.graph.nodes) {
    std::vector<const Tensor*> ins;
    for (const std::string& name : n.inputs) ins.push_back(&values.at(name));
    auto r = cpu::testing::RunKernel(n, 1, ins);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    values[n.outputs[0]] = std::move(r.value()[0]);
  }
  const Tensor& want = values.at("y");
  ASSERT_EQ(want.byte_size(), y.byte_size());
  EXPECT_EQ(std::memcmp(want.raw_data(), y.raw_data(), y.byte_size()), 0);
  // Not a constant output: the first 13 channels (g, copied) vary.
  const auto* g = static_cast<const uint8_t*>(y.raw_data());
  EXPECT_NE(*std::min_element(g, g + 13), *std::max_element(g, g + 13));
}

TEST(QOperatorSession, WithoutTheDomainImportTheErrorNamesIt) {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  auto session = Session::Create(QOperatorModel(false), o);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.status().ToString().find("uses domain 'com.microsoft', which the model does not import"),
            std::string::npos) << session.status().ToString();
}

}  // namespace
}  // namespace vigil::runtime
