// A QOperator-format chain of com.microsoft ops (QLinearAdd, QLinearSigmoid,
// QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat), and
// QLinearSoftmax beside DynamicQuantizeLSTM, run as sessions: the domain's
// opset import is looked up, shape inference carries symbolic dims through,
// scales and zero points come from initializers, and the outputs equal the
// CPU kernels run one by one.
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

// q uint8 [N,7] -> QLinearSoftmax -> s; x float [T,N,5] -> DynamicQuantizeLSTM
// (bidirectional, hidden 3, int8 W/R per column) -> Y [T,2,N,3], Y_h.
ir::Model SoftmaxLstmModel() {
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 13}, {"com.microsoft", 1}};
  ir::ValueInfo q = it::TensorValue("q", DataType::kUint8, {});
  q.type.shape.dims = {ir::Dim::Symbolic("N"), ir::Dim::Known(7)};
  ir::ValueInfo x = it::TensorValue("x", DataType::kFloat32, {});
  x.type.shape.dims = {ir::Dim::Symbolic("T"), ir::Dim::Symbolic("N"), ir::Dim::Known(5)};
  m.graph.inputs = {q, x};
  m.graph.outputs = {it::TensorValue("s", DataType::kUint8, {}), it::TensorValue("y", DataType::kFloat32, {}),
                     it::TensorValue("yh", DataType::kFloat32, {})};
  for (ir::ValueInfo& o : m.graph.outputs) o.type.shape.rank_known = false;
  std::mt19937 rng(11);
  auto ints = [&](size_t n) {
    std::vector<int8_t> v(n);
    for (int8_t& e : v) e = static_cast<int8_t>(rng() & 0xFF);
    return v;
  };
  auto floats = [&](size_t n, float lo, float hi) {
    std::vector<float> v(n);
    for (float& e : v) e = std::uniform_real_distribution<float>(lo, hi)(rng);
    return v;
  };
  auto& init = m.graph.initializers;
  init.push_back(it::OwnedInitializer("sx", DataType::kFloat32, {}, std::vector<float>{0.07f}));
  init.push_back(it::OwnedInitializer("zx", DataType::kUint8, {}, std::vector<uint8_t>{100}));
  init.push_back(it::OwnedInitializer("ss", DataType::kFloat32, {}, std::vector<float>{1.0f / 256}));
  init.push_back(it::OwnedInitializer("zs", DataType::kUint8, {}, std::vector<uint8_t>{0}));
  init.push_back(it::OwnedInitializer("w", DataType::kInt8, {2, 5, 12}, ints(120)));
  init.push_back(it::OwnedInitializer("r", DataType::kInt8, {2, 3, 12}, ints(72)));
  init.push_back(it::OwnedInitializer("b", DataType::kFloat32, {2, 24}, floats(48, -0.5f, 0.5f)));
  init.push_back(it::OwnedInitializer("ws", DataType::kFloat32, {2, 12}, floats(24, 0.002f, 0.02f)));
  init.push_back(it::OwnedInitializer("wz", DataType::kInt8, {2, 12}, std::vector<int8_t>(24, 0)));
  init.push_back(it::OwnedInitializer("rs", DataType::kFloat32, {2}, floats(2, 0.002f, 0.02f)));
  init.push_back(it::OwnedInitializer("rz", DataType::kInt8, {2}, std::vector<int8_t>(2, 0)));
  ir::Node lstm = Ms("DynamicQuantizeLSTM", {"x", "w", "r", "b", "", "", "", "", "ws", "wz", "rs", "rz"}, "y",
                     {it::IntAttr("hidden_size", 3), cpu::testing::StringAttr("direction", "bidirectional")});
  lstm.outputs = {"y", "yh"};
  m.graph.nodes = {Ms("QLinearSoftmax", {"q", "sx", "zx", "ss", "zs"}, "s", {it::IntAttr("opset", 13)}), lstm};
  return m;
}

TEST(QOperatorSession, SoftmaxAndDynamicQuantizeLstmRunLikeTheirKernels) {
  SessionOptions o;
  o.backends = {cpu::MakeCpuBackend()};
  auto session = Session::Create(SoftmaxLstmModel(), o);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  std::mt19937 rng(3);
  std::vector<uint8_t> q(3 * 7);
  for (uint8_t& v : q) v = static_cast<uint8_t>(rng() & 0xFF);
  std::vector<float> x(4 * 3 * 5);
  for (float& v : x) v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
  InputBinding bq{"q", DataType::kUint8, {3, 7}, q.data(), q.size(), ""};
  InputBinding bx{"x", DataType::kFloat32, {4, 3, 5}, x.data(), x.size() * sizeof(float), ""};
  auto out = (*session)->Run({bq, bx});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 3u);
  EXPECT_EQ((*out)[0].tensor.shape(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ((*out)[1].tensor.shape(), (std::vector<int64_t>{4, 2, 3, 3}));
  EXPECT_EQ((*out)[2].tensor.shape(), (std::vector<int64_t>{2, 3, 3}));

  // The same nodes, kernel by kernel.
  const ir::Model m = SoftmaxLstmModel();
  std::map<std::string, Tensor> typed;
  for (const ir::Tensor& t : m.graph.initializers) {
    const std::vector<uint8_t> bytes(t.bytes.begin(), t.bytes.end());
    if (t.dtype == DataType::kFloat32) {
      std::vector<float> f(bytes.size() / sizeof(float));
      std::memcpy(f.data(), bytes.data(), bytes.size());
      typed[t.name] = cpu::testing::MakeTensor(t.dtype, t.dims, f);
    } else if (t.dtype == DataType::kInt8) {
      typed[t.name] = cpu::testing::MakeTensor(t.dtype, t.dims, std::vector<int8_t>(bytes.begin(), bytes.end()));
    } else {
      typed[t.name] = cpu::testing::MakeTensor(t.dtype, t.dims, bytes);
    }
  }
  typed["q"] = cpu::testing::MakeTensor(DataType::kUint8, {3, 7}, q);
  typed["x"] = cpu::testing::MakeTensor(DataType::kFloat32, {4, 3, 5}, x);
  for (size_t k = 0; k < m.graph.nodes.size(); ++k) {
    const ir::Node& n = m.graph.nodes[k];
    std::vector<const Tensor*> ins;
    for (const std::string& name : n.inputs) ins.push_back(name.empty() ? nullptr : &typed.at(name));
    auto r = cpu::testing::RunKernel(n, 1, ins);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Tensor& want = r.value()[i];
      const Tensor& got = (*out)[k == 0 ? 0 : 1 + i].tensor;
      ASSERT_EQ(want.byte_size(), got.byte_size()) << n.outputs[i];
      EXPECT_EQ(std::memcmp(want.raw_data(), got.raw_data(), got.byte_size()), 0) << n.outputs[i];
    }
  }
  // Not constant outputs.
  const auto* s = static_cast<const uint8_t*>((*out)[0].tensor.raw_data());
  EXPECT_NE(*std::min_element(s, s + 7), *std::max_element(s, s + 7));
  const auto* y = static_cast<const float*>((*out)[1].tensor.raw_data());
  EXPECT_NE(*std::min_element(y, y + 72), *std::max_element(y, y + 72));
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
