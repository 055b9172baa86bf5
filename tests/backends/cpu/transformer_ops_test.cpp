// ONNX RMSNormalization, RotaryEmbedding and Attention (opsets 23-25) on the
// CPU against plain float64 references written out here, on odd sizes and
// every float dtype; their shape inference; and bad inputs, which must come
// back as a Status that names the node.
#include <cmath>
#include <limits>
#include <optional>

#include <gtest/gtest.h>

#include "backends/cpu/float_kernel_test_util.h"

namespace vigil::cpu {
namespace {

using namespace vigil::cpu::float_testing;  // NOLINT: test helpers

constexpr double kInf = std::numeric_limits<double>::infinity();

void ExpectFails(const Result<std::vector<runtime::Tensor>>& r, const std::string& text) {
  ASSERT_FALSE(r.ok()) << "expected an error containing '" << text << "'";
  EXPECT_NE(r.status().ToString().find(text), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().ToString().find("'n'"), std::string::npos) << "the error should name the node";
}

runtime::Tensor Bools(Shape shape, const std::vector<bool>& v) {
  return kt::MakeTensor(DataType::kBool, std::move(shape), std::vector<uint8_t>(v.begin(), v.end()));
}

// --------------------------------------------------------- RMSNormalization

void CheckRmsNorm(DataType dt, const Shape& shape, int64_t axis, const Shape& scale_shape, float epsilon) {
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  int64_t inner = 1;
  for (size_t d = a; d < shape.size(); ++d) inner *= shape[d];
  std::vector<double> x = RoundTo(dt, Random(Product(shape), 5, -2, 2));
  std::vector<double> s = RoundTo(dt, Random(Product(scale_shape), 6, 0.5, 1.5));
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < Product(shape) / inner; ++r) {
    double squares = 0;
    for (int64_t j = 0; j < inner; ++j) squares += x[r * inner + j] * x[r * inner + j];
    const double rms = std::sqrt(squares / inner + static_cast<double>(epsilon));
    for (int64_t j = 0; j < inner; ++j) {
      // The scale is aligned with X's last dims; its size-1 dims repeat.
      Shape at = Unravel(j, Shape(shape.begin() + a, shape.end()));
      int64_t k = 0;
      for (size_t d = 0; d < scale_shape.size(); ++d) {
        const int64_t i = at[at.size() - scale_shape.size() + d];
        k = k * scale_shape[d] + (scale_shape[d] == 1 ? 0 : i);
      }
      want[r * inner + j] = x[r * inner + j] / rms * s[k];
    }
  }
  runtime::Tensor xt = MakeFloat(dt, shape, x), st = MakeFloat(dt, scale_shape, s);
  ir::Node node = kt::MakeNode("RMSNormalization", {"x", "s"}, {"y"},
                               {kt::IntAttr("axis", axis), kt::FloatAttr("epsilon", epsilon)});
  auto r = kt::RunKernel(node, 23, {&xt, &st});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).dtype(), dt);
  EXPECT_EQ(r->at(0).shape(), shape);
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(dt), Tolerance(dt));
}

TEST(RMSNormalization, AxesScalesAndDtypes) {
  CheckRmsNorm(DataType::kFloat32, {3, 127}, -1, {127}, 1e-5f);
  CheckRmsNorm(DataType::kFloat32, {2, 13, 5}, 1, {13, 5}, 0.1f);
  CheckRmsNorm(DataType::kFloat32, {2, 13, 5}, 1, {1, 5}, 1e-5f);
  CheckRmsNorm(DataType::kFloat32, {3, 4, 5}, 0, {3, 4, 5}, 1e-5f);
  CheckRmsNorm(DataType::kFloat64, {5, 13}, -1, {13}, 1e-5f);
  CheckRmsNorm(DataType::kFloat16, {4, 127}, -1, {127}, 1e-5f);
  CheckRmsNorm(DataType::kBfloat16, {3, 2, 13}, -2, {2, 13}, 1e-5f);
}

