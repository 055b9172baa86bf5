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
#include "vigil/float16.h"
#include "ir/attention_layout.h"
#include "ir/dtype.h"
#include "ir/fuse_attention.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/validate.h"
#include "onnx/reader.h"
#include "ops/shape_helpers.h"
#include "runtime/fake_device_backend.h"
#include "runtime/session.h"
#include "runtime/type_inference.h"
#include "attention_fusion_test_util.h"

namespace vigil::runtime {
namespace {

using ir::DataType;
using namespace attention_test;

const std::string kLayer0 = "/encoder/layers/encoder_layer_0/self_attention/";

ir::Model Tiny(DataType dt) {
  const std::string path = std::string(VIGIL_TEST_MODELS_DIR) + "/vit_tiny/vit_tiny_" +
                           (dt == DataType::kFloat16 ? "fp16" : "fp32") + ".onnx";
  auto m = onnx::ReadModel(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : ir::Model{};
}

// Sets VIGIL_FUSE_ATTENTION for one scope.
class FuseAttentionEnv {
 public:
  explicit FuseAttentionEnv(const char* value) { setenv("VIGIL_FUSE_ATTENTION", value, 1); }
  ~FuseAttentionEnv() { unsetenv("VIGIL_FUSE_ATTENTION"); }
};

// Sets VIGIL_ATTENTION_BATCH_FIRST for one scope.
class BatchFirstEnv {
 public:
  explicit BatchFirstEnv(const char* value) { setenv("VIGIL_ATTENTION_BATCH_FIRST", value, 1); }
  ~BatchFirstEnv() { unsetenv("VIGIL_ATTENTION_BATCH_FIRST"); }
};

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

TEST(FuseAttention, DeviceSessionFusesEveryLayerWithTheSameLogits) {
  BatchFirstEnv sequence_first("0");  // the follow-up pass has its own tests below
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

// The session passes the device backend's support check as `accept`: what it
// refuses (float32 on CUDA) stays unfused, and it sees the node it would get.
TEST(FuseAttention, AcceptorDecidesPerMatch) {
  Prepared refused = Prepare(Unfused());
  int asked = 0;
  auto none = ir::FuseAttention(refused.model, refused.types, [&](const ir::Node& node, const std::vector<const ir::TypeInfo*>& inputs) {
    ++asked;
    EXPECT_EQ(node.op_type, ir::kAttentionOp);
    EXPECT_EQ(inputs.size(), 1u);  // qkv; no mask
    EXPECT_EQ(inputs[0]->elem_type, DataType::kFloat32);
    EXPECT_NE(node.FindAttribute("num_heads"), nullptr);
    return false;
  });
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(asked, 2);
  size_t softmax = 0;
  for (const ir::Node& n : refused.model.graph.nodes) softmax += n.op_type == "Softmax";
  EXPECT_EQ(softmax, 2u);

  Prepared first_only = Prepare(Unfused());
  int seen = 0;
  auto one = ir::FuseAttention(first_only.model, first_only.types,
                               [&](const ir::Node&, const std::vector<const ir::TypeInfo*>&) { return seen++ == 0; });
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, 1u);
}

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


// ---- Batch-first attention (ir/attention_layout.h) ----

size_t CountLayout(const ir::Model& m, const std::string& layout) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) {
    const ir::Attribute* a = node.op_type == ir::kAttentionOp ? node.FindAttribute("layout") : nullptr;
    n += a && a->s == layout;
  }
  return n;
}

// Gemms of the attention blocks (the classifier head is one too).
size_t AttentionGemms(const ir::Model& m) {
  size_t n = 0;
  for (const ir::Node& node : m.graph.nodes) {
    n += node.op_type == "Gemm" && node.name.find("self_attention") != std::string::npos;
  }
  return n;
}

void ExpectBatchFirst(DataType dt, double tolerance) {
  auto fused = MakeSession(Tiny(dt), /*device=*/true);
  auto plain = MakeSession(Tiny(dt), /*device=*/false);
  std::unique_ptr<Session> sbe;
  {
    BatchFirstEnv off("0");
    sbe = MakeSession(Tiny(dt), /*device=*/true);
  }
  ASSERT_TRUE(fused && plain && sbe);
  const ir::Model& m = fused->model();
  EXPECT_EQ(Count(m, ir::kAttentionOp), 2u);
  EXPECT_EQ(CountLayout(m, "bse"), 2u);
  EXPECT_EQ(CountLayout(sbe->model(), "sbe"), 2u);
  EXPECT_EQ(Count(sbe->model(), "Transpose") - Count(m, "Transpose"), 4u);
  EXPECT_EQ(AttentionGemms(sbe->model()), 2u);
  EXPECT_EQ(AttentionGemms(m), 0u);
  // Both projections per layer are MatMulBias now.
  EXPECT_EQ(Count(m, ir::kMatMulBiasOp) - Count(sbe->model(), ir::kMatMulBiasOp), 2u);
  EXPECT_TRUE(ir::ValidateModel(m).ok());
  EXPECT_LE(RelL2(Features(*fused, dt), Features(*plain, dt)), tolerance);
}

// Both residual Adds of each layer go into the MatMulBias before them
// (ir::FuseResidualAdd, after the batch-first pass); VIGIL_FUSE_RESIDUAL=0
// keeps them.
void ExpectResidualFused(DataType dt, double tolerance) {
  auto fused = MakeSession(Tiny(dt), /*device=*/true);
  auto plain = MakeSession(Tiny(dt), /*device=*/false);
  std::unique_ptr<Session> kept;
  {
    setenv("VIGIL_FUSE_RESIDUAL", "0", 1);
    kept = MakeSession(Tiny(dt), /*device=*/true);
    unsetenv("VIGIL_FUSE_RESIDUAL");
  }
  ASSERT_TRUE(fused && plain && kept);
  const ir::Model& m = fused->model();
  EXPECT_EQ(Count(kept->model(), "Add") - Count(m, "Add"), 4u);
  EXPECT_EQ(kept->model().graph.nodes.size() - m.graph.nodes.size(), 4u);
  size_t residual = 0;
  for (const ir::Node& n : m.graph.nodes) residual += n.op_type == ir::kMatMulBiasOp && n.inputs.size() == 4;
  EXPECT_EQ(residual, 4u);
  EXPECT_TRUE(ir::ValidateModel(m).ok());
  EXPECT_LE(RelL2(Features(*fused, dt), Features(*plain, dt)), tolerance);
}

TEST(FuseResidualAdd, TinyVitLosesBothResidualAddsOfEachLayer) { ExpectResidualFused(DataType::kFloat32, 1e-5); }
TEST(FuseResidualAdd, TinyVitFloat16WithinFloat16Tolerance) { ExpectResidualFused(DataType::kFloat16, 2e-3); }

TEST(AttentionBatchFirst, DeviceSessionDropsBothLayoutTransposesPerLayer) {
  ExpectBatchFirst(DataType::kFloat32, 1e-5);
}
TEST(AttentionBatchFirst, Float16ModelWithinFloat16Tolerance) { ExpectBatchFirst(DataType::kFloat16, 2e-3); }

// The model as the batch-first pass sees it: attention fused, "sbe".
ir::Model SbeFused() {
  BatchFirstEnv off("0");
  auto s = MakeSession(Tiny(DataType::kFloat32), /*device=*/true);
  return s ? s->model() : ir::Model{};
}

size_t BatchFirst(const ir::Model& edited) {
  Prepared p = Prepare(edited);
  auto relaid = ir::AttentionBatchFirst(p.model, p.types);
  EXPECT_TRUE(relaid.ok()) << relaid.status().ToString();
  if (!relaid.ok()) return 0;
  EXPECT_EQ(CountLayout(p.model, "bse"), *relaid);
  EXPECT_EQ(CountLayout(p.model, "sbe"), 2u - *relaid);
  return *relaid;
}

TEST(AttentionBatchFirst, AppliedDirectlyTakesBothLayers) { EXPECT_EQ(BatchFirst(SbeFused()), 2u); }

TEST(AttentionBatchFirst, RecordsTheTypesInferenceGives) {
  Prepared p = Prepare(SbeFused());
  auto relaid = ir::AttentionBatchFirst(p.model, p.types);
  ASSERT_TRUE(relaid.ok()) << relaid.status().ToString();
  ASSERT_EQ(*relaid, 2u);
  ASSERT_TRUE(ir::ValidateModel(p.model).ok());
  Prepared again = Prepare(p.model);
  // Symbol names differ between inference runs; numbers and rank must not.
  auto dims = [](const ir::TypeInfo& t) {
    std::string s(ir::DataTypeName(t.elem_type));
    for (const ir::Dim& d : t.shape.dims) s += "," + (d.is_known() ? std::to_string(*d.value) : std::string("?"));
    return s;
  };
  size_t checked = 0;
  for (const ir::Node& n : p.model.graph.nodes) {
    const std::string& v = n.outputs[0];
    if (v.find("/batch_first") == std::string::npos && n.name.find("/batch_first") == std::string::npos) continue;
    ASSERT_TRUE(p.types.count(v) && again.types.count(v)) << v;
    EXPECT_EQ(dims(p.types.at(v)), dims(again.types.at(v))) << v;
    EXPECT_EQ(p.types.at(v).shape.dims[1].value, std::optional<int64_t>(17)) << v;  // S: 16 patches + class token
    ++checked;
  }
  EXPECT_EQ(checked, 2u * 3u);  // per layer qkv', y' and z
}

TEST(AttentionBatchFirst, LeavesALayerWhoseTransposeHasAnotherReader) {
  ir::Model m = SbeFused();
  ASSERT_NE(Producer(m, kLayer0 + "Transpose_output_0"), nullptr);
  m.graph.nodes.push_back(ir::Node{"probe", "Identity", "", "", {kLayer0 + "Transpose_output_0"}, {"sbe"}, {}, ""});
  ir::ValueInfo out;
  out.name = "sbe";
  m.graph.outputs.push_back(out);
  EXPECT_EQ(BatchFirst(m), 1u);
}

TEST(AttentionBatchFirst, LeavesNoWeightBehindWhenNoLayerIsTaken) {
  ir::Model m = SbeFused();
  // Layer 0's Transpose is read elsewhere, layer 1's Gemm weight is not constant.
  m.graph.nodes.push_back(ir::Node{"probe", "Identity", "", "", {kLayer0 + "Transpose_output_0"}, {"sbe"}, {}, ""});
  ir::ValueInfo out;
  out.name = "sbe";
  m.graph.outputs.push_back(out);
  const std::string layer1 = "/encoder/layers/encoder_layer_1/self_attention/";
  ir::Node* gemm = Producer(m, layer1 + "Gemm_output_0");
  ASSERT_NE(gemm, nullptr);
  const_cast<ir::Attribute*>(gemm->FindAttribute("transB"))->i = 0;
  Prepared p = Prepare(m);
  const size_t initializers = p.model.graph.initializers.size(), nodes = p.model.graph.nodes.size();
  auto relaid = ir::AttentionBatchFirst(p.model, p.types);
  ASSERT_TRUE(relaid.ok());
  EXPECT_EQ(*relaid, 0u);
  EXPECT_EQ(p.model.graph.initializers.size(), initializers);
  EXPECT_EQ(p.model.graph.nodes.size(), nodes);
}

TEST(AttentionBatchFirst, LeavesAGemmWithoutTransB) {
  ir::Model m = SbeFused();
  ir::Node* gemm = Producer(m, kLayer0 + "Gemm_output_0");
  ASSERT_NE(gemm, nullptr);
  ASSERT_NE(gemm->FindAttribute("transB"), nullptr);
  const_cast<ir::Attribute*>(gemm->FindAttribute("transB"))->i = 0;  // the weight is square: still valid
  EXPECT_EQ(BatchFirst(m), 1u);
}

TEST(AttentionBatchFirst, LeavesAGemmWhoseWeightIsNotConstant) {
  ir::Model m = SbeFused();
  ir::Node* gemm = Producer(m, kLayer0 + "Gemm_output_0");
  ASSERT_NE(gemm, nullptr);
  gemm->inputs[1] = "runtime_weight";
  ir::ValueInfo in;
  in.name = "runtime_weight";
  in.has_type = true;
  in.type = ops::TensorType(DataType::kFloat32, std::vector<int64_t>{64, 64});
  m.graph.inputs.push_back(in);
  EXPECT_EQ(BatchFirst(m), 1u);
}

TEST(AttentionBatchFirst, EnvironmentSwitchKeepsSequenceFirst) {
  BatchFirstEnv off("0");
  auto s = MakeSession(Tiny(DataType::kFloat32), /*device=*/true);
  ASSERT_TRUE(s);
  EXPECT_EQ(CountLayout(s->model(), "sbe"), 2u);
  EXPECT_EQ(CountLayout(s->model(), "bse"), 0u);
}


// Manual check on a real export: VIGIL_BATCH_FIRST_MODEL=<fp16 ViT .onnx
// with input_0 [N,3,224,224]> runs it fused (batch-first on and off) and on
// the CPU alone, and prints node counts and the relative L2 of the features
// the head reads.
TEST(AttentionBatchFirst, ManualModelFromEnvironment) {
  const char* path = std::getenv("VIGIL_BATCH_FIRST_MODEL");
  if (!path) GTEST_SKIP() << "set VIGIL_BATCH_FIRST_MODEL to a float16 ViT export to run this check";
  auto load = [&] {
    auto m = onnx::ReadModel(path);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(*m) : ir::Model{};
  };
  auto bse = MakeSession(load(), /*device=*/true);
  auto plain = MakeSession(load(), /*device=*/false);
  std::unique_ptr<Session> sbe;
  {
    BatchFirstEnv off("0");
    sbe = MakeSession(load(), /*device=*/true);
  }
  ASSERT_TRUE(bse && plain && sbe);
  for (const auto* s : {plain.get(), sbe.get(), bse.get()}) {
    std::printf("nodes %zu, Transpose %zu, Gemm %zu, MatMulBias %zu, Attention sbe %zu bse %zu\n",
                s->model().graph.nodes.size(), Count(s->model(), "Transpose"), Count(s->model(), "Gemm"),
                Count(s->model(), ir::kMatMulBiasOp), CountLayout(s->model(), "sbe"), CountLayout(s->model(), "bse"));
  }
  const size_t n = 2 * 3 * 224 * 224;
  std::mt19937 rng(7);
  std::normal_distribution<float> u(0, 1);
  std::vector<uint16_t> x(n);
  for (uint16_t& v : x) v = FloatToFloat16(u(rng));
  auto features = [&](const Session& s) {
    std::string head;
    for (const ir::Node& node : s.model().graph.nodes) {
      if (node.outputs[0] == s.outputs()[0].name) head = node.inputs[0];
    }
    auto out = s.RunKeepingAll({{"input_0", DataType::kFloat16, {2, 3, 224, 224}, x.data(), n * 2, ""}});
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    std::vector<double> y;
    for (const NamedTensor& v : out.ok() ? *out : std::vector<NamedTensor>{}) {
      if (v.name != head) continue;
      for (size_t i = 0; i < v.tensor.element_count(); ++i) y.push_back(Float16ToFloat(v.tensor.data<uint16_t>()[i]));
    }
    return y;
  };
  const std::vector<double> want = features(*plain), got_sbe = features(*sbe), got_bse = features(*bse);
  std::printf("sbe vs CPU: ");
  RelL2(got_sbe, want);
  std::printf("bse vs CPU: ");
  const double err = RelL2(got_bse, want);
  std::printf("bse vs sbe: ");
  RelL2(got_bse, got_sbe);
  EXPECT_LE(err, 2e-3);
}

}  // namespace
}  // namespace vigil::runtime
