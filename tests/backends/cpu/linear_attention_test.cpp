// LinearAttention (attention family) against two float64 references: the
// closed form y_t = scale * sum_{s <= t} (q_t . (decay from s+1 to t) k_s) v_s
// (plus the decayed past state) for the linear and gated rules, and a
// step-by-step 4-D state update written from the spec for every rule; on odd
// sizes with GQA and MQA, per-head and per-key decay, per-head and shared
// beta; plus the error paths and shape inference.
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/elementwise_test_util.h"

namespace vigil::cpu::testing {
namespace {

using Shape = std::vector<int64_t>;

struct Case {
  int64_t b = 2, t = 13, hq = 6, hkv = 3, dk = 5, dv = 7;
  std::string rule = "gated_delta";
  bool past = false;
  bool decay_per_key = false;
  bool beta_shared = false;
  float scale = 0;
  DataType dtype = DataType::kFloat32;
};

struct Inputs {
  std::vector<double> q, k, v, past, decay, beta;
};

bool Gated(const Case& c) { return c.rule == "gated" || c.rule == "gated_delta"; }
bool Delta(const Case& c) { return c.rule == "delta" || c.rule == "gated_delta"; }

// Index helpers over the 3-D [B, T, H * D] layout.
size_t At3(const Case& c, int64_t heads, int64_t dim, int64_t b, int64_t t, int64_t h, int64_t i) {
  return static_cast<size_t>(((b * c.t + t) * heads + h) * dim + i);
}

double Scale(const Case& c) { return c.scale != 0 ? c.scale : 1 / std::sqrt(static_cast<double>(c.dk)); }

double DecayAt(const Case& c, const Inputs& in, int64_t b, int64_t t, int64_t h, int64_t i) {
  return c.decay_per_key ? in.decay[At3(c, c.hkv, c.dk, b, t, h, i)] : in.decay[At3(c, c.hkv, 1, b, t, h, 0)];
}

// The spec's recurrence on a [B, Hkv, dk, dv] state, t outermost.
void Recurrent(const Case& c, const Inputs& in, std::vector<double>* y, std::vector<double>* state) {
  std::vector<double> s = c.past ? in.past : std::vector<double>(c.b * c.hkv * c.dk * c.dv, 0.0);
  auto S = [&](int64_t b, int64_t h, int64_t i, int64_t m) -> double& {
    return s[((b * c.hkv + h) * c.dk + i) * c.dv + m];
  };
  y->assign(c.b * c.t * c.hq * c.dv, 0);
  for (int64_t t = 0; t < c.t; ++t) {
    for (int64_t b = 0; b < c.b; ++b) {
      for (int64_t h = 0; h < c.hkv; ++h) {
        if (Gated(c))
          for (int64_t i = 0; i < c.dk; ++i)
            for (int64_t m = 0; m < c.dv; ++m) S(b, h, i, m) *= std::exp(DecayAt(c, in, b, t, h, i));
        std::vector<double> vt(c.dv);
        for (int64_t m = 0; m < c.dv; ++m) vt[m] = in.v[At3(c, c.hkv, c.dv, b, t, h, m)];
        if (Delta(c)) {
          const double beta = c.beta_shared ? in.beta[b * c.t + t] : in.beta[At3(c, c.hkv, 1, b, t, h, 0)];
          for (int64_t m = 0; m < c.dv; ++m) {
            double r = 0;
            for (int64_t i = 0; i < c.dk; ++i) r += S(b, h, i, m) * in.k[At3(c, c.hkv, c.dk, b, t, h, i)];
            vt[m] = beta * (vt[m] - r);
          }
        }
        for (int64_t i = 0; i < c.dk; ++i)
          for (int64_t m = 0; m < c.dv; ++m) S(b, h, i, m) += in.k[At3(c, c.hkv, c.dk, b, t, h, i)] * vt[m];
      }
      for (int64_t hq = 0; hq < c.hq; ++hq) {
        const int64_t h = hq / (c.hq / c.hkv);
        for (int64_t m = 0; m < c.dv; ++m) {
          double acc = 0;
          for (int64_t i = 0; i < c.dk; ++i) acc += in.q[At3(c, c.hq, c.dk, b, t, hq, i)] * S(b, h, i, m);
          (*y)[At3(c, c.hq, c.dv, b, t, hq, m)] = Scale(c) * acc;
        }
      }
    }
  }
  *state = s;
}

// Linear and gated rules without recurrence.
std::vector<double> ClosedForm(const Case& c, const Inputs& in) {
  std::vector<double> y(c.b * c.t * c.hq * c.dv, 0);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t hq = 0; hq < c.hq; ++hq) {
      const int64_t h = hq / (c.hq / c.hkv);
      for (int64_t t = 0; t < c.t; ++t)
        for (int64_t m = 0; m < c.dv; ++m) {
          double acc = 0;
          for (int64_t i = 0; i < c.dk; ++i) {
            const double q = in.q[At3(c, c.hq, c.dk, b, t, hq, i)];
            // log of the decay from step s + 1 through t, summed backwards
            double log_decay = 0;
            for (int64_t s = t; s >= 0; --s) {
              acc += q * std::exp(log_decay) * in.k[At3(c, c.hkv, c.dk, b, s, h, i)] *
                     in.v[At3(c, c.hkv, c.dv, b, s, h, m)];
              if (Gated(c)) log_decay += DecayAt(c, in, b, s, h, i);
            }
            if (c.past) acc += q * std::exp(log_decay) * in.past[((b * c.hkv + h) * c.dk + i) * c.dv + m];
          }
          y[At3(c, c.hq, c.dv, b, t, hq, m)] = Scale(c) * acc;
        }
    }
  return y;
}

void Check(const Case& c) {
  SCOPED_TRACE(c.rule + " hq " + std::to_string(c.hq) + " hkv " + std::to_string(c.hkv) + (c.past ? " past" : "") +
               (c.decay_per_key ? " per-key decay" : "") + (c.beta_shared ? " shared beta" : "") + " " +
               DtypeName(c.dtype));
  const DataType dt = c.dtype;
  runtime::Tensor q = TensorOf(dt, {c.b, c.t, c.hq * c.dk}, RandomValues(c.b * c.t * c.hq * c.dk, -1, 1, 1));
  runtime::Tensor k = TensorOf(dt, {c.b, c.t, c.hkv * c.dk}, RandomValues(c.b * c.t * c.hkv * c.dk, -0.5, 0.5, 2));
  runtime::Tensor v = TensorOf(dt, {c.b, c.t, c.hkv * c.dv}, RandomValues(c.b * c.t * c.hkv * c.dv, -1, 1, 3));
  const int64_t decay_last = c.decay_per_key ? c.hkv * c.dk : c.hkv;
  runtime::Tensor past = TensorOf(dt, {c.b, c.hkv, c.dk, c.dv}, RandomValues(c.b * c.hkv * c.dk * c.dv, -1, 1, 4));
  runtime::Tensor decay = TensorOf(dt, {c.b, c.t, decay_last}, RandomValues(c.b * c.t * decay_last, -0.6, 0, 5));
  const int64_t beta_last = c.beta_shared ? 1 : c.hkv;
  runtime::Tensor beta = TensorOf(dt, {c.b, c.t, beta_last}, RandomValues(c.b * c.t * beta_last, 0, 1, 6));
  Inputs in{DoublesOf(q), DoublesOf(k), DoublesOf(v), DoublesOf(past), DoublesOf(decay), DoublesOf(beta)};
  std::vector<ir::Attribute> attrs = {IntAttr("q_num_heads", c.hq), IntAttr("kv_num_heads", c.hkv),
                                      StringAttr("update_rule", c.rule)};
  if (c.scale != 0) attrs.push_back(FloatAttr("scale", c.scale));
  std::vector<std::string> names = {"q", "k", "v", c.past ? "past" : "", Gated(c) ? "decay" : "",
                                    Delta(c) ? "beta" : ""};
  ir::Node node = MakeNode("LinearAttention", names, {"y", "state"}, attrs);
  std::vector<const runtime::Tensor*> inputs = {&q, &k, &v, c.past ? &past : nullptr, Gated(c) ? &decay : nullptr,
                                                Delta(c) ? &beta : nullptr};
  std::vector<double> want_y, want_state;
  Recurrent(c, in, &want_y, &want_state);
  if (!Delta(c)) ExpectNear(ClosedForm(c, in), want_y, {1e-12, 1e-10}, "closed form against the recurrence");
  auto out = RunOk(node, 27, inputs);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{c.b, c.t, c.hq * c.dv}));
  EXPECT_EQ(out[1].shape(), (Shape{c.b, c.hkv, c.dk, c.dv}));
  EXPECT_EQ(out[0].dtype(), dt);
  for (double& x : want_y) x = Quantize(dt, x);
  for (double& x : want_state) x = Quantize(dt, x);
  const Tolerance tol = dt == DataType::kFloat32 ? Tolerance{1e-6, 1e-5} : ToleranceFor(dt);
  ExpectNear(DoublesOf(out[0]), want_y, tol, "output");
  ExpectNear(DoublesOf(out[1]), want_state, tol, "present_state");
}