TEST(RMSNormalization, ErrorsAndInference) {
  runtime::Tensor x = MakeFloat(DataType::kFloat32, {3, 5}, Random(15, 1));
  runtime::Tensor s4 = MakeFloat(DataType::kFloat32, {4}, Random(4, 2));
  auto node = [](int64_t axis, int64_t stash = 1) {
    return kt::MakeNode("RMSNormalization", {"x", "s"}, {"y"},
                        {kt::IntAttr("axis", axis), kt::IntAttr("stash_type", stash)});
  };
  ExpectFails(kt::RunKernel(node(-1), 23, {&x, &s4}), "does not broadcast");
  ExpectFails(kt::RunKernel(node(2), 23, {&x, &s4}), "axis");
  ExpectFails(kt::RunKernel(node(-1, 7), 23, {&x, &s4}), "stash_type");
  EXPECT_FALSE(kt::RunKernel(node(-1), 23, {&x, nullptr}).ok());

  ir::TypeInfo xt = Type(DataType::kFloat16, {S("N"), K(3), K(5)}), st = Type(DataType::kFloat16, {K(5)});
  auto r = kt::InferNode(node(-1), 23, {&xt, &st});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].elem_type, DataType::kFloat16);
  EXPECT_EQ(DimsOf((*r)[0]), "[N,3,5]");
  ir::TypeInfo bad = Type(DataType::kFloat16, {K(4)});
  EXPECT_FALSE(kt::InferNode(node(-1), 23, {&xt, &bad}).ok());
  EXPECT_FALSE(kt::InferNode(node(3), 23, {&xt, &st}).ok());
}

// ---------------------------------------------------------- RotaryEmbedding

struct RotaryCase {
  DataType dt = DataType::kFloat32;
  bool rank3 = false;
  bool interleaved = false;
  bool position_ids = true;
  int64_t batch = 2, heads = 3, seq = 5, head = 12, rotary_dim = 0;
};

void CheckRotary(const RotaryCase& c) {
  const int64_t rot = c.rotary_dim ? c.rotary_dim : c.head, half = rot / 2, positions = 17;
  const Shape x_shape = c.rank3 ? Shape{c.batch, c.seq, c.heads * c.head} : Shape{c.batch, c.heads, c.seq, c.head};
  const Shape cache_shape = c.position_ids ? Shape{positions, half} : Shape{c.batch, c.seq, half};
  std::vector<double> x = RoundTo(c.dt, Random(Product(x_shape), 3, -2, 2));
  std::vector<double> cos(Product(cache_shape)), sin(Product(cache_shape));
  for (size_t i = 0; i < cos.size(); ++i) {
    cos[i] = std::cos(0.37 * static_cast<double>(i));
    sin[i] = std::sin(0.37 * static_cast<double>(i));
  }
  cos = RoundTo(c.dt, cos);
  sin = RoundTo(c.dt, sin);
  std::vector<int64_t> ids(c.batch * c.seq);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + 3) % positions);
  std::vector<double> want = x;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.heads; ++h) {
      for (int64_t s = 0; s < c.seq; ++s) {
        const int64_t base = c.rank3 ? (b * c.seq + s) * c.heads * c.head + h * c.head
                                     : ((b * c.heads + h) * c.seq + s) * c.head;
        const int64_t row = (c.position_ids ? ids[b * c.seq + s] : b * c.seq + s) * half;
        for (int64_t k = 0; k < half; ++k) {
          const int64_t first = base + (c.interleaved ? 2 * k : k);
          const int64_t second = base + (c.interleaved ? 2 * k + 1 : k + half);
          want[first] = cos[row + k] * x[first] - sin[row + k] * x[second];
          want[second] = sin[row + k] * x[first] + cos[row + k] * x[second];
        }
      }
    }
  }
  std::vector<ir::Attribute> attrs = {kt::IntAttr("interleaved", c.interleaved)};
  if (c.rank3) attrs.push_back(kt::IntAttr("num_heads", c.heads));
  if (c.rotary_dim) attrs.push_back(kt::IntAttr("rotary_embedding_dim", c.rotary_dim));
  runtime::Tensor xt = MakeFloat(c.dt, x_shape, x), ct = MakeFloat(c.dt, cache_shape, cos),
                  st = MakeFloat(c.dt, cache_shape, sin), it = kt::I64({c.batch, c.seq}, ids);
  ir::Node node = kt::MakeNode("RotaryEmbedding", {"x", "c", "s", c.position_ids ? "p" : ""}, {"y"}, attrs);
  auto r = kt::RunKernel(node, 23, {&xt, &ct, &st, c.position_ids ? &it : nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->at(0).shape(), x_shape);
  ExpectClose(ReadFloat(r->at(0)), want, Tolerance(c.dt), Tolerance(c.dt));
}

TEST(RotaryEmbedding, HalvesInterleavedPartialAnd3D) {
  CheckRotary({});
  CheckRotary({.interleaved = true});
  CheckRotary({.rotary_dim = 8});
  CheckRotary({.interleaved = true, .rotary_dim = 6});
  CheckRotary({.rank3 = true, .position_ids = false, .heads = 5, .seq = 13, .head = 10});
  CheckRotary({.rank3 = true, .interleaved = true, .heads = 3, .head = 14, .rotary_dim = 4});
  CheckRotary({.dt = DataType::kFloat16, .interleaved = true});
  CheckRotary({.dt = DataType::kBfloat16, .position_ids = false, .rotary_dim = 10});
}

