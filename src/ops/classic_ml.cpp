// Schemas and shape inference of the ai.onnx.ml ops vigil implements, and
// TreeEnsemble's parameter resolution (classic_ml.h):
//   ArrayFeatureExtractor (1): X[..., C], int64 indices Y -> X[..., Y]; a 1-D X
//     gives [1, |Y|], as onnxruntime does.
//   Binarizer (1): X > threshold ? 1 : 0, in X's dtype.
//   TreeEnsemble (5): X[N, F] -> Y[N, n_targets], the leaves the trees reach
//     aggregated per target, then post-transformed.
#include "ops/classic_ml.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"
#include "vigil/float16.h"

namespace vigil::ops {
namespace {

template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidModelError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

bool IsTreeFloat(ir::DataType t) {
  return t == ir::DataType::kFloat32 || t == ir::DataType::kFloat64 || t == ir::DataType::kFloat16;
}

// A float tensor attribute's elements, widened exactly to double.
Result<std::vector<double>> FloatTensorAttr(const ir::Node& node, std::string_view name, bool required,
                                            ir::DataType* dtype = nullptr) {
  if (!HasAttr(node, name)) {
    if (required) return Fail(node, "required attribute {} is missing", name);
    return std::vector<double>{};
  }
  VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* t, TensorAttr(node, name));
  if (!IsTreeFloat(t->dtype)) {
    return Fail(node, "attribute {} is a {} tensor, expected float, double or float16", name,
                ir::DataTypeName(t->dtype));
  }
  const std::optional<uint64_t> count = t->ElementCount();
  const size_t width = t->dtype == ir::DataType::kFloat64 ? 8 : t->dtype == ir::DataType::kFloat32 ? 4 : 2;
  if (!count || t->bytes.size() != *count * width) {
    return Fail(node, "attribute {} holds {} bytes, expected {} elements of {} bytes", name, t->bytes.size(),
                count ? *count : 0, width);
  }
  std::vector<double> out(*count);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = t->bytes.data() + i * width;
    if (width == 8) {
      std::memcpy(&out[i], p, 8);
    } else if (width == 4) {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, p, 2);
      out[i] = Float16ToFloat(h);
    }
  }
  if (dtype) *dtype = t->dtype;
  return out;
}

Result<std::vector<uint8_t>> ModesAttr(const ir::Node& node) {
  VIGIL_ASSIGN_OR_RETURN(const ir::Tensor* t, TensorAttr(node, "nodes_modes"));
  if (t->dtype != ir::DataType::kUint8) {
    return Fail(node, "attribute nodes_modes is a {} tensor, expected uint8", ir::DataTypeName(t->dtype));
  }
  const std::optional<uint64_t> count = t->ElementCount();
  if (!count || t->bytes.size() != *count) {
    return Fail(node, "attribute nodes_modes holds {} bytes, expected {}", t->bytes.size(), count ? *count : 0);
  }
  return std::vector<uint8_t>(t->bytes.begin(), t->bytes.end());
}