TEST(LinearAttentionKernel, EveryRuleAgainstReferences) {
  for (std::string rule : {"linear", "gated", "delta", "gated_delta"}) {
    for (bool past : {false, true}) {
      Case c;
      c.rule = rule;
      c.past = past;
      Check(c);
      c.decay_per_key = true;
      c.beta_shared = true;
      c.scale = 0.3f;
      Check(c);
      c.hkv = 1;  // MQA
      c.dtype = DataType::kFloat64;
      Check(c);
      c.hq = 3;  // one head per kv head
      c.hkv = 3;
      c.dtype = DataType::kFloat16;
      c.t = 1;
      Check(c);
    }
  }
}

TEST(LinearAttentionKernel, Errors) {
  // A valid gated_delta node: 2 heads, d_k 2, d_v 3.
  runtime::Tensor q = F32({1, 2, 4}, std::vector<float>(8, 0.5f));
  runtime::Tensor k = F32({1, 2, 4}, std::vector<float>(8, 0.5f));
  runtime::Tensor v = F32({1, 2, 6}, std::vector<float>(12, 0.5f));
  runtime::Tensor g = F32({1, 2, 2}, std::vector<float>(4, -0.1f));
  runtime::Tensor beta = F32({1, 2, 2}, std::vector<float>(4, 0.5f));
  auto node = [](int64_t hq, int64_t hkv, std::string rule, std::vector<std::string> in) {
    return MakeNode("LinearAttention", in, {"y", "s"},
                    {IntAttr("q_num_heads", hq), IntAttr("kv_num_heads", hkv), StringAttr("update_rule", rule)});
  };
  const std::vector<std::string> all = {"q", "k", "v", "p", "g", "b"};
  EXPECT_EQ(RunOk(node(2, 2, "gated_delta", all), 27, {&q, &k, &v, nullptr, &g, &beta}).size(), 2u);
  ExpectRunFails(node(3, 2, "gated_delta", all), 27, {&q, &k, &v, nullptr, &g, &beta}, "positive multiple");
  ExpectRunFails(node(2, 2, "linear", all), 27, {&q, &k, &v, nullptr, &g, nullptr}, "does not take the input decay");
  ExpectRunFails(node(2, 2, "gated", all), 27, {&q, &k, &v, nullptr, nullptr, nullptr}, "needs the input decay");
  ExpectRunFails(node(2, 2, "delta", all), 27, {&q, &k, &v, nullptr, nullptr, nullptr}, "needs the input beta");
  ExpectRunFails(node(2, 2, "foo", all), 27, {&q, &k, &v, nullptr, &g, &beta}, "update_rule is 'foo'");
  runtime::Tensor past = F32({1, 2, 2, 2}, std::vector<float>(8, 0.0f));
  ExpectRunFails(node(2, 2, "gated_delta", all), 27, {&q, &k, &v, &past, &g, &beta}, "past_state is [1,2,2,2]");
  runtime::Tensor k6 = F32({1, 2, 6}, std::vector<float>(12, 0.5f));
  ExpectRunFails(node(2, 2, "gated_delta", all), 27, {&q, &k6, &v, nullptr, &g, &beta}, "key is [1,2,6]");
  runtime::Tensor g3 = F32({1, 2, 3}, std::vector<float>(6, -0.1f));
  ExpectRunFails(node(2, 2, "gated_delta", all), 27, {&q, &k, &v, nullptr, &g3, &beta}, "decay is [1,2,3]");
  runtime::Tensor b3 = F32({1, 2, 3}, std::vector<float>(6, 0.5f));
  ExpectRunFails(node(2, 2, "gated_delta", all), 27, {&q, &k, &v, nullptr, &g, &b3}, "beta is [1,2,3]");
  runtime::Tensor q2 = F32({2, 4}, std::vector<float>(8, 0.5f));
  ExpectRunFails(node(2, 2, "gated_delta", all), 27, {&q2, &k, &v, nullptr, &g, &beta}, "3-D");
  ir::Node no_heads = MakeNode("LinearAttention", all, {"y"}, {IntAttr("q_num_heads", 2)});
  ExpectRunFails(no_heads, 27, {&q, &k, &v, nullptr, &g, &beta}, "required");
}