TEST(RotaryEmbedding, Errors) {
  runtime::Tensor x4 = MakeFloat(DataType::kFloat32, {1, 2, 3, 8}, Random(48, 1));
  runtime::Tensor x3 = MakeFloat(DataType::kFloat32, {1, 3, 16}, Random(48, 1));
  runtime::Tensor c4 = MakeFloat(DataType::kFloat32, {10, 4}, Random(40, 2));
  runtime::Tensor c3 = MakeFloat(DataType::kFloat32, {10, 3}, Random(30, 2));
  runtime::Tensor ids = kt::I64({1, 3}, {0, 1, 2}), far = kt::I64({1, 3}, {0, 1, 10});
  auto node = [](std::vector<ir::Attribute> attrs) {
    return kt::MakeNode("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"}, std::move(attrs));
  };
  EXPECT_TRUE(kt::RunKernel(node({}), 23, {&x4, &c4, &c4, &ids}).ok());
  ExpectFails(kt::RunKernel(node({}), 23, {&x3, &c4, &c4, &ids}), "num_heads");
  ExpectFails(kt::RunKernel(node({kt::IntAttr("num_heads", 3)}), 23, {&x3, &c4, &c4, &ids}), "multiple of num_heads");
  ExpectFails(kt::RunKernel(node({}), 23, {&x4, &c3, &c3, &ids}), "rotary_dim / 2");
  ExpectFails(kt::RunKernel(node({kt::IntAttr("rotary_embedding_dim", 5)}), 23, {&x4, &c4, &c4, &ids}), "even");
  ExpectFails(kt::RunKernel(node({kt::IntAttr("rotary_embedding_dim", 10)}), 23, {&x4, &c4, &c4, &ids}), "even");
  ExpectFails(kt::RunKernel(node({}), 23, {&x4, &c4, &c4, &far}), "position_ids[0][2] is 10");
  ExpectFails(kt::RunKernel(node({}), 23, {&x4, &c4, &c4, nullptr}), "without position_ids");
  runtime::Tensor x2 = MakeFloat(DataType::kFloat32, {6, 8}, Random(48, 1));
  ExpectFails(kt::RunKernel(node({}), 23, {&x2, &c4, &c4, &ids}), "4-D");
  runtime::Tensor c16 = MakeFloat(DataType::kFloat16, {10, 4}, Random(40, 2));
  ExpectFails(kt::RunKernel(node({}), 23, {&x4, &c16, &c16, &ids}), "dtypes must match");

  ir::TypeInfo xt = Type(DataType::kFloat32, {S("B"), K(3), S("T"), K(8)}), ct = Type(DataType::kFloat32, {S("P"), K(4)});
  ir::TypeInfo pt = Type(DataType::kInt64, {S("B"), S("T")});
  auto r = kt::InferNode(node({}), 23, {&xt, &ct, &ct, &pt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf((*r)[0]), "[B,3,T,8]");
  ir::TypeInfo c3t = Type(DataType::kFloat32, {S("P"), K(3)});
  ir::TypeInfo x8 = Type(DataType::kFloat32, {K(1), K(3), K(2), K(8)});
  EXPECT_FALSE(kt::InferNode(node({}), 23, {&x8, &c3t, &c3t, &pt}).ok());
  ir::TypeInfo x64 = Type(DataType::kFloat64, {K(1), K(3), K(2), K(8)});
  EXPECT_FALSE(kt::InferNode(node({}), 23, {&x64, &ct, &ct, &pt}).ok());
}

// ---------------------------------------------------------------- Attention

enum class MaskKind { kNone, kFloat, kBool };

struct AttnCase {
  DataType dt = DataType::kFloat32;
  int64_t opset = 23;
  bool rank3 = false;
  int64_t batch = 2, q_heads = 5, kv_heads = 5, q_seq = 7, kv_seq = 13, past = 0, head = 6, v_head = 5;
  bool causal = false;
  std::optional<float> scale;
  float softcap = 0;
  int64_t qk_mode = -1;  // -1: no qk_matmul_output
  MaskKind mask = MaskKind::kNone;
  Shape mask_shape;
  std::vector<int64_t> nonpad;
  int64_t left = -1, right = -1;
};

