// The attention fusion's second pattern (ir/fuse_attention.h) on a real
// export: transformers' BertModel with 2 layers, hidden 64, 4 heads, batch
// and sequence dynamic, through torch.onnx as the BERT-base benchmark model
// is (tools/models/export_bert_tiny.py). Sessions with a fake device
// backend (CPU kernels on "device" tensors) run the pass as a GPU session
// would, and are checked against CPU-only sessions, which do not fuse, with
// attention masks that pad some keys and mask every key of a row.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "ir/fuse_attention.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/validate.h"
#include "onnx/reader.h"
#include "runtime/fake_device_backend.h"
#include "runtime/session.h"
#include "runtime/type_inference.h"
#include "vigil/float16.h"
#include "attention_fusion_test_util.h"

namespace vigil::runtime {
namespace {

using ir::DataType;
using namespace attention_test;

ir::Model TinyBert(DataType dt) {
  const std::string path = std::string(VIGIL_TEST_MODELS_DIR) + "/bert_tiny/bert_tiny_" +
                           (dt == DataType::kFloat16 ? "fp16" : "fp32") + ".onnx";
  auto m = onnx::ReadModel(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : ir::Model{};
}

// Batch 3, sequence 11: row 0 attends to every key, row 1 to the first 7
// (padding), row 2 to none (every score of its rows is -inf: the guard
// gives 0).
constexpr int64_t kBatch = 3, kSeq = 11;

std::vector<int64_t> AttentionMask() {
  std::vector<int64_t> mask(kBatch * kSeq, 0);
  for (int64_t t = 0; t < kSeq; ++t) {
    mask[t] = 1;
    mask[kSeq + t] = t < 7;
  }
  return mask;
}

// The last hidden state for the ids and mask above, as doubles.
std::vector<double> Hidden(const Session& s, DataType dt, const std::vector<int64_t>& mask) {
  std::vector<int64_t> ids(kBatch * kSeq);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37 + 5) % 64);
  auto out = s.Run({{"input_ids", DataType::kInt64, {kBatch, kSeq}, ids.data(), ids.size() * 8, ""},
                    {"attention_mask", DataType::kInt64, {kBatch, kSeq}, mask.data(), mask.size() * 8, ""}});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  std::vector<double> y;
  if (!out.ok()) return y;
  const Tensor& t = (*out)[0].tensor;
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{kBatch, kSeq, 64}));
  for (uint64_t i = 0; i < t.element_count(); ++i) {
    y.push_back(dt == DataType::kFloat16 ? Float16ToFloat(t.data<uint16_t>()[i]) : t.data<float>()[i]);
  }
  return y;
}

