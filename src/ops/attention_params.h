// The attributes and geometry of ONNX Attention (opsets 23, 24, 25) and
// RotaryEmbedding (opset 23), read, checked and resolved once for shape
// inference (ops/attention.cpp) and every backend's kernels
// (src/backends/cpu/attention.cpp, rotary_embedding.cpp), so that all of
// them accept the same nodes and fail with the same messages.
//
// Errors are InvalidInputError("<node label>: <message>"), as a backend's
// ctx.Fail; attribute type errors are those of ops/attributes.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace vigil::ops {

// --- Attention -----------------------------------------------------------------

// The element strides with which a contiguous tensor of shape `shape`
// (rank <= 4) reads as `target` under numpy broadcasting (dims aligned on
// the right, missing ones 1): 0 along each dim it broadcasts. nullopt when
// it does not broadcast to `target`.
std::optional<std::array<int64_t, 4>> BroadcastStrides4(const std::vector<int64_t>& shape,
                                                        const std::array<int64_t, 4>& target);

// ai.vigil.Attention's mask (ir/fuse_attention.h) as every backend reads it:
// its strides over [batch, heads, seq, seq], after checking that it has
// QKV's dtype and broadcasts there. `described` is the mask as messages
// name it (runtime::Tensor::Describe).
Result<std::array<int64_t, 4>> AttentionMaskStrides(const ir::Node& node, const std::vector<int64_t>& shape,
                                                    ir::DataType mask, ir::DataType qkv, int64_t batch,
                                                    int64_t heads, int64_t seq, const std::string& described);

// What the optional 4th output (qk_matmul_output) holds.
enum class QkOutputMode : int {
  kRaw = 0,         // scale * Q K^T
  kSoftcapped = 1,  // after softcap, before the bias
  kBiased = 2,      // after softcap and the bias (mask, causal, window, padding)
  kSoftmax = 3,     // the attention probabilities (0 for a fully masked row)
};

struct AttentionAttrs {
  bool is_causal = false;
  std::optional<int64_t> q_num_heads;   // >= 1 when given
  std::optional<int64_t> kv_num_heads;  // >= 1 when given
  std::optional<float> scale;           // finite when given; default 1/sqrt(head_size)
  float softcap = 0;                    // 0: none; else > 0
  QkOutputMode qk_mode = QkOutputMode::kRaw;
  // One of float32, float16, float64, bfloat16 when given. Kernels may
  // compute in a wider type: it bounds the precision from below.
  std::optional<ir::DataType> softmax_precision;
  int64_t left_window = -1;   // opset 25; -1 unbounded, else >= 0
  int64_t right_window = -1;  // opset 25; -1 unbounded, else >= 0
};

Result<AttentionAttrs> ReadAttentionAttrs(const ir::Node& node, int64_t opset);

// The sizes of one Attention call, from the shapes of Q, K, V and (both or
// neither) past_key, past_value. 3-D inputs are [batch, seq, heads * size],
// 4-D ones [batch, heads, seq, size].
struct AttentionDims {
  bool rank3 = false;
  int64_t batch = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;  // divides q_heads
  int64_t q_seq = 0;
  int64_t kv_seq = 0;    // of K and V
  int64_t past_seq = 0;  // 0 without past_key
  int64_t total_seq = 0;  // past_seq + kv_seq
  int64_t head_size = 0;    // of Q and K
  int64_t v_head_size = 0;  // of V

  // Output shapes.
  std::vector<int64_t> y_shape() const;
  std::vector<int64_t> present_key_shape() const { return {batch, kv_heads, total_seq, head_size}; }
  std::vector<int64_t> present_value_shape() const { return {batch, kv_heads, total_seq, v_head_size}; }
  std::vector<int64_t> qk_shape() const { return {batch, q_heads, q_seq, total_seq}; }
};

Result<AttentionDims> ResolveAttentionDims(const ir::Node& node, int64_t opset, const AttentionAttrs& attrs,
                                           const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                                           const std::vector<int64_t>& v, const std::vector<int64_t>* past_key,
                                           const std::vector<int64_t>* past_value);

// The mask's dims aligned to [batch, q_heads, q_seq, total_seq]: rank 1 to 4,
// aligned at the right; each of the first three equal to the target or 1.
// Its last dim must equal total_seq (or be 1, broadcast) in opset 23; from
// opset 24 it may be shorter, the missing keys being masked out. Returns the
// four aligned dims (1 for the dims the mask lacks).
Result<std::vector<int64_t>> ResolveAttentionMask(const ir::Node& node, int64_t opset, const AttentionDims& dims,
                                                  const std::vector<int64_t>& mask);

// --- RotaryEmbedding -----------------------------------------------------------

struct RotaryAttrs {
  bool interleaved = false;
  int64_t num_heads = 0;   // 0 when absent; needed for 3-D input
  int64_t rotary_dim = 0;  // 0: the whole head
};

Result<RotaryAttrs> ReadRotaryAttrs(const ir::Node& node);

// X is [batch, heads, seq, head_size] or [batch, seq, heads * head_size].
struct RotaryDims {
  bool rank3 = false;
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t heads = 0;
  int64_t head_size = 0;
  int64_t rotary_dim = 0;  // even, <= head_size
};

Result<RotaryDims> ResolveRotaryDims(const ir::Node& node, const RotaryAttrs& attrs, const std::vector<int64_t>& x);

// --- LinearAttention (opset 27) -------------------------------------------------

struct LinearAttentionAttrs {
  int64_t q_num_heads = 0, kv_num_heads = 0;  // required; q a multiple of kv
  float scale = 0;                            // 0: 1 / sqrt(d_k)
  bool gated = false;                         // update_rule 'gated' or 'gated_delta': needs decay
  bool delta = false;                         // update_rule 'delta' or 'gated_delta': needs beta
};

Result<LinearAttentionAttrs> ReadLinearAttentionAttrs(const ir::Node& node);

// query [B, T, Hq * dk], key [B, T, Hkv * dk], value [B, T, Hkv * dv],
// past_state [B, Hkv, dk, dv], decay [B, T, Hkv] or [B, T, Hkv * dk], beta
// [B, T, Hkv] or [B, T, 1]. Absent optional inputs are null; decay and beta
// must be present exactly when the update rule uses them.
struct LinearAttentionDims {
  int64_t batch = 0, seq = 0, q_heads = 0, kv_heads = 0, dk = 0, dv = 0;
  bool decay_per_key = false;  // decay has one value per key dim (else per head)
  bool beta_shared = false;    // beta has one value for all heads
};

Result<LinearAttentionDims> ResolveLinearAttentionDims(const ir::Node& node, const LinearAttentionAttrs& attrs,
                                                       const std::vector<int64_t>& query,
                                                       const std::vector<int64_t>& key,
                                                       const std::vector<int64_t>& value,
                                                       const std::vector<int64_t>* past_state,
                                                       const std::vector<int64_t>* decay,
                                                       const std::vector<int64_t>* beta);

}  // namespace vigil::ops
