// Attention's, RotaryEmbedding's and LinearAttention's attributes and geometry, shared by the
// backends (see attention_params.h).
#include "ops/attention_params.h"

#include <cmath>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ops/attributes.h"

namespace vigil::ops {

std::optional<std::array<int64_t, 4>> BroadcastStrides4(const std::vector<int64_t>& shape,
                                                        const std::array<int64_t, 4>& target) {
  if (shape.size() > 4) return std::nullopt;
  std::array<int64_t, 4> strides{};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    const int64_t k = i - (4 - static_cast<int>(shape.size()));  // shape's axis, or < 0 (a missing 1)
    const int64_t dim = k >= 0 ? shape[static_cast<size_t>(k)] : 1;
    if (dim != target[i] && dim != 1) return std::nullopt;
    strides[i] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
  return strides;
}
namespace {

template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidInputError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

std::string Dims(const std::vector<int64_t>& d) { return fmt::format("[{}]", fmt::join(d, ",")); }

// An optional attribute that, when given, must be at least `min`.
Result<std::optional<int64_t>> OptionalInt(const ir::Node& node, const char* name, int64_t min) {
  if (!HasAttr(node, name)) return std::optional<int64_t>{};
  VIGIL_ASSIGN_OR_RETURN(int64_t v, IntAttr(node, name, 0));
  if (v < min) return Fail(node, "{} is {}; it must be at least {}", name, v, min);
  return std::optional<int64_t>(v);
}

}  // namespace

Result<std::array<int64_t, 4>> AttentionMaskStrides(const ir::Node& node, const std::vector<int64_t>& shape,
                                                    ir::DataType mask, ir::DataType qkv, int64_t batch,
                                                    int64_t heads, int64_t seq, const std::string& described) {
  if (mask != qkv) {
    return Fail(node, "input 1 (the mask) is {}; it must have QKV's dtype {}", described, ir::DataTypeName(qkv));
  }
  std::optional<std::array<int64_t, 4>> strides = BroadcastStrides4(shape, {batch, heads, seq, seq});
  if (!strides) {
    return Fail(node, "input 1 (the mask) is {}; it does not broadcast to [B, num_heads, S, S] = [{}, {}, {}, {}]",
                described, batch, heads, seq, seq);
  }
  return *strides;
}

Result<AttentionAttrs> ReadAttentionAttrs(const ir::Node& node, int64_t opset) {
  AttentionAttrs a;
  VIGIL_ASSIGN_OR_RETURN(int64_t causal, IntAttr(node, "is_causal", 0));
  if (causal != 0 && causal != 1) return Fail(node, "is_causal is {}; it must be 0 or 1", causal);
  a.is_causal = causal == 1;
  VIGIL_ASSIGN_OR_RETURN(a.q_num_heads, OptionalInt(node, "q_num_heads", 1));
  VIGIL_ASSIGN_OR_RETURN(a.kv_num_heads, OptionalInt(node, "kv_num_heads", 1));
  if (HasAttr(node, "scale")) {
    VIGIL_ASSIGN_OR_RETURN(float scale, FloatAttr(node, "scale", 1.0f));
    if (!std::isfinite(scale)) return Fail(node, "scale is {}; it must be finite", scale);
    a.scale = scale;
  }
  VIGIL_ASSIGN_OR_RETURN(a.softcap, FloatAttr(node, "softcap", 0.0f));
  if (!(a.softcap >= 0) || !std::isfinite(a.softcap)) {
    return Fail(node, "softcap is {}; it must be finite and >= 0 (0: no soft cap)", a.softcap);
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t mode, IntAttr(node, "qk_matmul_output_mode", 0));
  if (mode < 0 || mode > 3) return Fail(node, "qk_matmul_output_mode is {}; it must be 0, 1, 2 or 3", mode);
  a.qk_mode = static_cast<QkOutputMode>(mode);
  if (HasAttr(node, "softmax_precision")) {
    VIGIL_ASSIGN_OR_RETURN(int64_t p, IntAttr(node, "softmax_precision", 1));
    const auto t = static_cast<ir::DataType>(p);
    if (t != ir::DataType::kFloat32 && t != ir::DataType::kFloat16 && t != ir::DataType::kFloat64 &&
        t != ir::DataType::kBfloat16) {
      return Fail(node, "softmax_precision is {}; it must be 1 (float32), 10 (float16), 11 (float64) or 16 (bfloat16)",
                  p);
    }
    a.softmax_precision = t;
  }
  if (opset >= 25) {
    VIGIL_ASSIGN_OR_RETURN(a.left_window, IntAttr(node, "left_window_size", -1));
    VIGIL_ASSIGN_OR_RETURN(a.right_window, IntAttr(node, "right_window_size", -1));
    if (a.left_window < -1) return Fail(node, "left_window_size is {}; it must be -1 or >= 0", a.left_window);
    if (a.right_window < -1) return Fail(node, "right_window_size is {}; it must be -1 or >= 0", a.right_window);
  }
  return a;
}

std::vector<int64_t> AttentionDims::y_shape() const {
  if (rank3) return {batch, q_seq, q_heads * v_head_size};
  return {batch, q_heads, q_seq, v_head_size};
}

Result<AttentionDims> ResolveAttentionDims(const ir::Node& node, int64_t opset, const AttentionAttrs& attrs,
                                           const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                                           const std::vector<int64_t>& v, const std::vector<int64_t>* past_key,
                                           const std::vector<int64_t>* past_value) {
  if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4)) {
    return Fail(node, "Q {}, K {} and V {} must all be 3-D or all 4-D", Dims(q), Dims(k), Dims(v));
  }
  AttentionDims d;
  d.rank3 = q.size() == 3;
  d.batch = q[0];
  if (d.rank3) {
    if (!attrs.q_num_heads || !attrs.kv_num_heads) {
      return Fail(node, "3-D Q, K and V need the attributes q_num_heads and kv_num_heads");
    }
    d.q_heads = *attrs.q_num_heads;
    d.kv_heads = *attrs.kv_num_heads;
    if (q[2] % d.q_heads != 0) {
      return Fail(node, "Q {} has hidden size {}, not a multiple of q_num_heads {}", Dims(q), q[2], d.q_heads);
    }
    if (k[2] % d.kv_heads != 0 || v[2] % d.kv_heads != 0) {
      return Fail(node, "K {} and V {} need hidden sizes that are multiples of kv_num_heads {}", Dims(k), Dims(v),
                  d.kv_heads);
    }
    d.q_seq = q[1];
    d.kv_seq = k[1];
    d.head_size = q[2] / d.q_heads;
    d.v_head_size = v[2] / d.kv_heads;
    if (k[2] / d.kv_heads != d.head_size) {
      return Fail(node, "K {} has head size {} (hidden size / kv_num_heads {}), Q {} has {}; they must match", Dims(k),
                  k[2] / d.kv_heads, d.kv_heads, Dims(q), d.head_size);
    }
    if (v[1] != d.kv_seq) return Fail(node, "K {} and V {} have different sequence lengths", Dims(k), Dims(v));
  } else {
    if (opset >= 25 && (attrs.q_num_heads || attrs.kv_num_heads)) {
      return Fail(node, "q_num_heads and kv_num_heads must not be set for 4-D Q, K and V (opset {})", opset);
    }
    d.q_heads = q[1];
    d.kv_heads = k[1];
    d.q_seq = q[2];
    d.kv_seq = k[2];
    d.head_size = q[3];
    d.v_head_size = v[3];
    if (attrs.q_num_heads && *attrs.q_num_heads != d.q_heads) {
      return Fail(node, "q_num_heads is {}, but Q {} has {} heads", *attrs.q_num_heads, Dims(q), d.q_heads);
    }
    if (attrs.kv_num_heads && *attrs.kv_num_heads != d.kv_heads) {
      return Fail(node, "kv_num_heads is {}, but K {} has {} heads", *attrs.kv_num_heads, Dims(k), d.kv_heads);
    }
    if (k[3] != d.head_size) {
      return Fail(node, "K {} has head size {}, Q {} has {}; they must match", Dims(k), k[3], Dims(q), d.head_size);
    }
    if (v[1] != d.kv_heads || v[2] != d.kv_seq) {
      return Fail(node, "V {} must have K {}'s heads and sequence length", Dims(v), Dims(k));
    }
  }
  if (k[0] != d.batch || v[0] != d.batch) {
    return Fail(node, "Q {}, K {} and V {} have different batch sizes", Dims(q), Dims(k), Dims(v));
  }
  if (d.q_heads < 1 || d.kv_heads < 1 || d.q_heads % d.kv_heads != 0) {
    return Fail(node, "{} query heads and {} key/value heads: both must be at least 1 and the key/value heads must "
                "divide the query heads", d.q_heads, d.kv_heads);
  }
  if ((past_key == nullptr) != (past_value == nullptr)) {
    return Fail(node, "past_key and past_value must be given together");
  }
  if (past_key) {
    const std::vector<int64_t> want_k = {d.batch, d.kv_heads, -1, d.head_size};
    const std::vector<int64_t> want_v = {d.batch, d.kv_heads, -1, d.v_head_size};
    auto matches = [](const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
      if (got.size() != 4) return false;
      for (size_t i = 0; i < 4; ++i) {
        if (want[i] >= 0 && got[i] != want[i]) return false;
      }
      return true;
    };
    if (!matches(*past_key, want_k) || !matches(*past_value, want_v) || (*past_key)[2] != (*past_value)[2]) {
      return Fail(node,
                  "past_key {} and past_value {} must be [batch {}, kv heads {}, past length, {} and {}] with one "
                  "past length",
                  Dims(*past_key), Dims(*past_value), d.batch, d.kv_heads, d.head_size, d.v_head_size);
    }
    d.past_seq = (*past_key)[2];
  }
  d.total_seq = d.past_seq + d.kv_seq;
  return d;
}