// Each tree reaches no node twice on one path (otherwise a walk down it would
// not end). Depth-first from every root, iteratively: a node is on the path
// from its first visit until both its branches are done.
Status CheckAcyclic(const ir::Node& node, const TreeEnsembleParams& p) {
  enum : uint8_t { kNew, kOnPath, kDone };
  std::vector<uint8_t> state(p.nodes.size(), kNew);
  struct Frame {
    int64_t node;
    int next;  // 0: true branch next, 1: false branch next, 2: done
  };
  std::vector<Frame> stack;
  for (size_t r = 0; r < p.roots.size(); ++r) {
    if (p.roots[r].leaf || state[static_cast<size_t>(p.roots[r].index)] == kDone) continue;
    stack.push_back({p.roots[r].index, 0});
    state[static_cast<size_t>(p.roots[r].index)] = kOnPath;
    while (!stack.empty()) {
      Frame& f = stack.back();
      if (f.next == 2) {
        state[static_cast<size_t>(f.node)] = kDone;
        stack.pop_back();
        continue;
      }
      const TreeBranch& b = p.nodes[static_cast<size_t>(f.node)];
      const TreeEdge e = f.next == 0 ? b.on_true : b.on_false;
      ++f.next;
      if (e.leaf) continue;
      uint8_t& s = state[static_cast<size_t>(e.index)];
      if (s == kOnPath) {
        return Fail(node, "tree {} (root node {}) leads from node {} back to node {}, a cycle", r, p.roots[r].index,
                    f.node, e.index);
      }
      if (s == kNew) {
        s = kOnPath;
        stack.push_back({e.index, 0});
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<TreeEnsembleParams> ResolveTreeEnsemble(const ir::Node& node) {
  TreeEnsembleParams p;
  VIGIL_ASSIGN_OR_RETURN(int64_t aggregate, IntAttr(node, "aggregate_function", 1));
  if (aggregate < 0 || aggregate > 3) {
    return Fail(node, "attribute aggregate_function is {}, expected 0 (AVERAGE), 1 (SUM), 2 (MIN) or 3 (MAX)",
                aggregate);
  }
  p.aggregate = static_cast<TreeAggregate>(aggregate);
  VIGIL_ASSIGN_OR_RETURN(int64_t post, IntAttr(node, "post_transform", 0));
  if (post < 0 || post > 4) {
    return Fail(node, "attribute post_transform is {}, expected 0 (NONE), 1 (SOFTMAX), 2 (LOGISTIC), "
                "3 (SOFTMAX_ZERO) or 4 (PROBIT)", post);
  }
  p.post_transform = static_cast<TreePostTransform>(post);

  VIGIL_ASSIGN_OR_RETURN(std::vector<double> splits, FloatTensorAttr(node, "nodes_splits", true, &p.split_dtype));
  VIGIL_ASSIGN_OR_RETURN(std::vector<uint8_t> modes, ModesAttr(node));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> features, RequiredIntsAttr(node, "nodes_featureids"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> true_ids, RequiredIntsAttr(node, "nodes_truenodeids"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> false_ids, RequiredIntsAttr(node, "nodes_falsenodeids"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> true_leafs, RequiredIntsAttr(node, "nodes_trueleafs"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> false_leafs, RequiredIntsAttr(node, "nodes_falseleafs"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> missing, IntsAttr(node, "nodes_missing_value_tracks_true"));
  ir::DataType weights_dtype = ir::DataType::kUndefined;
  VIGIL_ASSIGN_OR_RETURN(p.leaf_weights, FloatTensorAttr(node, "leaf_weights", true, &weights_dtype));
  VIGIL_ASSIGN_OR_RETURN(p.leaf_targets, RequiredIntsAttr(node, "leaf_targetids"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> roots, RequiredIntsAttr(node, "tree_roots"));
  ir::DataType members_dtype = p.split_dtype;
  VIGIL_ASSIGN_OR_RETURN(std::vector<double> membership, FloatTensorAttr(node, "membership_values", false,
                                                                          &members_dtype));

  const size_t n = modes.size();
  const std::pair<const char*, size_t> lengths[] = {
      {"nodes_splits", splits.size()},         {"nodes_featureids", features.size()},
      {"nodes_truenodeids", true_ids.size()},  {"nodes_falsenodeids", false_ids.size()},
      {"nodes_trueleafs", true_leafs.size()},  {"nodes_falseleafs", false_leafs.size()}};
  for (const auto& [name, size] : lengths) {
    if (size != n) return Fail(node, "attribute {} has {} entries, expected {} (one per entry of nodes_modes)", name, size, n);
  }
  if (!missing.empty() && missing.size() != n) {
    return Fail(node, "attribute nodes_missing_value_tracks_true has {} entries, expected {} (one per node)",
                missing.size(), n);
  }
  if (p.leaf_targets.size() != p.leaf_weights.size()) {
    return Fail(node, "attribute leaf_targetids has {} entries and leaf_weights {}; they must match",
                p.leaf_targets.size(), p.leaf_weights.size());
  }
  if (weights_dtype != p.split_dtype || members_dtype != p.split_dtype) {
    return Fail(node, "attributes nodes_splits ({}), leaf_weights ({}) and membership_values ({}) must have one dtype",
                ir::DataTypeName(p.split_dtype), ir::DataTypeName(weights_dtype), ir::DataTypeName(members_dtype));
  }
  if (roots.empty()) return Fail(node, "attribute tree_roots is empty; an ensemble needs at least one tree");

  int64_t largest_target = -1;
  for (size_t i = 0; i < p.leaf_targets.size(); ++i) {
    if (p.leaf_targets[i] < 0) return Fail(node, "attribute leaf_targetids[{}] is {}, expected >= 0", i, p.leaf_targets[i]);
    largest_target = std::max(largest_target, p.leaf_targets[i]);
  }
  VIGIL_ASSIGN_OR_RETURN(p.n_targets, IntAttr(node, "n_targets", largest_target + 1));
  if (p.n_targets < 1 || largest_target >= p.n_targets) {
    return Fail(node, "attribute n_targets is {}, but leaf_targetids go up to {}; expected n_targets > every target id",
                p.n_targets, largest_target);
  }

  const int64_t num_nodes = static_cast<int64_t>(n), num_leaves = static_cast<int64_t>(p.leaf_weights.size());
  auto edge = [&](const char* which, size_t i, int64_t id, int64_t is_leaf) -> Result<TreeEdge> {
    const int64_t limit = is_leaf ? num_leaves : num_nodes;
    if (id < 0 || id >= limit) {
      return Fail(node, "attribute nodes_{}nodeids[{}] is {}, expected 0 to {} (an index into the {})", which, i, id,
                  limit - 1, is_leaf ? "leaves" : "nodes");
    }
    return TreeEdge{id, is_leaf != 0};
  };
  size_t member_at = 0;  // the next unread entry of membership_values
  p.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TreeBranch& b = p.nodes[i];
    if (modes[i] > 6) return Fail(node, "attribute nodes_modes[{}] is {}, expected 0 to 6", i, modes[i]);
    b.mode = static_cast<TreeMode>(modes[i]);
    if (features[i] < 0) return Fail(node, "attribute nodes_featureids[{}] is {}, expected >= 0", i, features[i]);
    b.feature = features[i];
    p.max_feature = std::max(p.max_feature, b.feature);
    b.split = splits[i];
    b.missing_tracks_true = !missing.empty() && missing[i] != 0;
    VIGIL_ASSIGN_OR_RETURN(b.on_true, edge("true", i, true_ids[i], true_leafs[i]));
    VIGIL_ASSIGN_OR_RETURN(b.on_false, edge("false", i, false_ids[i], false_leafs[i]));
    if (b.mode == TreeMode::kMember) {
      b.set_begin = p.members.size();
      while (member_at < membership.size() && !std::isnan(membership[member_at])) {
        p.members.push_back(membership[member_at++]);
      }
      if (member_at == membership.size()) {
        return Fail(node, "attribute membership_values has no NaN-terminated set for node {} (mode BRANCH_MEMBER); "
                    "expected one set per such node, in node order", i);
      }
      ++member_at;  // the NaN ending this set
      b.set_end = p.members.size();
      std::sort(p.members.begin() + static_cast<std::ptrdiff_t>(b.set_begin), p.members.end());
    }
  }
  if (member_at != membership.size()) {
    return Fail(node, "attribute membership_values holds more sets than there are BRANCH_MEMBER nodes");
  }
  for (size_t r = 0; r < roots.size(); ++r) {
    if (roots[r] < 0 || roots[r] >= num_nodes) {
      return Fail(node, "attribute tree_roots[{}] is {}, expected 0 to {}", r, roots[r], num_nodes - 1);
    }
    const TreeBranch& b = p.nodes[static_cast<size_t>(roots[r])];
    // A single-leaf tree: a root whose branches are the same leaf.
    const bool single_leaf = b.on_true.leaf && b.on_false.leaf && b.on_true.index == b.on_false.index;
    p.roots.push_back(single_leaf ? b.on_true : TreeEdge{roots[r], false});
  }
  VIGIL_RETURN_IF_ERROR(CheckAcyclic(node, p));
  return p;
}

namespace {

Status InferArrayFeatureExtractor(InferenceContext& ctx) {
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::TypeInfo* y = ctx.input_type(1);
  if (y && y->elem_type != ir::DataType::kInt64 && y->elem_type != ir::DataType::kUndefined) {
    return ctx.Fail("input Y (indices) is {}, expected int64", ir::DataTypeName(y->elem_type));
  }
  const ir::DataType dtype = x ? x->elem_type : ir::DataType::kUndefined;
  if (!HasRank(x) || !HasRank(y)) {
    ctx.set_output(0, TensorTypeUnknownShape(dtype));
    return Status::Ok();
  }
  if (x->shape.dims.empty()) return ctx.Fail("input X is a scalar, expected rank >= 1");
  ir::Dim count = ir::Dim::Known(1);
  for (const ir::Dim& d : y->shape.dims) {
    if (!d.is_known()) {
      count = ctx.NewSymbol();
      break;
    }
    count = ir::Dim::Known(*count.value * *d.value);
  }
  std::vector<ir::Dim> dims;
  if (x->shape.dims.size() == 1) {
    dims = {ir::Dim::Known(1), count};
  } else {
    for (size_t i = 0; i + 1 < x->shape.dims.size(); ++i) {
      const ir::Dim& d = x->shape.dims[i];
      dims.push_back(d.is_known() || d.is_symbolic() ? d : ctx.NewSymbol());
    }
    dims.push_back(count);
  }
  ctx.set_output(0, TensorType(dtype, std::move(dims)));
  return Status::Ok();
}

Status InferBinarizer(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(float threshold, FloatAttr(ctx.node(), "threshold", 0.0f));
  (void)threshold;
  const ir::TypeInfo* x = ctx.input_type(0);
  if (!x) {
    ctx.set_output(0, TensorTypeUnknownShape(ir::DataType::kUndefined));
    return Status::Ok();
  }
  ctx.set_output(0, *x);
  return Status::Ok();
}

Status InferTreeEnsemble(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(TreeEnsembleParams p, ResolveTreeEnsemble(ctx.node()));
  const ir::TypeInfo* x = ctx.input_type(0);
  const ir::DataType dtype = x ? x->elem_type : p.split_dtype;
  if (dtype != ir::DataType::kUndefined && dtype != p.split_dtype) {
    return ctx.Fail("input X is {}, but the splits (attribute nodes_splits) are {}; they must have one dtype",
                    ir::DataTypeName(dtype), ir::DataTypeName(p.split_dtype));
  }
  if (!HasRank(x)) {
    ctx.set_output(0, TensorTypeUnknownShape(p.split_dtype));
    return Status::Ok();
  }
  const auto& dims = x->shape.dims;
  if (dims.size() != 2) return ctx.Fail("input X has rank {}, expected 2 ([N, F])", dims.size());
  if (dims[1].is_known() && *dims[1].value <= p.max_feature) {
    return ctx.Fail("input X has {} features, but the trees read feature {}", *dims[1].value, p.max_feature);
  }
  const ir::Dim rows = dims[0].is_known() || dims[0].is_symbolic() ? dims[0] : ctx.NewSymbol();
  ctx.set_output(0, TensorType(p.split_dtype, std::vector<ir::Dim>{rows, ir::Dim::Known(p.n_targets)}));
  return Status::Ok();
}

const OpSchema kClassicMlSchemas[] = {
    {"ai.onnx.ml", "ArrayFeatureExtractor", 1, kLatest, 2, 2, 1, 1, InferArrayFeatureExtractor},
    {"ai.onnx.ml", "Binarizer", 1, kLatest, 1, 1, 1, 1, InferBinarizer},
    {"ai.onnx.ml", "TreeEnsemble", 5, kLatest, 1, 1, 1, 1, InferTreeEnsemble},
};

}  // namespace

std::span<const OpSchema> ClassicMlSchemas() { return kClassicMlSchemas; }

}  // namespace vigil::ops
