// A small model in QDQ form, as onnxruntime.quantization.quantize_static
// writes one with symmetric int8 activations and per-channel int8 weights:
//   x -> Q -> DQ -> Conv 3x3 (W, B int32 through DQ) -> Q -> DQ -> Relu -> Q
//     -> DQ -> Conv 1x1 (B float) -> Q -> DQ -> Add(., the Relu's DQ) -> Q
//     -> DQ -> Relu -> Q -> DQ -> MaxPool 2x2/2 -> Q -> DQ -> y
// every chain the QDQ fusion pass (ir/fuse_qdq.h) rewrites: two QConv (the
// first and the Add with Relu), a QAdd with Relu, an int8 MaxPool. Seeded
// random weights; x [n, c_in, h, w] float32, y float32.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "../ir/graph_builder.h"
#include "ir/graph.h"

namespace vigil::testing {

struct QdqModelOptions {
  int64_t n = 2, c_in = 4, c_mid = 12, h = 13, w = 11;
  int64_t x_zero_point = 0;  // of the input's Q/DQ (0: symmetric)
  ir::DataType activation = ir::DataType::kInt8;  // of every Q/DQ on activations
  bool weight_axis = true;  // the weights' DequantizeLinear says axis 0 (without it: the default, 1)
  uint32_t seed = 7;
};

inline ir::Model QdqModel(const QdqModelOptions& o) {
  using namespace ir::testing;
  using ir::DataType;
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  g.inputs = {TensorValue("x", DataType::kFloat32, {o.n, o.c_in, o.h, o.w})};
  g.outputs = {TensorValue("y", DataType::kFloat32, {})};
  g.outputs[0].has_type = false;
  std::mt19937 rng(o.seed);
  const DataType act = o.activation;
  auto scalar = [&](const std::string& name, float v) {
    g.initializers.push_back(OwnedInitializer<float>(name, DataType::kFloat32, {}, {v}));
  };
  auto zero = [&](const std::string& name, int64_t v) {
    if (act == DataType::kInt8) {
      g.initializers.push_back(OwnedInitializer<int8_t>(name, act, {}, {static_cast<int8_t>(v)}));
    } else {
      g.initializers.push_back(OwnedInitializer<uint8_t>(name, act, {}, {static_cast<uint8_t>(v + 128)}));
    }
  };
  // An activation's Q (from float `v`) and DQ, with scale `s`; returns the DQ's output.
  auto qdq = [&](const std::string& v, const std::string& tag, float s, int64_t zp = 0) {
    scalar(tag + "_s", s);
    zero(tag + "_z", zp);
    g.nodes.push_back(MakeNode("QuantizeLinear", {v, tag + "_s", tag + "_z"}, {tag + "_q"}, tag + "_Q"));
    g.nodes.push_back(MakeNode("DequantizeLinear", {tag + "_q", tag + "_s", tag + "_z"}, {tag + "_dq"}, tag + "_DQ"));
    return tag + "_dq";
  };
  // Per-channel int8 weights [m, c, k, k] through a DQ; returns the DQ's output and the scales.
  auto weights = [&](const std::string& tag, int64_t mo, int64_t c, int64_t k, std::vector<float>& scales) {
    std::uniform_int_distribution<int> q(-127, 127);
    std::vector<int8_t> wq(static_cast<size_t>(mo * c * k * k));
    for (auto& v : wq) v = static_cast<int8_t>(q(rng));
    scales.assign(static_cast<size_t>(mo), 0);
    std::uniform_real_distribution<float> jitter(0.7f, 1.3f);
    for (auto& s : scales) s = jitter(rng) / (127.0f * std::sqrt(static_cast<float>(c * k * k)));
    g.initializers.push_back(OwnedInitializer<int8_t>(tag + "_wq", DataType::kInt8, {mo, c, k, k}, wq));
    g.initializers.push_back(OwnedInitializer<float>(tag + "_ws", DataType::kFloat32, {mo}, scales));
    g.initializers.push_back(
        OwnedInitializer<int8_t>(tag + "_wz", DataType::kInt8, {mo}, std::vector<int8_t>(static_cast<size_t>(mo), 0)));
    ir::Node n = MakeNode("DequantizeLinear", {tag + "_wq", tag + "_ws", tag + "_wz"}, {tag + "_w"}, tag + "_WDQ");
    if (o.weight_axis) n.attributes.push_back(IntAttr("axis", 0));
    g.nodes.push_back(n);
    return tag + "_w";
  };
  const float s_in = 0.05f, s1 = 0.03f, s2 = 0.012f, sa = 0.03f;
  const std::string x0 = qdq("x", "in", s_in, o.x_zero_point);
  // Conv 1: 3x3, pads 1, bias int32 through DQ (scale s_in * w_s).
  std::vector<float> ws1;
  const std::string w1 = weights("c1", o.c_mid, o.c_in, 3, ws1);
  {
    std::uniform_int_distribution<int> b(-3000, 3000);
    std::vector<int32_t> bq(static_cast<size_t>(o.c_mid));
    std::vector<float> bs(ws1.size());
    for (size_t i = 0; i < bq.size(); ++i) {
      bq[i] = b(rng);
      bs[i] = s_in * ws1[i];
    }
    g.initializers.push_back(OwnedInitializer<int32_t>("c1_bq", DataType::kInt32, {o.c_mid}, bq));
    g.initializers.push_back(OwnedInitializer<float>("c1_bs", DataType::kFloat32, {o.c_mid}, bs));
    g.initializers.push_back(OwnedInitializer<int32_t>("c1_bz", DataType::kInt32, {o.c_mid},
                                                       std::vector<int32_t>(static_cast<size_t>(o.c_mid), 0)));
    ir::Node n = MakeNode("DequantizeLinear", {"c1_bq", "c1_bs", "c1_bz"}, {"c1_b"}, "c1_BDQ");
    n.attributes.push_back(IntAttr("axis", 0));
    g.nodes.push_back(n);
  }
  ir::Node conv1 = MakeNode("Conv", {x0, w1, "c1_b"}, {"conv1"}, "conv1");
  conv1.attributes = {IntsAttr("kernel_shape", {3, 3}), IntsAttr("pads", {1, 1, 1, 1})};
  g.nodes.push_back(conv1);
  const std::string d1 = qdq("conv1", "conv1", s1);
  g.nodes.push_back(MakeNode("Relu", {d1}, {"relu1"}, "relu1"));
  const std::string r1 = qdq("relu1", "relu1", s1);
  // Conv 2: 1x1, float bias.
  std::vector<float> ws2;
  const std::string w2 = weights("c2", o.c_mid, o.c_mid, 1, ws2);
  {
    std::uniform_real_distribution<float> b(-0.3f, 0.3f);
    std::vector<float> bias(static_cast<size_t>(o.c_mid));
    for (auto& v : bias) v = b(rng);
    g.initializers.push_back(OwnedInitializer<float>("c2_b", DataType::kFloat32, {o.c_mid}, bias));
  }
  g.nodes.push_back(MakeNode("Conv", {r1, w2, "c2_b"}, {"conv2"}, "conv2"));
  g.nodes.back().attributes = {IntsAttr("kernel_shape", {1, 1})};
  const std::string d2 = qdq("conv2", "conv2", s2);
  g.nodes.push_back(MakeNode("Add", {d2, r1}, {"add"}, "add"));
  const std::string da = qdq("add", "add", sa);
  g.nodes.push_back(MakeNode("Relu", {da}, {"relu2"}, "relu2"));
  const std::string r2 = qdq("relu2", "relu2", sa);
  ir::Node pool = MakeNode("MaxPool", {r2}, {"pool"}, "pool");
  pool.attributes = {IntsAttr("kernel_shape", {2, 2}), IntsAttr("strides", {2, 2})};
  g.nodes.push_back(pool);
  const std::string dp = qdq("pool", "pool", sa);
  g.nodes.push_back(MakeNode("Identity", {dp}, {"y"}, "out"));
  return m;
}

}  // namespace vigil::testing

