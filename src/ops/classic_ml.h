// Parameter resolution of the ai.onnx.ml TreeEnsemble operator (opset 5 of
// that domain), shared by its shape inference (classic_ml.cpp) and the CPU
// kernel (backends/cpu/classic_ml.cpp), so that both accept the same nodes and
// fail with the same messages.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "ir/dtype.h"
#include "ir/graph.h"

namespace vigil::ops {

inline constexpr std::string_view kOnnxMlDomain = "ai.onnx.ml";

enum class TreeAggregate { kAverage = 0, kSum = 1, kMin = 2, kMax = 3 };
enum class TreePostTransform { kNone = 0, kSoftmax = 1, kLogistic = 2, kSoftmaxZero = 3, kProbit = 4 };
enum class TreeMode : uint8_t { kLeq = 0, kLt = 1, kGte = 2, kGt = 3, kEq = 4, kNeq = 5, kMember = 6 };

// Where a branch leads: another interior node, or a leaf.
struct TreeEdge {
  int64_t index = 0;  // into nodes, or into the leaves when `leaf`
  bool leaf = false;
};

struct TreeBranch {
  TreeMode mode = TreeMode::kLeq;
  int64_t feature = 0;
  double split = 0;             // not used by kMember
  bool missing_tracks_true = false;
  size_t set_begin = 0, set_end = 0;  // kMember: its members, sorted, in TreeEnsembleParams::members
  TreeEdge on_true, on_false;
};

struct TreeEnsembleParams {
  std::vector<TreeBranch> nodes;
  std::vector<double> members;      // every set's members, set by set (each sorted)
  std::vector<double> leaf_weights;
  std::vector<int64_t> leaf_targets;
  std::vector<TreeEdge> roots;      // a root that is a single leaf is an edge to that leaf
  int64_t n_targets = 0;
  int64_t max_feature = -1;         // the largest feature id any node reads
  TreeAggregate aggregate = TreeAggregate::kSum;
  TreePostTransform post_transform = TreePostTransform::kNone;
  ir::DataType split_dtype = ir::DataType::kUndefined;  // of nodes_splits; X must have it
};

// Checks the attributes: the nodes_* lists and the leaf_* lists each of one
// length; modes 0 to 6; every node and leaf index in range; leaf target ids
// in [0, n_targets); one NaN-delimited set in membership_values per
// BRANCH_MEMBER node (taken in the order of the nodes); aggregate_function 0
// to 3 and post_transform 0 to 4; and that no tree reaches a node twice on
// one path (a cycle). n_targets defaults to the largest target id + 1.
Result<TreeEnsembleParams> ResolveTreeEnsemble(const ir::Node& node);

}  // namespace vigil::ops