TEST(FuseProjectedAttention, BertSessionFusesEveryLayerWithTheSameOutput) {
  auto fused = MakeSession(TinyBert(DataType::kFloat32), /*device=*/true);
  auto plain = MakeSession(TinyBert(DataType::kFloat32), /*device=*/false);
  ASSERT_TRUE(fused && plain);
  const ir::Model& m = fused->model();
  EXPECT_EQ(Count(m, ir::kAttentionOp), 2u);
  EXPECT_EQ(Count(m, "Softmax"), 0u);
  EXPECT_EQ(Count(m, "IsNaN"), 0u);
  EXPECT_EQ(Count(plain->model(), "Softmax"), 2u);
  // Per layer: q, k, v, attention-out, FFN in and out projections, with q,
  // k and v packed into one.
  EXPECT_EQ(Count(m, ir::kMatMulBiasOp), 2u * 4u);
  // Both residual Adds of each layer fold into their products: the FFN's,
  // and the out-projection's, whose input is a Reshape to a run-time target
  // (its shape proven by symbolic evaluation through the MatMulBias).
  size_t with_residual = 0;
  for (const ir::Node& n : m.graph.nodes) with_residual += n.op_type == ir::kMatMulBiasOp && n.inputs.size() == 4;
  EXPECT_EQ(with_residual, 2u * 2u);
  for (const ir::Node& n : m.graph.nodes) {
    if (n.op_type != ir::kAttentionOp) continue;
    EXPECT_EQ(n.inputs.size(), 2u) << "the mask";
    EXPECT_EQ(n.FindAttribute("num_heads")->i, 4);
    EXPECT_FLOAT_EQ(n.FindAttribute("scale")->f, 0.25f);  // sqrt(1/4) on q and on k: 1/sqrt(16)
    EXPECT_EQ(n.FindAttribute("layout")->s, "bse");
    ASSERT_NE(n.FindAttribute(ir::kAttentionUndefinedRows), nullptr);
    EXPECT_EQ(n.FindAttribute(ir::kAttentionUndefinedRows)->s, "zero");
  }
  for (const NodePlacement& p : fused->placement()) {
    if (p.node.find("Attention") != std::string::npos) EXPECT_EQ(p.backend, "fakegpu") << p.node;
  }
  const std::vector<int64_t> mask = AttentionMask();
  const std::vector<double> got = Hidden(*fused, DataType::kFloat32, mask);
  const std::vector<double> want = Hidden(*plain, DataType::kFloat32, mask);
  EXPECT_LE(RelL2(got, want), 1e-5);
  // The fully masked batch row took the guard in both (no NaN).
  for (double v : got) ASSERT_FALSE(std::isnan(v));
}

TEST(FuseProjectedAttention, Float16BertWithinFloat16Tolerance) {
  auto fused = MakeSession(TinyBert(DataType::kFloat16), /*device=*/true);
  auto plain = MakeSession(TinyBert(DataType::kFloat16), /*device=*/false);
  ASSERT_TRUE(fused && plain);
  EXPECT_EQ(Count(fused->model(), ir::kAttentionOp), 2u);
  const std::vector<int64_t> mask = AttentionMask();
  // The chain rounds q, k (each scaled), the scores, the masked scores and P
  // to float16 op by op; the fused op rounds once.
  EXPECT_LE(RelL2(Hidden(*fused, DataType::kFloat16, mask), Hidden(*plain, DataType::kFloat16, mask)), 3e-3);
}

// The tiny BERT as the pass sees it in a device session: folded, MatMulBias
// fused, the attention fusion not yet run.
Prepared Unfused() {
  setenv("VIGIL_FUSE_ATTENTION", "0", 1);
  auto s = MakeSession(TinyBert(DataType::kFloat32), /*device=*/true);
  unsetenv("VIGIL_FUSE_ATTENTION");
  return Prepare(s ? s->model() : ir::Model{});
}

TEST(FuseProjectedAttention, AcceptorSeesThePackedQkvAndTheMask) {
  Prepared p = Unfused();
  int asked = 0;
  auto none = ir::FuseAttention(p.model, p.types, [&](const ir::Node& node, const std::vector<const ir::TypeInfo*>& in) {
    ++asked;
    EXPECT_EQ(node.op_type, ir::kAttentionOp);
    EXPECT_EQ(in.size(), 2u);
    if (in.size() == 2 && in[0] && in[1]) {
      EXPECT_EQ(in[0]->elem_type, DataType::kFloat32);
      EXPECT_EQ(in[0]->shape.dims.size(), 3u);
      if (in[0]->shape.dims.size() == 3) {
        EXPECT_EQ(in[0]->shape.dims[2].value, 3 * 64);
      }
      EXPECT_EQ(in[1]->elem_type, DataType::kFloat32);
    }
    return false;
  });
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(*none, 0u);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(Count(p.model, "Softmax"), 2u);
  EXPECT_EQ(Count(p.model, ir::kMatMulBiasOp), 2u * 6u);  // nothing packed
}

// Fuses `p` directly; the number of chains taken.
size_t Fuse(Prepared p) {
  auto fused = ir::FuseAttention(p.model, p.types);
  EXPECT_TRUE(fused.ok()) << fused.status().ToString();
  return fused.ok() ? *fused : 0;
}