// [B, H, S, D] -> [B, S, H * D].
std::vector<double> To3D(const std::vector<double>& v, int64_t b, int64_t h, int64_t s, int64_t d) {
  std::vector<double> out(v.size());
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    Shape at = Unravel(i, {b, h, s, d});
    out[((at[0] * s + at[2]) * h + at[1]) * d + at[3]] = v[i];
  }
  return out;
}

struct AttnResult {
  std::vector<double> y, present_key, present_value, qk;  // y as [B, Hq, Sq, Dv]
};

// The spec's formula in double on 4-D [batch, heads, seq, size] data.
AttnResult AttentionReference(const AttnCase& c, const std::vector<double>& q, const std::vector<double>& k,
                              const std::vector<double>& v, const std::vector<double>& pk,
                              const std::vector<double>& pv, const std::vector<double>& mask) {
  const int64_t total = c.past + c.kv_seq, group = c.q_heads / c.kv_heads;
  AttnResult r;
  // present = concat(past, new) along the sequence.
  auto join = [&](const std::vector<double>& past, const std::vector<double>& cur, int64_t d) {
    std::vector<double> out;
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t h = 0; h < c.kv_heads; ++h) {
        const int64_t p0 = (b * c.kv_heads + h) * c.past * d, c0 = (b * c.kv_heads + h) * c.kv_seq * d;
        out.insert(out.end(), past.begin() + p0, past.begin() + p0 + c.past * d);
        out.insert(out.end(), cur.begin() + c0, cur.begin() + c0 + c.kv_seq * d);
      }
    }
    return out;
  };
  r.present_key = join(pk, k, c.head);
  r.present_value = join(pv, v, c.v_head);
  Shape m = c.mask_shape;
  while (m.size() < 4) m.insert(m.begin(), 1);
  const double scale = c.scale ? double{*c.scale} : 1 / std::sqrt(double(c.head));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t h = 0; h < c.q_heads; ++h) {
      const int64_t kh = h / group;
      for (int64_t i = 0; i < c.q_seq; ++i) {
        const int64_t offset = c.past ? c.past : c.nonpad.empty() ? 0 : c.nonpad[b] - c.q_seq;
        std::vector<double> raw(total), capped(total), biased(total), p(total);
        bool dead = true;
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < c.head; ++e) {
            dot += q[((b * c.q_heads + h) * c.q_seq + i) * c.head + e] *
                   r.present_key[((b * c.kv_heads + kh) * total + j) * c.head + e];
          }
          raw[j] = scale * dot;
          capped[j] = c.softcap > 0 ? c.softcap * std::tanh(raw[j] / c.softcap) : raw[j];
          double bias = 0;
          if (c.mask != MaskKind::kNone) {
            if (j >= m[3] && m[3] != total && !(c.opset == 23 && m[3] == 1)) {
              bias = -kInf;
            } else {
              const int64_t at = (((m[0] == 1 ? 0 : b) * m[1] + (m[1] == 1 ? 0 : h)) * m[2] + (m[2] == 1 ? 0 : i)) * m[3] +
                                 (m[3] == 1 ? 0 : j);
              bias = c.mask == MaskKind::kBool ? (mask[at] != 0 ? 0 : -kInf) : mask[at];
            }
          }
          if (c.causal && j > i + offset) bias = -kInf;
          if (c.left >= 0 && i + offset - j > c.left) bias = -kInf;
          if (c.right >= 0 && j - (i + offset) > c.right) bias = -kInf;
          if (!c.nonpad.empty() && j >= c.nonpad[b]) bias = -kInf;
          dead = dead && bias == -kInf;
          biased[j] = capped[j] + bias;
        }
        double top = -kInf, sum = 0;
        for (double s : biased) top = std::max(top, s);
        for (int64_t j = 0; j < total; ++j) sum += p[j] = dead ? 0 : std::exp(biased[j] - top);
        for (double& x : p) x = dead ? 0 : x / sum;
        const std::vector<double>* qk[] = {&raw, &capped, &biased, &p};
        if (c.qk_mode >= 0) r.qk.insert(r.qk.end(), qk[c.qk_mode]->begin(), qk[c.qk_mode]->end());
        for (int64_t e = 0; e < c.v_head; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < total; ++j) acc += p[j] * r.present_value[((b * c.kv_heads + kh) * total + j) * c.v_head + e];
          r.y.push_back(acc);
        }
      }
    }
  }
  return r;
}