Result<std::vector<int64_t>> ResolveAttentionMask(const ir::Node& node, int64_t opset, const AttentionDims& dims,
                                                  const std::vector<int64_t>& mask) {
  const std::vector<int64_t> target = {dims.batch, dims.q_heads, dims.q_seq, dims.total_seq};
  if (mask.empty() || mask.size() > 4) {
    return Fail(node, "attn_mask {} must have rank 1 to 4, broadcasting to {}", Dims(mask), Dims(target));
  }
  std::vector<int64_t> aligned(4 - mask.size(), 1);
  aligned.insert(aligned.end(), mask.begin(), mask.end());
  bool ok = true;
  for (size_t i = 0; i < 3; ++i) ok = ok && (aligned[i] == target[i] || aligned[i] == 1);
  const int64_t keys = aligned[3];
  const bool keys_ok = opset >= 24 ? keys <= dims.total_seq : keys == dims.total_seq || keys == 1;
  if (!ok || !keys_ok) {
    return Fail(node, "attn_mask {} does not broadcast to [batch, q_heads, q_seq, total_seq] = {}{}", Dims(mask),
                Dims(target),
                opset >= 24 ? " (its last dim may be shorter than total_seq, never longer)" : "");
  }
  return aligned;
}

Result<RotaryAttrs> ReadRotaryAttrs(const ir::Node& node) {
  RotaryAttrs a;
  VIGIL_ASSIGN_OR_RETURN(int64_t interleaved, IntAttr(node, "interleaved", 0));
  if (interleaved != 0 && interleaved != 1) return Fail(node, "interleaved is {}; it must be 0 or 1", interleaved);
  a.interleaved = interleaved == 1;
  VIGIL_ASSIGN_OR_RETURN(a.num_heads, IntAttr(node, "num_heads", 0));
  if (a.num_heads < 0) return Fail(node, "num_heads is {}; it must be at least 1", a.num_heads);
  VIGIL_ASSIGN_OR_RETURN(a.rotary_dim, IntAttr(node, "rotary_embedding_dim", 0));
  if (a.rotary_dim < 0) return Fail(node, "rotary_embedding_dim is {}; it must be >= 0", a.rotary_dim);
  return a;
}

