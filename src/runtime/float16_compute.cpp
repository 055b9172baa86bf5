#include "runtime/float16_compute.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ir/validate.h"
#include "ops/schema.h"
#include "vigil/float16.h"

namespace vigil::runtime {
namespace {

constexpr float kFloat16Max = 65504.0f;

bool IsFloat32(const ir::TypeInfo* t) {
  return t && t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type == ir::DataType::kFloat32;
}

// Ops left in float32 whatever their inputs (see the header).
bool HasSubgraph(const ir::Node& node) {
  for (const ir::Attribute& a : node.attributes) {
    if (a.type == ir::AttributeType::kGraph || a.type == ir::AttributeType::kGraphs) return true;
  }
  return false;
}

bool KeepsFloat32(const ir::Node& node) {
  if (HasSubgraph(node)) return true;
  static const std::unordered_set<std::string_view> kKeep = {
      "CumSum",        "Range",           "RandomNormal",     "RandomNormalLike",      "RandomUniform",
      "RandomUniformLike", "Multinomial", "Bernoulli",        "NonMaxSuppression",     "RoiAlign",
      "TopK",          "EyeLike",         "CastLike",         "QuantizeLinear",        "DequantizeLinear",
      "DynamicQuantizeLinear"};
  return kKeep.count(node.op_type) > 0;
}

bool IsCastToFloat32(const ir::Node& node) {
  if (node.op_type != "Cast" || !(node.domain.empty() || node.domain == "ai.onnx")) return false;
  const ir::Attribute* to = node.FindAttribute("to");
  return to && to->i == static_cast<int64_t>(ir::DataType::kFloat32);
}

ir::Attribute CastTo(ir::DataType dtype) {
  ir::Attribute to;
  to.name = "to";
  to.type = ir::AttributeType::kInt;
  to.i = static_cast<int64_t>(dtype);
  return to;
}

class Float16Rewriter {
 public:
  Float16Rewriter(ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                  const Float16InputFn& takes)
      : model_(model), g_(model.graph), original_(types), now_(types), takes_(takes) {
    for (const ir::Tensor& t : g_.initializers) {
      initializer_index_[t.name] = &t - g_.initializers.data();
      names_.insert(t.name);
    }
    for (const ir::ValueInfo& v : g_.inputs) {
      graph_inputs_.insert(v.name);
      names_.insert(v.name);
    }
    for (const ir::Node& n : g_.nodes) {
      for (const std::string& s : n.inputs) names_.insert(s);
      for (const std::string& s : n.outputs) names_.insert(s);
      if (HasSubgraph(n)) {
        // Bodies read outer values by name: those, and the node's own
        // inputs, keep their float32 types under their names.
        pinned_.insert(n.inputs.begin(), n.inputs.end());
        for (const ir::Attribute& a : n.attributes) {
          if (a.g) PinNamesReadIn(*a.g);
          for (const auto& sub : a.graphs) PinNamesReadIn(*sub);
        }
      }
    }
    for (const ir::ValueInfo& v : g_.outputs) pinned_.insert(v.name);
  }

  Result<Float16Summary> Run() {
    VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::TopologicalOrder(g_));
    for (size_t i : order) VIGIL_RETURN_IF_ERROR(Visit(i));
    RenameChangedOutputs();
    UpdateValueInfos();
    for (ir::Tensor& t : new_initializers_) g_.initializers.push_back(std::move(t));
    for (ir::Node& n : added_) g_.nodes.push_back(std::move(n));
    DropUnused();
    VIGIL_RETURN_IF_ERROR(ir::RemoveDeadAndSort(g_, std::vector<bool>(g_.nodes.size(), false)));
    return summary_;
  }

 private:
  void PinNamesReadIn(const ir::Graph& body) {
    for (const ir::Node& n : body.nodes) {
      pinned_.insert(n.inputs.begin(), n.inputs.end());
      for (const ir::Attribute& a : n.attributes) {
        if (a.g) PinNamesReadIn(*a.g);
        for (const auto& sub : a.graphs) PinNamesReadIn(*sub);
      }
    }
    for (const ir::ValueInfo& v : body.outputs) pinned_.insert(v.name);
  }

  const ir::TypeInfo* Now(const std::string& name) const {
    auto it = name.empty() ? now_.end() : now_.find(name);
    return it == now_.end() ? nullptr : &it->second;
  }
  bool WasFloat32(const std::string& name) const {
    auto it = name.empty() ? original_.end() : original_.find(name);
    return it != original_.end() && IsFloat32(&it->second);
  }
  bool IsFloat16Now(const std::string& name) const {
    const ir::TypeInfo* t = Now(name);
    return t && t->kind == ir::TypeInfo::Kind::kTensor && t->elem_type == ir::DataType::kFloat16;
  }