void CheckAttention(const AttnCase& c) {
  SCOPED_TRACE(::testing::Message() << "opset " << c.opset << (c.rank3 ? " 3-D" : " 4-D") << " heads " << c.q_heads
                                    << "/" << c.kv_heads << " causal " << c.causal << " qk mode " << c.qk_mode);
  const Shape qs = {c.batch, c.q_heads, c.q_seq, c.head}, ks = {c.batch, c.kv_heads, c.kv_seq, c.head};
  const Shape vs = {c.batch, c.kv_heads, c.kv_seq, c.v_head};
  const Shape pks = {c.batch, c.kv_heads, c.past, c.head}, pvs = {c.batch, c.kv_heads, c.past, c.v_head};
  std::vector<double> q = RoundTo(c.dt, Random(Product(qs), 21, -2, 2)), k = RoundTo(c.dt, Random(Product(ks), 22, -2, 2));
  std::vector<double> v = RoundTo(c.dt, Random(Product(vs), 23)), pk = RoundTo(c.dt, Random(Product(pks), 24, -2, 2));
  std::vector<double> pv = RoundTo(c.dt, Random(Product(pvs), 25));
  std::vector<double> mask = Random(Product(c.mask_shape), 26, -1.5, 0.5);
  if (c.mask == MaskKind::kBool) {
    for (double& m : mask) m = m > -0.9 ? 1 : 0;
    if (mask.size() > 3) mask[0] = mask[1] = mask[2] = 1;
  } else {
    mask = RoundTo(c.dt, mask);
  }
  AttnResult want = AttentionReference(c, q, k, v, pk, pv, mask);

  auto layout = [&](const std::vector<double>& x, const Shape& s) {
    return c.rank3 ? MakeFloat(c.dt, {s[0], s[2], s[1] * s[3]}, To3D(x, s[0], s[1], s[2], s[3])) : MakeFloat(c.dt, s, x);
  };
  runtime::Tensor qt = layout(q, qs), kt_ = layout(k, ks), vt = layout(v, vs);
  runtime::Tensor pkt = MakeFloat(c.dt, pks, pk), pvt = MakeFloat(c.dt, pvs, pv);
  runtime::Tensor mt = c.mask == MaskKind::kBool ? Bools(c.mask_shape, std::vector<bool>(mask.begin(), mask.end()))
                                                 : MakeFloat(c.dt, c.mask_shape, mask);
  runtime::Tensor nt = kt::I64({static_cast<int64_t>(c.nonpad.size())}, c.nonpad);
  std::vector<ir::Attribute> attrs = {kt::IntAttr("is_causal", c.causal)};
  if (c.rank3) attrs.push_back(kt::IntAttr("q_num_heads", c.q_heads)), attrs.push_back(kt::IntAttr("kv_num_heads", c.kv_heads));
  if (c.scale) attrs.push_back(kt::FloatAttr("scale", *c.scale));
  if (c.softcap > 0) attrs.push_back(kt::FloatAttr("softcap", c.softcap));
  if (c.qk_mode > 0) attrs.push_back(kt::IntAttr("qk_matmul_output_mode", c.qk_mode));
  if (c.left >= 0) attrs.push_back(kt::IntAttr("left_window_size", c.left));
  if (c.right >= 0) attrs.push_back(kt::IntAttr("right_window_size", c.right));
  const bool past = c.past > 0;
  std::vector<std::string> inputs = {"q", "k", "v", c.mask != MaskKind::kNone ? "m" : "", past ? "pk" : "",
                                     past ? "pv" : ""};
  if (!c.nonpad.empty()) inputs.push_back("n");
  ir::Node node = kt::MakeNode("Attention", inputs, {"y", "present_key", "present_value", c.qk_mode >= 0 ? "qk" : ""},
                               attrs);
  auto r = kt::RunKernel(node, c.opset,
                         {&qt, &kt_, &vt, c.mask != MaskKind::kNone ? &mt : nullptr, past ? &pkt : nullptr,
                          past ? &pvt : nullptr, c.nonpad.empty() ? nullptr : &nt});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const double tol = Tolerance(c.dt);
  const runtime::Tensor& y = r->at(0);
  EXPECT_EQ(y.dtype(), c.dt);
  if (c.rank3) {
    EXPECT_EQ(y.shape(), (Shape{c.batch, c.q_seq, c.q_heads * c.v_head}));
    ExpectClose(ReadFloat(y), To3D(want.y, c.batch, c.q_heads, c.q_seq, c.v_head), tol, tol);
  } else {
    EXPECT_EQ(y.shape(), (Shape{c.batch, c.q_heads, c.q_seq, c.v_head}));
    ExpectClose(ReadFloat(y), want.y, tol, tol);
  }
  // The caches are copies: exact in any dtype.
  EXPECT_EQ(r->at(1).shape(), (Shape{c.batch, c.kv_heads, c.past + c.kv_seq, c.head}));
  ExpectClose(ReadFloat(r->at(1)), want.present_key, 0, 0);
  ExpectClose(ReadFloat(r->at(2)), want.present_value, 0, 0);
  if (c.qk_mode >= 0) {
    EXPECT_EQ(r->at(3).shape(), (Shape{c.batch, c.q_heads, c.q_seq, c.past + c.kv_seq}));
    ExpectClose(ReadFloat(r->at(3)), want.qk, tol, tol);
  }
}