Result<RotaryDims> ResolveRotaryDims(const ir::Node& node, const RotaryAttrs& attrs, const std::vector<int64_t>& x) {
  RotaryDims d;
  if (x.size() == 3) {
    if (attrs.num_heads < 1) return Fail(node, "a 3-D input {} needs the attribute num_heads", Dims(x));
    if (x[2] % attrs.num_heads != 0) {
      return Fail(node, "input 0 {} has hidden size {}, not a multiple of num_heads {}", Dims(x), x[2],
                  attrs.num_heads);
    }
    d.rank3 = true;
    d.batch = x[0];
    d.seq = x[1];
    d.heads = attrs.num_heads;
    d.head_size = x[2] / attrs.num_heads;
  } else if (x.size() == 4) {
    // num_heads, if given, is not needed: the heads are X's dim 1.
    d.batch = x[0];
    d.heads = x[1];
    d.seq = x[2];
    d.head_size = x[3];
  } else {
    return Fail(node, "input 0 {} must be 4-D [batch, heads, seq, head_size] or 3-D [batch, seq, hidden]", Dims(x));
  }
  d.rotary_dim = attrs.rotary_dim == 0 ? d.head_size : attrs.rotary_dim;
  if (d.rotary_dim % 2 != 0 || d.rotary_dim > d.head_size) {
    return Fail(node, "the rotary dim is {}{}; it must be even and at most the head size {}", d.rotary_dim,
                attrs.rotary_dim == 0 ? " (the head size)" : " (rotary_embedding_dim)", d.head_size);
  }
  return d;
}