  // An initializer with a finite value that float16 cannot hold.
  bool BeyondFloat16(const std::string& name) const {
    auto init = initializer_index_.find(name);
    if (init == initializer_index_.end()) return false;
    const ir::Tensor& t = g_.initializers[init->second];
    if (!t.HasDenseBytes()) return false;
    for (size_t i = 0; i + sizeof(float) <= t.bytes.size(); i += sizeof(float)) {
      float v;
      std::memcpy(&v, t.bytes.data() + i, sizeof(float));
      if (std::isfinite(v) && std::fabs(v) > kFloat16Max) return true;
    }
    return false;
  }

  std::string Fresh(const std::string& base) {
    std::string name = base;
    for (int k = 2; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  // A float16 version of the float32 value `name`: a converted copy of an
  // initializer (unless a graph input may override it), else a Cast.
  std::string Half(const std::string& name) {
    auto cached = half_.find(name);
    if (cached != half_.end()) return cached->second;
    std::string out = Fresh(name + "_fp16");
    auto init = initializer_index_.find(name);
    ir::TypeInfo type = *Now(name);
    type.elem_type = ir::DataType::kFloat16;
    if (init != initializer_index_.end() && !graph_inputs_.count(name) &&
        g_.initializers[init->second].HasDenseBytes()) {
      new_initializers_.push_back(ConvertInitializer(g_.initializers[init->second], out));
      ++summary_.converted_initializers;
    } else {
      AddCast(name, out, ir::DataType::kFloat16);
    }
    now_[out] = std::move(type);
    half_[name] = out;
    return out;
  }

  // The float32 value for a value that the rewriting made float16.
  std::string Float(const std::string& name) {
    auto cached = float_.find(name);
    if (cached != float_.end()) return cached->second;
    std::string out = Fresh(name + "_fp32");
    AddCast(name, out, ir::DataType::kFloat32);
    ir::TypeInfo type = *Now(name);
    type.elem_type = ir::DataType::kFloat32;
    now_[out] = std::move(type);
    float_[name] = out;
    return out;
  }

  void AddCast(const std::string& from, const std::string& to, ir::DataType dtype) {
    ir::Node cast;
    cast.name = Fresh(to + "_cast");
    cast.op_type = "Cast";
    cast.inputs = {from};
    cast.outputs = {to};
    cast.attributes.push_back(CastTo(dtype));
    added_names_.insert(cast.name);
    added_.push_back(std::move(cast));
    ++summary_.casts;
  }

  ir::Tensor ConvertInitializer(const ir::Tensor& src, const std::string& name) {
    const size_t n = src.bytes.size() / sizeof(float);
    auto owned = std::make_shared<std::vector<uint16_t>>(n);
    for (size_t i = 0; i < n; ++i) {
      float v;
      std::memcpy(&v, src.bytes.data() + i * sizeof(float), sizeof(float));
      if (std::isfinite(v) && std::fabs(v) > kFloat16Max) {
        v = std::copysign(kFloat16Max, v);
        ++summary_.clamped_values;
      }
      (*owned)[i] = FloatToFloat16(v);
    }
    ir::Tensor t;
    t.name = name;
    t.dtype = ir::DataType::kFloat16;
    t.dims = src.dims;
    t.storage = ir::Tensor::Storage::kTypedDecoded;
    t.bytes = {reinterpret_cast<const uint8_t*>(owned->data()), n * sizeof(uint16_t)};
    t.keep_alive = std::shared_ptr<const void>(owned, owned->data());
    return t;
  }

  Status Visit(size_t index) {
    ir::Node& node = g_.nodes[index];
    const int64_t opset = model_.OpsetVersion(node.domain);
    bool convert = false;
    if (IsCastToFloat32(node)) {
      convert = true;
    } else if (node.op_type == "Cast") {
      // To an integer or other type: from float32, so that integers up to
      // 2^24 stay exact (float16 holds them only up to 2048).
    } else if (!KeepsFloat32(node)) {
      for (size_t i = 0; i < node.inputs.size() && !convert; ++i) {
        convert = WasFloat32(node.inputs[i]) && takes_(node, opset, i) != Float16Input::kNo;
      }
    }
    const std::vector<std::string> before = node.inputs;
    const std::vector<ir::Attribute> attributes_before = node.attributes;
    if (convert) {
      if (IsCastToFloat32(node)) {
        for (ir::Attribute& a : node.attributes) {
          if (a.name == "to") a.i = static_cast<int64_t>(ir::DataType::kFloat16);
        }
      }
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        std::string& in = node.inputs[i];
        if (!WasFloat32(in)) continue;
        const Float16Input how = IsCastToFloat32(node) ? Float16Input::kTied : takes_(node, opset, i);
        const bool takes = how != Float16Input::kNo;
        if (how == Float16Input::kFree && !IsFloat16Now(in) && BeyondFloat16(in)) continue;
        if (takes && !IsFloat16Now(in)) in = Half(in);
        if (!takes && IsFloat16Now(in)) in = Float(in);
      }
    } else if (!HasSubgraph(node)) {  // (a node with bodies reads its pinned inputs by name)
      for (std::string& in : node.inputs) {
        if (WasFloat32(in) && IsFloat16Now(in)) in = Float(in);
      }
    }
    // The outputs' types from the op's own inference with the new inputs.
    const ops::OpSchema* schema = ops::FindSchema(node.domain, node.op_type, opset);
    if (!schema) return Status::Ok();  // unknown ops were refused by the first inference
    std::vector<const ir::TypeInfo*> types;
    std::vector<const ir::Tensor*> values;
    for (const std::string& in : node.inputs) {
      types.push_back(Now(in));
      auto init = in.empty() ? initializer_index_.end() : initializer_index_.find(in);
      values.push_back(init == initializer_index_.end() ? nullptr : &g_.initializers[init->second]);
    }
    ops::InferenceContext ctx(node, opset, types, values, &symbols_);
    if (!schema->infer(ctx).ok()) {
      if (!convert) return Status::Ok();
      // The op refuses float16 there after all: it stays float32.
      node.inputs = before;
      node.attributes = attributes_before;
      for (std::string& in : node.inputs) {
        if (WasFloat32(in) && IsFloat16Now(in)) in = Float(in);
      }
      return Status::Ok();
    }
    summary_.converted_nodes += convert;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o].empty() || ctx.outputs()[o].kind == ir::TypeInfo::Kind::kUnknown) continue;
      now_[node.outputs[o]] = ctx.outputs()[o];
    }
    return Status::Ok();
  }

  // A pinned value (a graph output, a value a body reads) that became
  // float16 is renamed where the rewritten graph uses it, and cast back to
  // float32 under its own name.
  void RenameChangedOutputs() {
    for (const std::string& name : pinned_) {
      if (!WasFloat32(name) || !IsFloat16Now(name)) continue;
      const std::string inner = Fresh(name + "_fp16");
      auto rename = [&](std::vector<std::string>& names) {
        for (std::string& s : names) {
          if (s == name) s = inner;
        }
      };
      for (ir::Node& n : g_.nodes) {
        if (!HasSubgraph(n)) rename(n.inputs);
        rename(n.outputs);
      }
      for (ir::Node& n : added_) rename(n.inputs);
      now_[inner] = now_[name];
      AddCast(inner, name, ir::DataType::kFloat32);
      now_[name] = original_.at(name);
    }
  }

  void UpdateValueInfos() {
    for (ir::ValueInfo& v : g_.value_infos) {
      const ir::TypeInfo* t = Now(v.name);
      if (v.has_type && t && v.type.kind == ir::TypeInfo::Kind::kTensor && t->kind == ir::TypeInfo::Kind::kTensor) {
        v.type.elem_type = t->elem_type;
      }
    }
  }

  // Float32 initializers that only converted nodes read, now unread, and
  // Casts that a node which stayed float32 after all left unread.
  void DropUnused() {
    std::unordered_set<std::string> used(pinned_.begin(), pinned_.end());
    for (const ir::Node& n : g_.nodes) used.insert(n.inputs.begin(), n.inputs.end());
    std::vector<ir::Node> nodes;
    for (ir::Node& n : g_.nodes) {
      if (added_names_.count(n.name) && !used.count(n.outputs[0])) {
        --summary_.casts;
        continue;
      }
      nodes.push_back(std::move(n));
    }
    g_.nodes = std::move(nodes);
    std::vector<ir::Tensor> kept;
    for (ir::Tensor& t : g_.initializers) {
      if (used.count(t.name) || graph_inputs_.count(t.name)) kept.push_back(std::move(t));
    }
    g_.initializers = std::move(kept);
  }

  ir::Model& model_;
  ir::Graph& g_;
  const std::unordered_map<std::string, ir::TypeInfo>& original_;
  std::unordered_map<std::string, ir::TypeInfo> now_;
  const Float16InputFn& takes_;
  std::unordered_map<std::string, size_t> initializer_index_;
  std::unordered_set<std::string> graph_inputs_;
  std::unordered_set<std::string> names_;
  std::unordered_set<std::string> pinned_;       // keep float32 under these names
  std::unordered_set<std::string> added_names_;  // the Casts this pass adds
  std::unordered_map<std::string, std::string> half_, float_;
  std::vector<ir::Tensor> new_initializers_;
  std::vector<ir::Node> added_;
  Float16Summary summary_;
  int symbols_ = 0;
};

}  // namespace

Result<Float16Summary> ConvertToFloat16(ir::Model& model, const std::unordered_map<std::string, ir::TypeInfo>& types,
                                        const Float16InputFn& takes_float16) {
  return Float16Rewriter(model, types, takes_float16).Run();
}

}  // namespace vigil::runtime