TEST(Attention, MultiHead4DAnd3D) {
  CheckAttention({});
  CheckAttention({.rank3 = true, .q_heads = 3, .kv_heads = 3, .q_seq = 13, .kv_seq = 5});
  CheckAttention({.batch = 1, .q_heads = 3, .kv_heads = 3, .q_seq = 1, .kv_seq = 127, .head = 13, .v_head = 13});
  CheckAttention({.scale = 0.05f});
}

TEST(Attention, GroupedAndMultiQuery) {
  CheckAttention({.q_heads = 6, .kv_heads = 3, .causal = true});
  CheckAttention({.rank3 = true, .q_heads = 5, .kv_heads = 1, .v_head = 3});
}

TEST(Attention, CausalWithPastAndEveryQkMode) {
  for (int64_t mode = 0; mode <= 3; ++mode) {
    CheckAttention({.kv_seq = 7, .past = 4, .causal = true, .softcap = 1.5f, .qk_mode = mode, .mask = MaskKind::kFloat,
                    .mask_shape = {7, 11}});
  }
  CheckAttention({.rank3 = true, .q_heads = 3, .kv_heads = 3, .past = 5, .qk_mode = 2, .mask = MaskKind::kBool,
                  .mask_shape = {2, 1, 7, 18}});
}

TEST(Attention, MasksBroadcastAndPad) {
  CheckAttention({.mask = MaskKind::kFloat, .mask_shape = {13}});
  CheckAttention({.qk_mode = 3, .mask = MaskKind::kBool, .mask_shape = {2, 5, 7, 13}});
  CheckAttention({.causal = true, .mask = MaskKind::kFloat, .mask_shape = {5, 1, 13}});
  CheckAttention({.mask = MaskKind::kFloat, .mask_shape = {7, 1}});  // opset 23: a last dim of 1 broadcasts
  // From opset 24 a shorter mask is padded: keys past it are masked out.
  CheckAttention({.opset = 24, .mask = MaskKind::kBool, .mask_shape = {7, 9}});
  CheckAttention({.opset = 24, .qk_mode = 2, .mask = MaskKind::kFloat, .mask_shape = {7, 1}});
}

TEST(Attention, PaddedKeysAndWindows) {
  CheckAttention({.opset = 24, .causal = true, .nonpad = {13, 9}});
  CheckAttention({.opset = 24, .q_heads = 6, .kv_heads = 2, .q_seq = 1, .causal = true, .nonpad = {4, 13}});
  // nonpad 3 < q_seq 7: the first rows see no key and come out as 0.
  CheckAttention({.opset = 24, .causal = true, .qk_mode = 3, .nonpad = {3, 13}});
  CheckAttention({.opset = 25, .causal = true, .left = 2});
  CheckAttention({.opset = 25, .qk_mode = 3, .left = 1, .right = 3});
  CheckAttention({.opset = 25, .kv_seq = 4, .past = 9, .causal = true, .left = 3});
  CheckAttention({.opset = 25, .causal = true, .mask = MaskKind::kFloat, .mask_shape = {1, 13}, .nonpad = {11, 6},
                  .left = 2});
}

TEST(Attention, FullyMaskedRowsAreZero) {
  AttnCase c{.batch = 1, .q_heads = 1, .kv_heads = 1, .q_seq = 3, .kv_seq = 4, .qk_mode = 3, .mask = MaskKind::kBool,
             .mask_shape = {3, 4}};
  runtime::Tensor q = MakeFloat(DataType::kFloat32, {1, 1, 3, 6}, Random(18, 1));
  runtime::Tensor k = MakeFloat(DataType::kFloat32, {1, 1, 4, 6}, Random(24, 2));
  runtime::Tensor v = MakeFloat(DataType::kFloat32, {1, 1, 4, 5}, Random(20, 3));
  runtime::Tensor m = Bools({3, 4}, {true, false, true, true, false, false, false, false, true, true, true, true});
  ir::Node node = kt::MakeNode("Attention", {"q", "k", "v", "m"}, {"y", "", "", "qk"},
                               {kt::IntAttr("qk_matmul_output_mode", c.qk_mode)});
  auto r = kt::RunKernel(node, 23, {&q, &k, &v, &m});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<double> y = ReadFloat(r->at(0)), p = ReadFloat(r->at(3));
  for (int64_t e = 0; e < 5; ++e) EXPECT_EQ(y[5 + e], 0.0) << "row 1 has no key";
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(p[4 + j], 0.0);
  EXPECT_NEAR(p[0] + p[2] + p[3], 1.0, 1e-6);
  EXPECT_EQ(p[1], 0.0);
}

