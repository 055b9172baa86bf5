// The recurrent ops' attributes, shared by the backends (see recurrent_params.h).
#include "ops/recurrent_params.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "ops/attributes.h"

namespace vigil::ops {
namespace {

template <typename... Args>
Status Fail(const ir::Node& node, fmt::format_string<Args...> f, Args&&... args) {
  return InvalidInputError("{}: {}", NodeLabel(node), fmt::format(f, std::forward<Args>(args)...));
}

struct ActivationInfo {
  const char* name;  // lower case
  RecurrentActKind kind;
  bool uses_alpha;
  bool uses_beta;
  double default_alpha;  // the defaults of the ONNX ops of the same name
  double default_beta;
};

using K = RecurrentActKind;
const ActivationInfo kActivations[] = {
    {"relu", K::kRelu, false, false, 0, 0},
    {"tanh", K::kTanh, false, false, 0, 0},
    {"sigmoid", K::kSigmoid, false, false, 0, 0},
    {"affine", K::kAffine, true, true, 1.0, 0.0},
    {"leakyrelu", K::kLeakyRelu, true, false, 0.01, 0},
    {"thresholdedrelu", K::kThresholdedRelu, true, false, 1.0, 0},
    {"scaledtanh", K::kScaledTanh, true, true, 1.0, 1.0},
    {"hardsigmoid", K::kHardSigmoid, true, true, 0.2, 0.5},
    {"elu", K::kElu, true, false, 1.0, 0},
    {"softsign", K::kSoftsign, false, false, 0, 0},
    {"softplus", K::kSoftplus, false, false, 0, 0},
};

Status ReadActivations(const ir::Node& node, const std::vector<std::string>& defaults, RecurrentAttrs& attrs) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> names, StringsAttr(node, "activations"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<float> alphas, FloatsAttr(node, "activation_alpha"));
  VIGIL_ASSIGN_OR_RETURN(std::vector<float> betas, FloatsAttr(node, "activation_beta"));
  const size_t per_dir = defaults.size(), want = per_dir * static_cast<size_t>(attrs.num_dir);
  if (names.empty()) {
    for (int64_t d = 0; d < attrs.num_dir; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == per_dir && want != per_dir) {
    std::vector<std::string> once = names;  // one set given for both directions
    names.insert(names.end(), once.begin(), once.end());
  } else if (names.size() != want) {
    return Fail(node, "activations lists {} functions, {} with {} direction(s) needs {}", names.size(),
                node.op_type, attrs.num_dir, want);
  }
  size_t next_alpha = 0, next_beta = 0;
  for (const std::string& name : names) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& a : kActivations) {
      if (lower == a.name) info = &a;
    }
    if (!info) return Fail(node, "unknown activation function '{}'", name);
    RecurrentActivation act{info->kind, info->default_alpha, info->default_beta};
    if (info->uses_alpha && next_alpha < alphas.size()) act.alpha = alphas[next_alpha++];
    if (info->uses_beta && next_beta < betas.size()) act.beta = betas[next_beta++];
    attrs.acts.push_back(act);
  }
  attrs.acts_per_dir = static_cast<int64_t>(per_dir);
  return Status::Ok();
}

}  // namespace

Result<RecurrentAttrs> ReadRecurrentAttrs(const ir::Node& node, RecurrentCell cell, bool read_layout) {
  using C = RecurrentCell;
  RecurrentAttrs attrs;
  attrs.gates = cell == C::kRnn ? 1 : cell == C::kGru ? 3 : 4;
  VIGIL_ASSIGN_OR_RETURN(std::string direction, StringAttr(node, "direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return Fail(node, "direction '{}' is not forward, reverse or bidirectional", direction);
  }
  attrs.num_dir = direction == "bidirectional" ? 2 : 1;
  attrs.reverse = direction == "reverse";
  if (read_layout) {
    VIGIL_ASSIGN_OR_RETURN(attrs.layout, IntAttr(node, "layout", 0));
    if (attrs.layout != 0 && attrs.layout != 1) return Fail(node, "layout must be 0 or 1, got {}", attrs.layout);
  }
  if (HasAttr(node, "clip")) {
    VIGIL_ASSIGN_OR_RETURN(float clip, FloatAttr(node, "clip", 0));
    if (!(clip > 0)) return Fail(node, "clip must be positive, got {}", clip);
    attrs.clip = clip;
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t input_forget, IntAttr(node, "input_forget", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t lbr, IntAttr(node, "linear_before_reset", 0));
  attrs.input_forget = cell == C::kLstm && input_forget != 0;
  attrs.linear_before_reset = cell == C::kGru && lbr != 0;
  const std::vector<std::string> defaults = cell == C::kRnn   ? std::vector<std::string>{"Tanh"}
                                            : cell == C::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                              : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  VIGIL_RETURN_IF_ERROR(ReadActivations(node, defaults, attrs));
  return attrs;
}

}  // namespace vigil::ops