Result<LinearAttentionAttrs> ReadLinearAttentionAttrs(const ir::Node& node) {
  LinearAttentionAttrs a;
  if (!HasAttr(node, "q_num_heads") || !HasAttr(node, "kv_num_heads")) {
    return Fail(node, "the attributes q_num_heads and kv_num_heads are required");
  }
  VIGIL_ASSIGN_OR_RETURN(a.q_num_heads, IntAttr(node, "q_num_heads", 0));
  VIGIL_ASSIGN_OR_RETURN(a.kv_num_heads, IntAttr(node, "kv_num_heads", 0));
  if (a.q_num_heads < 1 || a.kv_num_heads < 1 || a.q_num_heads % a.kv_num_heads != 0) {
    return Fail(node, "q_num_heads {} must be a positive multiple of kv_num_heads {}", a.q_num_heads,
                a.kv_num_heads);
  }
  VIGIL_ASSIGN_OR_RETURN(a.scale, FloatAttr(node, "scale", 0.0f));
  if (!std::isfinite(a.scale)) return Fail(node, "scale is {}; it must be finite", a.scale);
  VIGIL_ASSIGN_OR_RETURN(std::string rule, StringAttr(node, "update_rule", "gated_delta"));
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
    return Fail(node, "update_rule is '{}'; it must be 'linear', 'gated', 'delta' or 'gated_delta'", rule);
  }
  a.gated = rule == "gated" || rule == "gated_delta";
  a.delta = rule == "delta" || rule == "gated_delta";
  VIGIL_ASSIGN_OR_RETURN(int64_t chunk, IntAttr(node, "chunk_size", 64));  // a tuning hint only
  if (chunk < 1) return Fail(node, "chunk_size is {}; it must be at least 1", chunk);
  return a;
}

Result<LinearAttentionDims> ResolveLinearAttentionDims(const ir::Node& node, const LinearAttentionAttrs& attrs,
                                                       const std::vector<int64_t>& query,
                                                       const std::vector<int64_t>& key,
                                                       const std::vector<int64_t>& value,
                                                       const std::vector<int64_t>* past_state,
                                                       const std::vector<int64_t>* decay,
                                                       const std::vector<int64_t>* beta) {
  if (query.size() != 3 || key.size() != 3 || value.size() != 3) {
    return Fail(node, "query {}, key {} and value {} must all be 3-D [batch, seq, heads * head_size]", Dims(query),
                Dims(key), Dims(value));
  }
  LinearAttentionDims d;
  d.batch = query[0];
  d.seq = query[1];
  d.q_heads = attrs.q_num_heads;
  d.kv_heads = attrs.kv_num_heads;
  if (query[2] % d.q_heads != 0 || query[2] == 0) {
    return Fail(node, "query {} has hidden size {}, not a positive multiple of q_num_heads {}", Dims(query), query[2],
                d.q_heads);
  }
  d.dk = query[2] / d.q_heads;
  if (value[2] % d.kv_heads != 0) {
    return Fail(node, "value {} has hidden size {}, not a multiple of kv_num_heads {}", Dims(value), value[2],
                d.kv_heads);
  }
  d.dv = value[2] / d.kv_heads;
  if (key[0] != d.batch || key[1] != d.seq || key[2] != d.kv_heads * d.dk) {
    return Fail(node, "key is {}, expected [{},{},{}] (kv_num_heads {} x d_k {} of query {})", Dims(key), d.batch,
                d.seq, d.kv_heads * d.dk, d.kv_heads, d.dk, Dims(query));
  }
  if (value[0] != d.batch || value[1] != d.seq) {
    return Fail(node, "value {} must have query's batch {} and sequence length {}", Dims(value), d.batch, d.seq);
  }
  if (past_state) {
    const std::vector<int64_t> want = {d.batch, d.kv_heads, d.dk, d.dv};
    if (*past_state != want) return Fail(node, "past_state is {}, expected {}", Dims(*past_state), Dims(want));
  }
  if (attrs.gated != (decay != nullptr)) {
    return Fail(node, "the update rule {} the input decay", attrs.gated ? "needs" : "does not take");
  }
  if (attrs.delta != (beta != nullptr)) {
    return Fail(node, "the update rule {} the input beta", attrs.delta ? "needs" : "does not take");
  }
  if (decay) {
    const auto& g = *decay;
    if (g.size() != 3 || g[0] != d.batch || g[1] != d.seq || (g[2] != d.kv_heads && g[2] != d.kv_heads * d.dk)) {
      return Fail(node, "decay is {}, expected [{},{},{}] or [{},{},{}]", Dims(g), d.batch, d.seq, d.kv_heads, d.batch,
                  d.seq, d.kv_heads * d.dk);
    }
    // With d_k == 1 both forms are one value per head.
    d.decay_per_key = g[2] == d.kv_heads * d.dk && d.dk != 1;
  }
  if (beta) {
    const auto& b = *beta;
    if (b.size() != 3 || b[0] != d.batch || b[1] != d.seq || (b[2] != d.kv_heads && b[2] != 1)) {
      return Fail(node, "beta is {}, expected [{},{},{}] or [{},{},1]", Dims(b), d.batch, d.seq, d.kv_heads, d.batch,
                  d.seq);
    }
    d.beta_shared = b[2] == 1 && d.kv_heads != 1;
  }
  return d;
}

}  // namespace vigil::ops