TEST(Attention, Dtypes) {
  CheckAttention({.dt = DataType::kFloat16, .q_heads = 6, .kv_heads = 3, .past = 3, .causal = true, .qk_mode = 0});
  CheckAttention({.dt = DataType::kBfloat16, .rank3 = true, .q_heads = 3, .kv_heads = 3, .mask = MaskKind::kFloat,
                  .mask_shape = {7, 13}});
  CheckAttention({.dt = DataType::kFloat64, .opset = 24, .causal = true, .softcap = 2.0f, .qk_mode = 1,
                  .nonpad = {13, 10}});
}

TEST(Attention, Errors) {
  auto f = [](Shape s) { return MakeFloat(DataType::kFloat32, s, Random(Product(s), 9)); };
  runtime::Tensor q4 = f({1, 4, 3, 8}), k4 = f({1, 2, 5, 8}), v4 = f({1, 2, 5, 6});
  runtime::Tensor k3heads = f({1, 3, 5, 8}), v3heads = f({1, 3, 5, 6});
  runtime::Tensor q3 = f({1, 3, 32}), k3 = f({1, 5, 16}), v3 = f({1, 5, 12}), q2 = f({3, 8}), k7 = f({1, 2, 5, 7});
  auto node = [](std::vector<std::string> in, std::vector<ir::Attribute> attrs = {}) {
    return kt::MakeNode("Attention", std::move(in), {"y"}, std::move(attrs));
  };
  const std::vector<std::string> qkv = {"q", "k", "v"};
  EXPECT_TRUE(kt::RunKernel(node(qkv), 23, {&q4, &k4, &v4}).ok());
  ExpectFails(kt::RunKernel(node(qkv), 23, {&q2, &k4, &v4}), "3-D or all 4-D");
  ExpectFails(kt::RunKernel(node(qkv), 23, {&q3, &k4, &v4}), "3-D or all 4-D");
  ExpectFails(kt::RunKernel(node(qkv), 23, {&q3, &k3, &v3}), "q_num_heads and kv_num_heads");
  const std::vector<ir::Attribute> heads = {kt::IntAttr("q_num_heads", 4), kt::IntAttr("kv_num_heads", 2)};
  EXPECT_TRUE(kt::RunKernel(node(qkv, heads), 23, {&q3, &k3, &v3}).ok());
  const std::vector<ir::Attribute> five = {kt::IntAttr("q_num_heads", 5), kt::IntAttr("kv_num_heads", 2)};
  ExpectFails(kt::RunKernel(node(qkv, five), 23, {&q3, &k3, &v3}), "multiple of q_num_heads");
  ExpectFails(kt::RunKernel(node(qkv), 23, {&q4, &k3heads, &v3heads}), "divide the query heads");
  ExpectFails(kt::RunKernel(node(qkv), 23, {&q4, &k7, &v4}), "head size");
  ExpectFails(kt::RunKernel(node(qkv, heads), 25, {&q4, &k4, &v4}), "must not be set");
  ExpectFails(kt::RunKernel(node(qkv, {kt::IntAttr("qk_matmul_output_mode", 4)}), 23, {&q4, &k4, &v4}), "0, 1, 2 or 3");
  ExpectFails(kt::RunKernel(node(qkv, {kt::FloatAttr("softcap", -1)}), 23, {&q4, &k4, &v4}), "softcap");
  ExpectFails(kt::RunKernel(node(qkv, {kt::IntAttr("softmax_precision", 7)}), 23, {&q4, &k4, &v4}),
              "softmax_precision");
  runtime::Tensor past = f({1, 2, 4, 8});
  ExpectFails(kt::RunKernel(node({"q", "k", "v", "", "pk", ""}), 23, {&q4, &k4, &v4, nullptr, &past, nullptr}),
              "together");
  runtime::Tensor bad_mask = f({3, 4});
  ExpectFails(kt::RunKernel(node({"q", "k", "v", "m"}), 23, {&q4, &k4, &v4, &bad_mask}), "does not broadcast");
  runtime::Tensor long_mask = f({3, 6});
  ExpectFails(kt::RunKernel(node({"q", "k", "v", "m"}), 24, {&q4, &k4, &v4, &long_mask}), "never longer");
  runtime::Tensor int_mask = kt::I64({3, 5}, std::vector<int64_t>(15, 0));
  EXPECT_FALSE(kt::RunKernel(node({"q", "k", "v", "m"}), 23, {&q4, &k4, &v4, &int_mask}).ok());
  runtime::Tensor nonpad = kt::I64({1}, {6});
  ExpectFails(kt::RunKernel(node({"q", "k", "v", "", "", "", "n"}), 24,
                            {&q4, &k4, &v4, nullptr, nullptr, nullptr, &nonpad}),
              "nonpad_kv_seqlen[0] is 6");
  runtime::Tensor half = MakeFloat(DataType::kFloat16, {1, 2, 5, 8}, Random(80, 1));
  ExpectFails(kt::RunKernel(node(qkv), 23, {&q4, &half, &v4}), "dtypes must match");
}

