#include "ir/fold_batch_norm.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/extract_subgraph.h"

namespace vigil::ir {
namespace {

bool IsDefaultDomain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// The float32 elements of constant `t`, or empty where it is not a dense
// float32 tensor of `count` elements.
std::vector<float> Floats(const Tensor* t, uint64_t count) {
  if (!t || t->dtype != DataType::kFloat32 || !t->HasDenseBytes()) return {};
  std::optional<uint64_t> n = t->ElementCount();
  if (!n || *n != count || t->bytes.size() != count * sizeof(float)) return {};
  std::vector<float> v(count);
  if (count) std::memcpy(v.data(), t->bytes.data(), count * sizeof(float));
  return v;
}

Tensor FloatTensor(std::string name, std::vector<int64_t> dims, const std::vector<float>& values) {
  auto owned = std::make_shared<std::vector<float>>(values);
  Tensor t;
  t.name = std::move(name);
  t.dtype = DataType::kFloat32;
  t.dims = std::move(dims);
  t.storage = Tensor::Storage::kTypedDecoded;
  t.bytes = {reinterpret_cast<const uint8_t*>(owned->data()), owned->size() * sizeof(float)};
  t.keep_alive = owned;
  return t;
}

// The attributes that make a BatchNormalization a plain per-channel affine
// map at inference: epsilon (returned), training_mode 0, spatial 1.
std::optional<double> InferenceEpsilon(const Node& bn) {
  double epsilon = 1e-5;
  for (const Attribute& a : bn.attributes) {
    if (a.name == "epsilon") {
      if (a.type != AttributeType::kFloat) return std::nullopt;
      epsilon = a.f;
    } else if (a.name == "training_mode" || a.name == "is_test") {
      if (a.type != AttributeType::kInt || a.i != (a.name == "is_test" ? 1 : 0)) return std::nullopt;
    } else if (a.name == "spatial") {
      if (a.type != AttributeType::kInt || a.i != 1) return std::nullopt;
    }
  }
  return epsilon;
}

class Folder {
 public:
  explicit Folder(Model& model) : g_(model.graph) {
    std::unordered_set<std::string> graph_inputs;
    for (const ValueInfo& v : g_.inputs) graph_inputs.insert(v.name);
    for (size_t i = 0; i < g_.initializers.size(); ++i) {
      if (!graph_inputs.count(g_.initializers[i].name)) constant_index_[g_.initializers[i].name] = i;
    }
    for (const ValueInfo& v : g_.outputs) outputs_.insert(v.name);
    for (const Node& n : g_.nodes) {
      for (const std::string& in : n.inputs) {
        if (!in.empty()) ++readers_[in];
      }
      for (const std::string& in : ImplicitInputs(n)) ++readers_[in];
      for (const std::string& out : n.outputs) names_.insert(out);
    }
    for (const Tensor& t : g_.initializers) names_.insert(t.name);
  }

  size_t Run() {
    std::unordered_map<std::string, size_t> producer;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const std::string& out : g_.nodes[i].outputs) {
        if (!out.empty()) producer[out] = i;
      }
    }
    std::vector<bool> dead(g_.nodes.size(), false);
    size_t folded = 0;
    for (size_t b = 0; b < g_.nodes.size(); ++b) {
      const Node& bn = g_.nodes[b];
      if (bn.op_type != "BatchNormalization" || !IsDefaultDomain(bn.domain) || bn.inputs.size() != 5) continue;
      auto it = producer.find(bn.inputs[0]);
      if (it == producer.end() || !Fold(it->second, b)) continue;
      dead[b] = true;
      ++folded;
    }
    std::vector<Node> kept;
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!dead[i]) kept.push_back(std::move(g_.nodes[i]));
    }
    g_.nodes = std::move(kept);
    return folded;
  }

 private:
  const Tensor* Constant(const std::string& name) const {
    auto it = constant_index_.find(name);
    return name.empty() || it == constant_index_.end() ? nullptr : &g_.initializers[it->second];
  }

  std::string UniqueName(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  // Folds BatchNormalization node `b` into Conv node `c`, where it can.
  bool Fold(size_t c, size_t b) {
    Node& conv = g_.nodes[c];
    const Node& bn = g_.nodes[b];
    for (size_t k = 1; k < bn.outputs.size(); ++k) {
      if (!bn.outputs[k].empty()) return false;  // training outputs wanted
    }
    if (conv.op_type != "Conv" || !IsDefaultDomain(conv.domain) || conv.outputs.size() != 1 ||
        conv.inputs.size() < 2) {
      return false;
    }
    const std::string& y = conv.outputs[0];
    if (outputs_.count(y) || readers_[y] != 1) return false;
    std::optional<double> epsilon = InferenceEpsilon(bn);
    if (!epsilon) return false;
    const Tensor* w = Constant(conv.inputs[1]);
    if (!w || w->dims.size() < 3 || w->dims[0] <= 0) return false;
    const int64_t m = w->dims[0];
    std::optional<uint64_t> w_count = w->ElementCount();
    if (!w_count) return false;
    std::vector<float> weights = Floats(w, *w_count);
    const bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
    std::vector<float> bias = has_bias ? Floats(Constant(conv.inputs[2]), m) : std::vector<float>(m, 0.0f);
    std::vector<float> scale = Floats(Constant(bn.inputs[1]), m), shift = Floats(Constant(bn.inputs[2]), m),
                       mean = Floats(Constant(bn.inputs[3]), m), var = Floats(Constant(bn.inputs[4]), m);
    if (weights.empty() || bias.empty() || scale.empty() || shift.empty() || mean.empty() || var.empty()) {
      return false;
    }
    const uint64_t per_channel = *w_count / static_cast<uint64_t>(m);
    std::vector<float> new_bias(m);
    for (int64_t k = 0; k < m; ++k) {
      const double s = static_cast<double>(scale[k]) / std::sqrt(static_cast<double>(var[k]) + *epsilon);
      float* row = weights.data() + k * per_channel;
      for (uint64_t i = 0; i < per_channel; ++i) row[i] = static_cast<float>(static_cast<double>(row[i]) * s);
      new_bias[k] = static_cast<float>((static_cast<double>(bias[k]) - mean[k]) * s + shift[k]);
    }
    // W keeps its name where this Conv is its only reader; B' is always new.
    const std::string w_name = conv.inputs[1];
    if (readers_[w_name] == 1 && !outputs_.count(w_name)) {
      g_.initializers[constant_index_.at(w_name)] = FloatTensor(w_name, w->dims, weights);
    } else {
      const std::string name = UniqueName(w_name + "_bn_folded");
      g_.initializers.push_back(FloatTensor(name, w->dims, weights));
      constant_index_[name] = g_.initializers.size() - 1;
      --readers_[w_name];
      readers_[name] = 1;
      conv.inputs[1] = name;
    }
    const std::string b_name = UniqueName(bn.name.empty() ? y + "_bn_bias" : bn.name + "_bias");
    g_.initializers.push_back(FloatTensor(b_name, {m}, new_bias));
    constant_index_[b_name] = g_.initializers.size() - 1;
    readers_[b_name] = 1;
    conv.inputs.resize(3);
    conv.inputs[2] = b_name;
    conv.outputs[0] = bn.outputs[0];
    return true;
  }

  Graph& g_;
  std::unordered_map<std::string, size_t> constant_index_;
  std::unordered_map<std::string, size_t> readers_;
  std::unordered_set<std::string> outputs_;
  std::unordered_set<std::string> names_;
};

}  // namespace

Result<size_t> FoldBatchNormIntoConv(Model& model) { return Folder(model).Run(); }

}  // namespace vigil::ir
