// The attention fusion on a real torch.onnx export: a 2-layer torchvision
// VisionTransformer (hidden 64, 4 heads, 32x32 images, dynamic batch N,
// opset 17, constant folding), exported exactly as the ViT-B/16 benchmark
// model is. Sessions with a fake device backend (CPU kernels on "device"
// tensors) run the pass as a GPU session would, and are checked against
// CPU-only sessions, which do not fuse; the pass itself is also applied
// directly to edited graphs for the patterns it must and must not take.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <unordered_set>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "base/float16.h"
#include "ir/fuse_attention.h"
#include "ir/validate.h"
#include "onnx/reader.h"
#include "ops/shape_helpers.h"
#include "runtime/fake_device_backend.h"
#include "runtime/session.h"
#include "runtime/type_inference.h"

namespace vigil::runtime {
namespace {

using ir::DataType;

const std::string kLayer0 = "/encoder/layers/encoder_layer_0/self_attention/";

ir::Model Tiny(DataType dt) {
  const std::string path = std::string(VIGIL_TEST_MODELS_DIR) + "/vit_tiny/vit_tiny_" +
                           (dt == DataType::kFloat16 ? "fp16" : "fp32") + ".onnx";
  auto m = onnx::ReadModel(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : ir::Model{};
}

SessionOptions Options(bool device) {
  SessionOptions o;
  if (device) o.backends.push_back(std::make_shared<testing::FakeDeviceBackend>());
  o.backends.push_back(cpu::MakeCpuBackend());
  return o;
}

// Sets VIGIL_FUSE_ATTENTION for one scope.
class FuseAttentionEnv {
 public:
  explicit FuseAttentionEnv(const char* value) { setenv("VIGIL_FUSE_ATTENTION", value, 1); }
  ~FuseAttentionEnv() { unsetenv("VIGIL_FUSE_ATTENTION"); }
};

std::unique_ptr<Session> MakeSession(ir::Model m, bool device) {
  auto s = Session::Create(std::move(m), Options(device));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(*s) : nullptr;
}

size_t Count(const ir::Model& m, const std::string& op) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) n += node.op_type == op;
  return n;
}

const ir::Node* Find(const ir::Model& m, const std::string& op) {
  for (const ir::Node& node : m.graph.nodes) {
    if (node.op_type == op) return &node;
  }
  return nullptr;
}

// The features the classifier head reads (its weights are zero-initialised
// in torchvision, so the logits themselves are all 0), for a batch of 3
// images (deterministic), as doubles.
std::vector<double> Features(const Session& s, DataType dt) {
  const size_t n = 3 * 3 * 32 * 32;
  std::mt19937 rng(7);
  std::normal_distribution<float> u(0, 1);
  std::vector<float> x(n);
  for (float& v : x) v = u(rng);
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = FloatToFloat16(x[i]);
  const void* data = dt == DataType::kFloat16 ? static_cast<const void*>(h.data()) : x.data();
  std::string features;
  for (const ir::Node& node : s.model().graph.nodes) {
    if (node.outputs[0] == s.outputs()[0].name) features = node.inputs[0];
  }
  auto out = s.RunKeepingAll({{"input_0", dt, {3, 3, 32, 32}, data, n * (dt == DataType::kFloat16 ? 2 : 4), ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  std::vector<double> y;
  for (const NamedTensor& v : *out) {
    if (v.name != features) continue;
    const Tensor& t = v.tensor;
    for (size_t i = 0; i < t.element_count(); ++i) {
      y.push_back(dt == DataType::kFloat16 ? Float16ToFloat(t.data<uint16_t>()[i]) : t.data<float>()[i]);
    }
  }
  EXPECT_EQ(y.size(), 3u * 64u) << "the head's input '" << features << "'";
  return y;
}

double RelL2(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  const double err = got.empty() || std::isnan(diff) || norm == 0 ? INFINITY : std::sqrt(diff / norm);
  std::printf("relative L2 %.3g over %zu values\n", err, got.size());
  return err;
}

TEST(FuseAttention, DeviceSessionFusesEveryLayerWithTheSameLogits) {
  auto fused = MakeSession(Tiny(DataType::kFloat32), /*device=*/true);
  auto plain = MakeSession(Tiny(DataType::kFloat32), /*device=*/false);
  ASSERT_TRUE(fused && plain);
  const ir::Model& m = fused->model();
  EXPECT_EQ(Count(m, ir::kAttentionOp), 2u);
  EXPECT_EQ(Count(m, "Softmax"), 0u);
  EXPECT_EQ(Count(plain->model(), "Softmax"), 2u);
  // Per layer 6 Transposes go: the split's, q's, k's and v's head
  // transposes, k^T and the one back to [S,B,H,D] (now a Reshape view).
  EXPECT_EQ(Count(plain->model(), "Transpose") - Count(m, "Transpose"), 12u);
  const ir::Node* att = Find(m, ir::kAttentionOp);
  ASSERT_NE(att, nullptr);
  EXPECT_EQ(att->FindAttribute("num_heads")->i, 4);
  EXPECT_FLOAT_EQ(att->FindAttribute("scale")->f, 0.25f);  // 1/sqrt(16)
  EXPECT_EQ(att->FindAttribute("layout")->s, "sbe");
  for (const NodePlacement& p : fused->placement()) {
    if (p.node.find("Attention") != std::string::npos) EXPECT_EQ(p.backend, "fakegpu") << p.node;
  }
  std::vector<double> a = Features(*fused, DataType::kFloat32), b = Features(*plain, DataType::kFloat32);
  const double err = RelL2(a, b);
  EXPECT_LE(err, 1e-5);
}

TEST(FuseAttention, Float16ModelFusesWithinFloat16Tolerance) {
  auto fused = MakeSession(Tiny(DataType::kFloat16), /*device=*/true);
  auto plain = MakeSession(Tiny(DataType::kFloat16), /*device=*/false);
  ASSERT_TRUE(fused && plain);
  EXPECT_EQ(Count(fused->model(), ir::kAttentionOp), 2u);
  EXPECT_EQ(Count(fused->model(), "Softmax"), 0u);
  // The chain rounds q, k, scores, P and the product to float16 op by op;
  // the fused kernel rounds once: two layers of that difference.
  const double err = RelL2(Features(*fused, DataType::kFloat16), Features(*plain, DataType::kFloat16));
  EXPECT_LE(err, 2e-3);
}

TEST(FuseAttention, EnvironmentSwitchTurnsThePassOff) {
  FuseAttentionEnv off("0");
  auto s = MakeSession(Tiny(DataType::kFloat32), /*device=*/true);
  ASSERT_TRUE(s);
  EXPECT_EQ(Count(s->model(), ir::kAttentionOp), 0u);
  EXPECT_EQ(Count(s->model(), "Softmax"), 2u);
}

// The model as the pass sees it in a device session (folded, MatMulBias
// fused), with its inferred types.
struct Prepared {
  ir::Model model;
  std::unordered_map<std::string, ir::TypeInfo> types;
};

Prepared Prepare(const ir::Model& edited) {
  Prepared p{edited, {}};
  auto order = ir::TopologicalOrder(p.model.graph);
  EXPECT_TRUE(order.ok()) << order.status().ToString();
  if (!order.ok()) return p;
  auto inferred = InferGraph(p.model, *order, {}, FoldingPolicy{});
  EXPECT_TRUE(inferred.ok()) << inferred.status().ToString();
  if (inferred.ok()) p.types = std::move(inferred->types);
  return p;
}

ir::Model Unfused() {
  FuseAttentionEnv off("0");
  auto s = MakeSession(Tiny(DataType::kFloat32), /*device=*/true);
  return s ? s->model() : ir::Model{};
}

ir::Node* Producer(ir::Model& m, const std::string& value) {
  for (ir::Node& n : m.graph.nodes) {
    if (!n.outputs.empty() && n.outputs[0] == value) return &n;
  }
  return nullptr;
}

size_t Fuse(const ir::Model& edited) {
  Prepared p = Prepare(edited);
  auto fused = ir::FuseAttention(p.model, p.types);
  EXPECT_TRUE(fused.ok()) << fused.status().ToString();
  return fused.ok() ? *fused : 0;
}

// Removes nodes without a path to a graph output (what an edit left dead).
void Prune(ir::Model& m) {
  for (bool changed = true; changed;) {
    changed = false;
    std::unordered_set<std::string> read;
    for (const ir::Node& n : m.graph.nodes) read.insert(n.inputs.begin(), n.inputs.end());
    for (const ir::ValueInfo& v : m.graph.outputs) read.insert(v.name);
    std::vector<ir::Node> kept;
    for (ir::Node& n : m.graph.nodes) {
      if (read.count(n.outputs[0])) {
        kept.push_back(std::move(n));
      } else {
        changed = true;
      }
    }
    m.graph.nodes = std::move(kept);
  }
}

ir::Tensor FloatConstant(const std::string& name, float v) {
  auto data = std::make_shared<float>(v);
  ir::Tensor t;
  t.name = name;
  t.dtype = DataType::kFloat32;
  t.storage = ir::Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(data.get()), 4};
  t.keep_alive = data;
  return t;
}

TEST(FuseAttention, AppliedDirectlyFusesBothLayers) { EXPECT_EQ(Fuse(Unfused()), 2u); }

TEST(FuseAttention, LeavesAChainWithAnotherOutputPermutation) {
  ir::Model m = Unfused();
  ir::Node* tr = Producer(m, kLayer0 + "Transpose_6_output_0");
  ASSERT_NE(tr, nullptr);
  ASSERT_EQ(tr->FindAttribute("perm")->ints, (std::vector<int64_t>{2, 0, 1, 3}));
  const_cast<ir::Attribute*>(tr->FindAttribute("perm"))->ints = {2, 1, 0, 3};
  EXPECT_EQ(Fuse(m), 1u);
}

TEST(FuseAttention, LeavesAChainWithAnotherSplitPermutation) {
  ir::Model m = Unfused();
  ir::Node* tr = Producer(m, kLayer0 + "Transpose_2_output_0");  // q's [S,B*H,D] -> [B*H,S,D]
  ASSERT_NE(tr, nullptr);
  const_cast<ir::Attribute*>(tr->FindAttribute("perm"))->ints = {0, 1, 2};
  EXPECT_EQ(Fuse(m), 1u);
}

TEST(FuseAttention, LeavesASoftmaxThatIsAlsoAnOutput) {
  ir::Model m = Unfused();
  m.graph.nodes.push_back(ir::Node{"probe", "Identity", "", "", {kLayer0 + "Softmax_output_0"}, {"probs"}, {}, ""});
  ir::ValueInfo out;
  out.name = "probs";
  m.graph.outputs.push_back(out);
  EXPECT_EQ(Fuse(m), 1u);
}

TEST(FuseAttention, LeavesAScaleThatIsNotConstant) {
  ir::Model m = Unfused();
  ir::Node* mul = Producer(m, kLayer0 + "Mul_1_output_0");  // q * sqrt(scale)
  ASSERT_NE(mul, nullptr);
  mul->inputs[1] = "runtime_scale";
  ir::ValueInfo in;
  in.name = "runtime_scale";
  in.has_type = true;
  in.type = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{1});
  m.graph.inputs.push_back(in);
  Prune(m);
  EXPECT_EQ(Fuse(m), 1u);
}

TEST(FuseAttention, LeavesAChainWhoseValueIsReadElsewhere) {
  ir::Model m = Unfused();
  // k' [B,H,D,S] also feeds an output: the chain must keep it.
  m.graph.nodes.push_back(ir::Node{"probe", "Identity", "", "", {kLayer0 + "Transpose_5_output_0"}, {"k"}, {}, ""});
  ir::ValueInfo out;
  out.name = "k";
  m.graph.outputs.push_back(out);
  EXPECT_EQ(Fuse(m), 1u);
}

// Layer 0's scale moved: both Muls removed, `insert` puts one scale node back
// (on q or on the scores); the fused session must still match the CPU one.
void ExpectScaleVariantFuses(bool on_scores, bool divide) {
  ir::Model m = Unfused();
  ir::Node* mm = Producer(m, kLayer0 + "MatMul_1_output_0");
  ASSERT_NE(mm, nullptr);
  mm->inputs = {kLayer0 + "Reshape_6_output_0", kLayer0 + "Transpose_5_output_0"};  // unscaled q, k'
  m.graph.initializers.push_back(FloatConstant("c", divide ? 4.0f : 0.25f));
  ir::Node scale{"scale", divide ? "Div" : "Mul", "", "", {}, {"scaled"}, {}, ""};
  if (on_scores) {
    scale.inputs = {kLayer0 + "MatMul_1_output_0", "c"};
    Producer(m, kLayer0 + "Softmax_output_0")->inputs[0] = "scaled";
  } else {
    scale.inputs = {kLayer0 + "Reshape_6_output_0", "c"};
    mm->inputs[0] = "scaled";
  }
  m.graph.nodes.push_back(scale);
  Prune(m);
  EXPECT_EQ(Fuse(m), 2u);
  auto fused = MakeSession(m, /*device=*/true);
  auto plain = MakeSession(m, /*device=*/false);
  ASSERT_TRUE(fused && plain);
  ASSERT_EQ(Count(fused->model(), ir::kAttentionOp), 2u);
  EXPECT_LE(RelL2(Features(*fused, DataType::kFloat32), Features(*plain, DataType::kFloat32)), 1e-5);
}

TEST(FuseAttention, TakesOneMulOnQ) { ExpectScaleVariantFuses(/*on_scores=*/false, /*divide=*/false); }
TEST(FuseAttention, TakesOneDivOnTheScores) { ExpectScaleVariantFuses(/*on_scores=*/true, /*divide=*/true); }

}  // namespace
}  // namespace vigil::runtime