TEST(AttentionInference, ShapesAndChecks) {
  ir::TypeInfo q = Type(DataType::kFloat16, {S("B"), K(9), S("S"), K(8)}), k = Type(DataType::kFloat16, {S("B"), K(3), S("L"), K(8)});
  ir::TypeInfo v = Type(DataType::kFloat32, {S("B"), K(3), S("L"), K(10)});
  ir::TypeInfo past = Type(DataType::kFloat16, {S("B"), K(3), S("P"), K(8)});
  ir::TypeInfo past_v = Type(DataType::kFloat32, {S("B"), K(3), S("P"), K(10)});
  ir::Node node = kt::MakeNode("Attention", {"q", "k", "v", "", "pk", "pv"}, {"y", "ok", "ov", "qk"});
  auto r = kt::InferNode(node, 23, {&q, &k, &v, nullptr, &past, &past_v});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0].elem_type, DataType::kFloat16);
  EXPECT_EQ(DimsOf((*r)[0]), "[B,9,S,10]");
  EXPECT_EQ((*r)[2].elem_type, DataType::kFloat32);
  EXPECT_EQ((*r)[1].shape.dims.size(), 4u);

  ir::TypeInfo q3 = Type(DataType::kFloat32, {K(2), K(4), K(72)}), k3 = Type(DataType::kFloat32, {K(2), K(6), K(24)});
  ir::TypeInfo v3 = Type(DataType::kFloat32, {K(2), K(6), K(30)});
  ir::TypeInfo pk3 = Type(DataType::kFloat32, {K(2), K(3), K(12), K(8)}), pv3 = Type(DataType::kFloat32, {K(2), K(3), K(12), K(10)});
  ir::Node gqa = kt::MakeNode("Attention", {"q", "k", "v", "", "pk", "pv"}, {"y", "ok", "ov", "qk"},
                              {kt::IntAttr("q_num_heads", 9), kt::IntAttr("kv_num_heads", 3)});
  r = kt::InferNode(gqa, 23, {&q3, &k3, &v3, nullptr, &pk3, &pv3});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf((*r)[0]), "[2,4,90]");
  EXPECT_EQ(DimsOf((*r)[1]), "[2,3,18,8]");
  EXPECT_EQ(DimsOf((*r)[2]), "[2,3,18,10]");
  EXPECT_EQ(DimsOf((*r)[3]), "[2,9,4,18]");

  ir::TypeInfo k_bad = Type(DataType::kFloat32, {K(2), K(6), K(25)});
  EXPECT_FALSE(kt::InferNode(gqa, 23, {&q3, &k_bad, &v3, nullptr, &pk3, &pv3}).ok());
  ir::Node only_past = kt::MakeNode("Attention", {"q", "k", "v", "", "pk"}, {"y"},
                                    {kt::IntAttr("q_num_heads", 9), kt::IntAttr("kv_num_heads", 3)});
  EXPECT_FALSE(kt::InferNode(only_past, 23, {&q3, &k3, &v3, nullptr, &pk3}).ok());
  ir::TypeInfo int_q = Type(DataType::kInt32, {K(2), K(4), K(72)});
  EXPECT_FALSE(kt::InferNode(gqa, 23, {&int_q, &k3, &v3, nullptr, &pk3, &pv3}).ok());
  ir::Node seven = kt::MakeNode("Attention", {"q", "k", "v", "", "", "", "n"}, {"y"});
  EXPECT_FALSE(kt::InferNode(seven, 23, {&q, &k, &v, nullptr, nullptr, nullptr, nullptr}).ok()) << "opset 23 has 6 inputs";
}

}  // namespace
}  // namespace vigil::cpu