namespace vigil::testing {

// Linear layers in QDQ form (symmetric int8 activations, int8 weights):
//   matmul: x [2, 5, k] -> Q -> DQ -> MatMul(DQ(W [k, n])) -> Add(b [n]) -> Q
//             -> DQ -> Relu -> Q -> DQ -> h (an output)
//           h -> Transpose -> Q -> DQ -> MatMul(h, .) -> Q -> DQ -> y
//     (the second product reads two activations: it stays in float);
//   gemm:   x [7, k] -> Q -> DQ -> Gemm(transB 1, DQ(W [n, k]), Identity(DQ(int32 C)))
//             -> Q -> DQ -> h (an output), and y = h.
// The weights' scales are per output column, along `weight_axis` of W.
struct QdqLinearOptions {
  bool gemm = false;
  int64_t k = 16, n = 12;
  int64_t weight_axis = -1;  // -1: along N (MatMul 1, Gemm with transB 0)
  uint32_t seed = 9;
};

inline constexpr float kQdqLinearHiddenScale = 0.02f;  // h's scale

inline ir::Model QdqLinearModel(const QdqLinearOptions& o) {
  using namespace ir::testing;
  using ir::DataType;
  ir::Model m;
  m.ir_version = 8;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = m.graph;
  const std::vector<int64_t> x_shape = o.gemm ? std::vector<int64_t>{7, o.k} : std::vector<int64_t>{2, 5, o.k};
  g.inputs = {TensorValue("x", DataType::kFloat32, x_shape)};
  g.outputs = {TensorValue("h", DataType::kFloat32, {}), TensorValue("y", DataType::kFloat32, {})};
  for (auto& v : g.outputs) v.has_type = false;
  std::mt19937 rng(o.seed);
  g.initializers.push_back(OwnedInitializer<int8_t>("z", DataType::kInt8, {}, {0}));
  auto qdq = [&](const std::string& v, const std::string& tag, float s) {
    g.initializers.push_back(OwnedInitializer<float>(tag + "_s", DataType::kFloat32, {}, {s}));
    g.nodes.push_back(MakeNode("QuantizeLinear", {v, tag + "_s", "z"}, {tag + "_q"}, tag + "_Q"));
    g.nodes.push_back(MakeNode("DequantizeLinear", {tag + "_q", tag + "_s", "z"}, {tag + "_dq"}, tag + "_DQ"));
    return tag + "_dq";
  };
  const float s_in = 0.05f, s_h = kQdqLinearHiddenScale;
  const std::string x0 = qdq("x", "in", s_in);
  // W: [k, n] for MatMul, [n, k] for Gemm (transB), int8 with one scale per n.
  const std::vector<int64_t> w_dims = o.gemm ? std::vector<int64_t>{o.n, o.k} : std::vector<int64_t>{o.k, o.n};
  const int64_t axis = o.weight_axis >= 0 ? o.weight_axis : (o.gemm ? 0 : 1);
  std::uniform_int_distribution<int> q(-127, 127);
  std::vector<int8_t> wq(static_cast<size_t>(o.k * o.n));
  for (auto& v : wq) v = static_cast<int8_t>(q(rng));
  std::vector<float> ws(static_cast<size_t>(w_dims[static_cast<size_t>(axis)]));
  std::uniform_real_distribution<float> jitter(0.7f, 1.3f);
  for (auto& s : ws) s = jitter(rng) / (127.0f * std::sqrt(static_cast<float>(o.k)));
  g.initializers.push_back(OwnedInitializer<int8_t>("wq", DataType::kInt8, w_dims, wq));
  g.initializers.push_back(OwnedInitializer<float>("ws", DataType::kFloat32, {static_cast<int64_t>(ws.size())}, ws));
  g.initializers.push_back(OwnedInitializer<int8_t>("wz", DataType::kInt8, {static_cast<int64_t>(ws.size())},
                                                    std::vector<int8_t>(ws.size(), 0)));
  ir::Node wdq = MakeNode("DequantizeLinear", {"wq", "ws", "wz"}, {"w"}, "W_DQ");
  wdq.attributes.push_back(IntAttr("axis", axis));
  g.nodes.push_back(wdq);
  if (o.gemm) {
    // C: int32 through a DQ of scale s_in * ws (per n), as quantize_static writes a bias.
    std::uniform_int_distribution<int> b(-2000, 2000);
    std::vector<int32_t> bq(static_cast<size_t>(o.n));
    std::vector<float> bs(static_cast<size_t>(o.n));
    for (size_t i = 0; i < bq.size(); ++i) {
      bq[i] = b(rng);
      bs[i] = s_in * ws[ws.size() == bs.size() ? i : 0];
    }
    g.initializers.push_back(OwnedInitializer<int32_t>("bq", DataType::kInt32, {o.n}, bq));
    g.initializers.push_back(OwnedInitializer<float>("bs", DataType::kFloat32, {o.n}, bs));
    g.initializers.push_back(
        OwnedInitializer<int32_t>("bz", DataType::kInt32, {o.n}, std::vector<int32_t>(bq.size(), 0)));
    ir::Node bdq = MakeNode("DequantizeLinear", {"bq", "bs", "bz"}, {"b"}, "B_DQ");
    bdq.attributes.push_back(IntAttr("axis", 0));
    g.nodes.push_back(bdq);
    // Through an Identity, as exporters alias equal initializers.
    g.nodes.push_back(MakeNode("Identity", {"b"}, {"b_alias"}, "B_alias"));
    ir::Node gemm = MakeNode("Gemm", {x0, "w", "b_alias"}, {"p"}, "gemm");
    gemm.attributes.push_back(IntAttr("transB", 1));
    g.nodes.push_back(gemm);
    const std::string d = qdq("p", "p", s_h);
    g.nodes.push_back(MakeNode("Identity", {d}, {"h"}, "h_out"));
    g.nodes.push_back(MakeNode("Identity", {d}, {"y"}, "y_out"));
    return m;
  }
  std::uniform_real_distribution<float> bias(-0.3f, 0.3f);
  std::vector<float> bv(static_cast<size_t>(o.n));
  for (auto& v : bv) v = bias(rng);
  g.initializers.push_back(OwnedInitializer<float>("b", DataType::kFloat32, {o.n}, bv));
  g.nodes.push_back(MakeNode("MatMul", {x0, "w"}, {"p"}, "matmul"));
  g.nodes.push_back(MakeNode("Add", {"p", "b"}, {"pb"}, "bias_add"));
  const std::string d = qdq("pb", "pb", s_h);
  g.nodes.push_back(MakeNode("Relu", {d}, {"r"}, "relu"));
  const std::string h = qdq("r", "r", s_h);
  g.nodes.push_back(MakeNode("Identity", {h}, {"h"}, "h_out"));
  ir::Node t = MakeNode("Transpose", {h}, {"ht"}, "transpose");
  t.attributes.push_back(IntsAttr("perm", {0, 2, 1}));
  g.nodes.push_back(t);
  const std::string ht = qdq("ht", "ht", s_h);
  g.nodes.push_back(MakeNode("MatMul", {h, ht}, {"scores"}, "scores"));
  const std::string ds = qdq("scores", "scores", 0.01f);
  g.nodes.push_back(MakeNode("Identity", {ds}, {"y"}, "y_out"));
  return m;
}

}  // namespace vigil::testing