TEST(LinearAttentionInfer, Shapes) {
  auto t = [](DataType d, std::vector<ir::Dim> dims) { return ops::TensorType(d, std::move(dims)); };
  const ir::Dim B = ir::Dim::Symbolic("b"), T = ir::Dim::Symbolic("t");
  ir::TypeInfo q = t(DataType::kFloat32, {B, T, ir::Dim::Known(24)});  // 6 heads x 4
  ir::TypeInfo k = t(DataType::kFloat32, {B, T, ir::Dim::Known(12)});  // 3 heads x 4
  ir::TypeInfo v = t(DataType::kFloat32, {B, T, ir::Dim::Known(15)});  // 3 heads x 5
  ir::Node node =
      MakeNode("LinearAttention", {"q", "k", "v"}, {"y", "s"},
               {IntAttr("q_num_heads", 6), IntAttr("kv_num_heads", 3), StringAttr("update_rule", "linear")});
  auto r = InferNode(node, 27, {&q, &k, &v});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ir::TypeInfo want_y = t(DataType::kFloat32, {B, T, ir::Dim::Known(30)});
  const ir::TypeInfo want_state =
      t(DataType::kFloat32, {B, ir::Dim::Known(3), ir::Dim::Known(4), ir::Dim::Known(5)});
  EXPECT_EQ(ir::ShapeToString((*r)[0].shape), ir::ShapeToString(want_y.shape));
  EXPECT_EQ(ir::ShapeToString((*r)[1].shape), ir::ShapeToString(want_state.shape));
  ir::TypeInfo qk = t(DataType::kFloat32, {ir::Dim::Known(2), ir::Dim::Known(3), ir::Dim::Known(24)});
  ir::TypeInfo kk = t(DataType::kFloat32, {ir::Dim::Known(2), ir::Dim::Known(3), ir::Dim::Known(8)});
  ir::TypeInfo vk = t(DataType::kFloat32, {ir::Dim::Known(2), ir::Dim::Known(3), ir::Dim::Known(15)});
  auto e = InferNode(node, 27, {&qk, &kk, &vk});
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().summary().find("node LinearAttention"), std::string::npos) << e.status().summary();
  ir::Node gated = MakeNode("LinearAttention", {"q", "k", "v"}, {"y"},
                            {IntAttr("q_num_heads", 6), IntAttr("kv_num_heads", 3)});  // gated_delta needs decay, beta
  EXPECT_FALSE(InferNode(gated, 27, {&q, &k, &v}).ok());
}

}  // namespace
}  // namespace vigil::cpu::testing