TEST(FuseProjectedAttention, AppliedDirectlyTakesBothLayers) { EXPECT_EQ(Fuse(Unfused()), 2u); }

// A projection read by another node too must stay: its layer is left alone.
TEST(FuseProjectedAttention, LeavesALayerWhoseKeyProjectionIsReadElsewhere) {
  Prepared p = Unfused();
  std::string key;
  for (const ir::Node& n : p.model.graph.nodes) {
    if (n.op_type == ir::kMatMulBiasOp && n.name.find("layer.0/attention/self/key") != std::string::npos) {
      key = n.outputs[0];
    }
  }
  ASSERT_FALSE(key.empty());
  ir::ValueInfo extra;
  extra.name = key;
  extra.has_type = true;
  extra.type = p.types.at(key);
  p.model.graph.outputs.push_back(extra);
  EXPECT_EQ(Fuse(p), 1u);
}

// Without the guard (P read by the MatMul directly) a layer still fuses, and
// keeps ONNX's NaN for an undefined row (undefined_rows left at "nan").
TEST(FuseProjectedAttention, TakesAChainWithoutTheGuard) {
  Prepared p = Unfused();
  // Where(IsNaN(P), 0, P) -> P: the MatMul reads the Softmax.
  std::unordered_map<std::string, std::string> unguarded;
  for (const ir::Node& n : p.model.graph.nodes) {
    if (n.op_type == "Where" && n.inputs.size() == 3 && n.name.find("attention/self/Where_1") != std::string::npos) {
      unguarded[n.outputs[0]] = n.inputs[2];
    }
  }
  ASSERT_EQ(unguarded.size(), 2u);
  for (ir::Node& n : p.model.graph.nodes) {
    for (std::string& in : n.inputs) {
      if (auto it = unguarded.find(in); it != unguarded.end()) in = it->second;
    }
  }
  std::vector<ir::Node> kept;
  for (ir::Node& n : p.model.graph.nodes) {
    if (!unguarded.count(n.outputs[0]) && n.op_type != "IsNaN") kept.push_back(std::move(n));
  }
  p.model.graph.nodes = std::move(kept);
  ASSERT_EQ(Fuse(p), 2u);
  for (const ir::Node& n : p.model.graph.nodes) {
    if (n.op_type == ir::kAttentionOp) {
      EXPECT_EQ(n.FindAttribute(ir::kAttentionUndefinedRows), nullptr);
    }
  }
}

// The packed projection's new weights get their types, as load-time
// inference would give them: a device backend places the node by them.
TEST(FuseProjectedAttention, RecordsThePackedWeightsTypes) {
  Prepared p = Unfused();
  auto fused = ir::FuseAttention(p.model, p.types);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ASSERT_EQ(*fused, 2u);
  size_t packed = 0;
  for (const ir::Node& n : p.model.graph.nodes) {
    if (n.op_type != ir::kMatMulBiasOp || n.name.find("PackedQKV") == std::string::npos) continue;
    ++packed;
    for (size_t i = 0; i < 3; ++i) {
      auto t = p.types.find(n.inputs[i]);
      ASSERT_NE(t, p.types.end()) << n.inputs[i];
      EXPECT_EQ(t->second.elem_type, DataType::kFloat32) << n.inputs[i];
    }
    EXPECT_EQ(p.types.at(n.inputs[1]).shape.dims.size(), 2u);
    EXPECT_EQ(p.types.at(n.inputs[1]).shape.dims[1].value, 3 * 64);
    EXPECT_EQ(p.types.at(n.inputs[2]).shape.dims[0].value, 3 * 64);
    auto qkv = p.types.find(n.outputs[0]);
    ASSERT_NE(qkv, p.types.end());
    EXPECT_EQ(qkv->second.shape.dims.back().value, 3 * 64);
  }
  EXPECT_EQ(packed, 2u);
}

}  // namespace
}  // namespace vigil::runtime
