#include "runtime/control_flow.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "ir/extract_subgraph.h"
#include "ops/attributes.h"
#include "ops/control_flow.h"
#include "ops/sequence.h"
#include "ops/shape_helpers.h"
#include "runtime/sequence_ops.h"

namespace vigil::runtime {
namespace {

// Names a graph reads from enclosing graphs, in order of first use.
std::vector<std::string> FreeNames(const std::shared_ptr<ir::Graph>& g) {
  ir::Node holder;
  ir::Attribute a;
  a.name = "body";
  a.type = ir::AttributeType::kGraph;
  a.g = g;
  holder.attributes.push_back(std::move(a));
  return ir::ImplicitInputs(holder);
}

Result<std::shared_ptr<ir::Graph>> GraphAttr(const ir::Node& node, const char* name) {
  const ir::Attribute* a = node.FindAttribute(name);
  if (!a || a->type != ir::AttributeType::kGraph || !a->g) {
    return InvalidModelError("{}: attribute '{}' must be a graph", ops::NodeLabel(node), name);
  }
  return a->g;
}

size_t ElementBytes(const Tensor& t) { return static_cast<size_t>(ir::DataTypeBits(t.dtype()) / 8); }

Status CheckSliceable(const ir::Node& node, const Tensor& t, const char* what) {
  if (ir::DataTypeBits(t.dtype()) % 8 != 0 || ir::DataTypeBits(t.dtype()) == 0) {
    return UnsupportedError("{}: {} {} has elements smaller than a byte, which vigil cannot slice or stack yet",
                            ops::NodeLabel(node), what, t.Describe());
  }
  if (!t.on_host()) return InternalError("{}: {} {} is not in host memory", ops::NodeLabel(node), what, t.Describe());
  return Status::Ok();
}

// Reads a one-element bool or integer tensor (a condition or a trip count).
Result<int64_t> ScalarValue(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.element_count() != 1) {
    return InvalidInputError("{}: {} must have one element, has {}", ops::NodeLabel(node), what, t.Describe());
  }
  switch (t.dtype()) {
    case ir::DataType::kBool: return t.data<uint8_t>()[0] != 0 ? 1 : 0;
    case ir::DataType::kInt64: return t.data<int64_t>()[0];
    case ir::DataType::kInt32: return t.data<int32_t>()[0];
    default:
      return InvalidModelError("{}: {} must be bool or int64, is {}", ops::NodeLabel(node), what, t.Describe());
  }
}

Result<Tensor> ScalarTensor(ir::DataType dtype, int64_t v) {
  VIGIL_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, {}));
  if (dtype == ir::DataType::kBool) {
    t.data<uint8_t>()[0] = v != 0;
  } else {
    t.data<int64_t>()[0] = v;
  }
  return t;
}

// Slice `index` of `t` along `axis`, without that axis.
Result<Tensor> SliceAlong(const Tensor& t, size_t axis, int64_t index) {
  std::vector<int64_t> shape = t.shape();
  int64_t n = shape[axis];
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  VIGIL_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(t.dtype(), shape));
  size_t outer = 1, inner = ElementBytes(t);
  for (size_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(t.dim(d));
  for (size_t d = axis + 1; d < t.rank(); ++d) inner *= static_cast<size_t>(t.dim(d));
  const auto* src = static_cast<const uint8_t*>(t.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  for (size_t o = 0; o < outer; ++o) {
    if (inner) std::memcpy(dst + o * inner, src + (o * static_cast<size_t>(n) + static_cast<size_t>(index)) * inner, inner);
  }
  return out;
}

// The parts stacked along a new `axis` (in reverse order when `reverse`).
Result<Tensor> Stack(const ir::Node& node, const std::vector<Tensor>& parts, int64_t axis, bool reverse,
                     size_t output_index) {
  const Tensor& first = parts.front();
  int64_t rank = static_cast<int64_t>(first.rank()) + 1;
  if (axis < -rank || axis >= rank) {
    return InvalidModelError("{}: scan output axis {} is out of range for rank {}", ops::NodeLabel(node), axis, rank);
  }
  if (axis < 0) axis += rank;
  for (const Tensor& p : parts) {
    VIGIL_RETURN_IF_ERROR(CheckSliceable(node, p, "a scan output"));
    if (p.dtype() != first.dtype() || p.shape() != first.shape()) {
      return InvalidInputError("{}: scan output {} is {} in one iteration and {} in another; every iteration must "
                               "give the same shape",
                               ops::NodeLabel(node), output_index, first.Describe(), p.Describe());
    }
  }
  std::vector<int64_t> shape = first.shape();
  shape.insert(shape.begin() + axis, static_cast<int64_t>(parts.size()));
  VIGIL_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(first.dtype(), shape));
  size_t outer = 1, inner = ElementBytes(first);
  for (int64_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(first.dim(static_cast<size_t>(d)));
  for (size_t d = static_cast<size_t>(axis); d < first.rank(); ++d) inner *= static_cast<size_t>(first.dim(d));
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  size_t count = parts.size();
  for (size_t t = 0; t < count; ++t) {
    const auto* src = static_cast<const uint8_t*>(parts[reverse ? count - 1 - t : t].raw_data());
    for (size_t o = 0; o < outer; ++o) {
      if (inner) std::memcpy(dst + (o * count + t) * inner, src + o * inner, inner);
    }
  }
  return out;
}

// A scan output of no iterations: [0] and the body's declared dims.
Result<Tensor> EmptyScanOutput(const ir::Node& node, const ir::Graph& body, size_t body_output) {
  const ir::ValueInfo& vi = body.outputs[body_output];
  if (!vi.has_type || vi.type.elem_type == ir::DataType::kUndefined) {
    return UnsupportedError("{}: the loop ran no iteration, and the body does not declare the type of output '{}', "
                            "so the empty scan output's dtype is unknown",
                            ops::NodeLabel(node), vi.name);
  }
  std::vector<int64_t> shape{0};
  if (vi.type.shape.rank_known) {
    for (const ir::Dim& d : vi.type.shape.dims) {
      if (!d.value) {
        shape.resize(1);
        break;
      }
      shape.push_back(*d.value);
    }
  }
  return Tensor::Allocate(vi.type.elem_type, shape);
}

}  // namespace

size_t AppendImplicitInputs(ir::Graph& graph) {
  size_t changed = 0;
  for (ir::Node& node : graph.nodes) {
    if (!ops::IsControlFlowOp(node)) continue;
    std::vector<std::string> implicit = ir::ImplicitInputs(node);
    if (implicit.empty()) continue;
    node.inputs.insert(node.inputs.end(), implicit.begin(), implicit.end());
    ++changed;
  }
  return changed;
}

ControlFlowBackend::ControlFlowBackend(const ir::Model& model, SessionOptions options) : options_(std::move(options)) {
  shell_.ir_version = model.ir_version;
  shell_.opset_imports = model.opset_imports;
  shell_.functions = model.functions;
  shell_.path = model.path;
  shell_.file = model.file;
  options_.device_graphs = false;
  for (const auto& b : options_.backends) {
    if (b && b->device() != Device::kHost) {
      device_ = b.get();
      break;
    }
  }
}

Device ControlFlowBackend::device() const { return device_ ? device_->device() : Device::kHost; }

bool ControlFlowBackend::InputOnHost(const ir::Node& node, int64_t opset, size_t input_index) const {
  static_cast<void>(opset);
  if (!device_ || node.op_type == "Scan") return true;
  if (node.op_type == "If") return input_index == 0;       // cond
  if (node.op_type == "Loop") return input_index < 2;      // M, cond
  return true;
}

namespace {
Status NoDevice(std::string_view what) {
  return InternalError("the control-flow backend was asked to {} with no device backend in the session", what);
}
}  // namespace

Result<Tensor> ControlFlowBackend::AllocateDevice(ir::DataType dtype, std::vector<int64_t> shape) const {
  if (!device_) return NoDevice("allocate device memory");
  return device_->AllocateDevice(dtype, std::move(shape));
}
Result<Tensor> ControlFlowBackend::ToDevice(const Tensor& host) const {
  if (!device_) return NoDevice("copy to the device");
  return device_->ToDevice(host);
}
Result<Tensor> ControlFlowBackend::ToHost(const Tensor& device) const {
  if (!device_) return NoDevice("copy to the host");
  return device_->ToHost(device);
}
Status ControlFlowBackend::Synchronize() const { return device_ ? device_->Synchronize() : Status::Ok(); }
Result<Tensor> ControlFlowBackend::AllocateHost(ir::DataType dtype, std::vector<int64_t> shape) const {
  return device_ ? device_->AllocateHost(dtype, std::move(shape)) : Tensor::Allocate(dtype, std::move(shape));
}
Status ControlFlowBackend::CheckDeviceMemory(uint64_t planned_bytes, const std::string& largest_tensors) const {
  return device_ ? device_->CheckDeviceMemory(planned_bytes, largest_tensors) : Status::Ok();
}
Status ControlFlowBackend::CopyInto(const Tensor& src, const Tensor& dst) const {
  if (!device_) return NoDevice("copy into device memory");
  return device_->CopyInto(src, dst);
}
Status ControlFlowBackend::CheckPointer(const void* data, size_t bytes, Device claimed, int device_id,
                                        const std::string& what) const {
  return device_ ? device_->CheckPointer(data, bytes, claimed, device_id, what) : Status::Ok();
}
Status ControlFlowBackend::WaitForStream(void* stream) const {
  if (!device_) return NoDevice("wait for a stream");
  return device_->WaitForStream(stream);
}

Result<int64_t> ControlFlowBackend::HostScalar(const ir::Node& node, const Tensor& t, const char* what) const {
  if (t.on_host()) return ScalarValue(node, t, what);
  if (!device_) return NoDevice("read a device value");
  VIGIL_ASSIGN_OR_RETURN(Tensor host, device_->ToHost(t));
  return ScalarValue(node, host, what);
}

Result<Tensor> ControlFlowBackend::StackIterations(const ir::Node& node, const std::vector<Tensor>& parts,
                                                   size_t output_index) const {
  bool any_device = false;
  for (const Tensor& p : parts) any_device = any_device || !p.on_host();
  if (!any_device) return Stack(node, parts, 0, false, output_index);
  // Along axis 0 each part is one contiguous block of the output.
  const Tensor& first = parts.front();
  for (const Tensor& p : parts) {
    if (p.dtype() != first.dtype() || p.shape() != first.shape()) {
      return InvalidInputError("{}: scan output {} is {} in one iteration and {} in another; every iteration must "
                               "give the same shape",
                               ops::NodeLabel(node), output_index, first.Describe(), p.Describe());
    }
  }
  std::vector<int64_t> shape = first.shape();
  shape.insert(shape.begin(), static_cast<int64_t>(parts.size()));
  VIGIL_ASSIGN_OR_RETURN(Tensor out, device_->AllocateDevice(first.dtype(), shape));
  auto* base = static_cast<uint8_t*>(out.raw_data());
  for (size_t t = 0; t < parts.size(); ++t) {
    Tensor slot = Tensor::OnDevice(out.device(), first.dtype(), first.shape(), base + t * first.byte_size(),
                                   out.storage());
    if (first.byte_size()) VIGIL_RETURN_IF_ERROR(device_->CopyInto(parts[t], slot));
  }
  return out;
}

ControlFlowBackend::~ControlFlowBackend() = default;

bool ControlFlowBackend::Supports(const ir::Node& node, int64_t opset) const {
  static_cast<void>(opset);
  return ops::IsControlFlowOp(node) || ops::IsSequenceOp(node);
}

bool ControlFlowBackend::SupportsTyped(const ir::Node& node, int64_t opset, const NodeTypes& types,
                                       std::string* why_not) const {
  if (Supports(node, opset) || TakesNonDenseValues(node, types)) return true;
  if (why_not) *why_not = "not a control-flow, sequence or optional op";
  return false;
}

size_t ControlFlowBackend::BodySessionCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sessions_.size();
}

namespace {

// The body's declared input `name`, when it is a sequence or an optional.
const ir::ValueInfo* DeclaredWrapper(const ir::Graph& body, const std::string& name) {
  for (const ir::ValueInfo& in : body.inputs) {
    if (in.name == name && in.has_type &&
        (in.type.kind == ir::TypeInfo::Kind::kSequence || in.type.kind == ir::TypeInfo::Kind::kOptional)) {
      return &in;
    }
  }
  return nullptr;
}

// A body input of `type` with its dims left unknown (a loop-carried value may
// change shape); sequences and optionals keep the body's declared type.
ir::ValueInfo BodyInput(const ir::Graph& body, const std::string& name, const ir::TypeInfo& type) {
  if (const ir::ValueInfo* declared = DeclaredWrapper(body, name)) return *declared;
  ir::ValueInfo vi;
  vi.name = name;
  vi.has_type = type.kind != ir::TypeInfo::Kind::kUnknown;
  vi.type = type;
  for (ir::Dim& d : vi.type.shape.dims) d = ir::Dim{};
  return vi;
}

ir::TypeInfo TypeOfValue(const Tensor& t) {
  if (t.kind() == Tensor::Kind::kSequence) return ops::SequenceOf(ops::TensorTypeUnknownShape(t.elem_type()));
  if (!t.is_dense()) return {};
  return ops::TensorType(t.dtype(), t.shape());
}

}  // namespace

Result<const Session*> ControlFlowBackend::BodySession(const std::shared_ptr<ir::Graph>& body,
                                                       const std::vector<ir::ValueInfo>& inputs,
                                                       const ir::Node& node) const {
  // One session per body and per kind, dtype and rank of what it is given.
  std::string key;
  for (const ir::ValueInfo& vi : inputs) {
    key += vi.has_type ? ir::TypeToString(vi.type) + ";" : std::string("?;");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find({body.get(), key});
  if (it != sessions_.end()) return it->second.get();

  ir::Model m = shell_;
  m.graph = *body;
  m.graph.inputs = inputs;
  Result<std::unique_ptr<Session>> made = Session::Create(std::move(m), options_);
  if (!made.ok()) {
    return std::move(made).TakeStatus().WithContext(
        fmt::format("preparing the body '{}' of {}", body->name, ops::NodeLabel(node)));
  }
  auto [pos, _] = sessions_.emplace(std::make_pair(body.get(), key), std::move(made).value());
  return pos->second.get();
}

Result<std::vector<Tensor>> ControlFlowBackend::RunBody(const std::shared_ptr<ir::Graph>& body,
                                                        const std::vector<Bound>& bound, const ir::Node& node,
                                                        bool on_device) const {
  std::vector<ir::ValueInfo> inputs;
  inputs.reserve(bound.size());
  for (const Bound& b : bound) inputs.push_back(BodyInput(*body, b.name, TypeOfValue(*b.tensor)));
  VIGIL_ASSIGN_OR_RETURN(const Session* session, BodySession(body, inputs, node));
  // A body none of whose nodes runs on the device takes host values.
  const bool bind_device = on_device && session->HasDeviceBackend();
  std::vector<Tensor> moved;  // host copies of device values, alive for the run
  moved.reserve(bound.size());
  std::vector<InputBinding> bindings;
  bindings.reserve(bound.size());
  for (Bound b : bound) {
    if (!b.tensor->is_dense()) {
      InputBinding ib;
      ib.name = b.name;
      ib.source = "enclosing graph";
      ib.value = b.tensor;
      bindings.push_back(std::move(ib));
      continue;
    }
    if (!b.tensor->on_host() && !bind_device) {
      if (!device_) return NoDevice("read a device value");
      VIGIL_ASSIGN_OR_RETURN(Tensor host, device_->ToHost(*b.tensor));
      moved.push_back(std::move(host));
      b.tensor = &moved.back();
    }
    InputBinding ib;
    ib.name = b.name;
    ib.dtype = b.tensor->dtype();
    ib.shape = b.tensor->shape();
    ib.data = b.tensor->raw_data();
    ib.byte_size = b.tensor->byte_size();
    ib.source = "enclosing graph";
    ib.device = b.tensor->device();
    bindings.push_back(std::move(ib));
  }
  RunOptions run_options;
  run_options.outputs_on_device = bind_device;
  Result<std::vector<NamedTensor>> ran = session->Run(std::move(bindings), run_options);
  if (!ran.ok()) {
    return std::move(ran).TakeStatus().WithContext(
        fmt::format("in the body '{}' of {}", body->name, ops::NodeLabel(node)));
  }
  std::vector<Tensor> outs;
  for (NamedTensor& t : ran.value()) outs.push_back(std::move(t.tensor));
  return outs;
}

Status ControlFlowBackend::Run(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
                               std::vector<Tensor>& outputs, OutputAllocator& allocator) const {
  static_cast<void>(allocator);
  outputs.resize(node.outputs.size());
  if (node.op_type == "If") return RunIf(node, inputs, outputs);
  if (node.op_type == "Loop") return RunLoop(node, inputs, outputs);
  if (node.op_type == "Scan") return RunScan(node, opset, inputs, outputs);
  if (node.op_type == "SequenceMap") return RunSequenceMap(node, inputs, outputs);
  return RunSequenceOp(node, opset, inputs, outputs);
}

namespace {

// The bindings of the names `body` reads from enclosing graphs: the node's
// implicit inputs, after its explicit ones.
Status BindFreeNames(const ir::Node& node, std::span<const Tensor* const> inputs,
                     const std::shared_ptr<ir::Graph>& body, std::vector<std::pair<std::string, const Tensor*>>& out) {
  size_t first = ops::ExplicitInputCount(node);
  for (const std::string& name : FreeNames(body)) {
    const Tensor* t = nullptr;
    for (size_t i = first; i < node.inputs.size() && i < inputs.size(); ++i) {
      if (node.inputs[i] == name) t = inputs[i];
    }
    if (!t) {
      return InternalError("{}: the body reads '{}' from the enclosing graph, which the node was not given",
                           ops::NodeLabel(node), name);
    }
    out.emplace_back(name, t);
  }
  return Status::Ok();
}

}  // namespace

Status ControlFlowBackend::RunIf(const ir::Node& node, std::span<const Tensor* const> inputs,
                                 std::vector<Tensor>& outputs) const {
  if (inputs.empty() || !inputs[0]) return InvalidModelError("{}: the condition is missing", ops::NodeLabel(node));
  VIGIL_ASSIGN_OR_RETURN(int64_t cond, ScalarValue(node, *inputs[0], "the condition"));
  VIGIL_ASSIGN_OR_RETURN(auto branch, GraphAttr(node, cond ? "then_branch" : "else_branch"));
  std::vector<std::pair<std::string, const Tensor*>> free;
  VIGIL_RETURN_IF_ERROR(BindFreeNames(node, inputs, branch, free));
  std::vector<Bound> bound;
  for (auto& [name, t] : free) bound.push_back({name, t});
  VIGIL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunBody(branch, bound, node, device_ != nullptr));
  if (outs.size() != outputs.size()) {
    return InvalidModelError("{}: the {} branch gives {} outputs, the node has {}", ops::NodeLabel(node),
                             cond ? "then" : "else", outs.size(), outputs.size());
  }
  for (size_t i = 0; i < outs.size(); ++i) outputs[i] = std::move(outs[i]);
  return Status::Ok();
}

Status ControlFlowBackend::RunLoop(const ir::Node& node, std::span<const Tensor* const> inputs,
                                   std::vector<Tensor>& outputs) const {
  VIGIL_ASSIGN_OR_RETURN(auto body, GraphAttr(node, "body"));
  size_t explicit_inputs = ops::ExplicitInputCount(node);
  if (explicit_inputs < 2 || body->inputs.size() != explicit_inputs) {
    return InvalidModelError("{}: has {} inputs and its body {}; the body must take 2 + the loop-carried values",
                             ops::NodeLabel(node), explicit_inputs, body->inputs.size());
  }
  size_t carried_count = explicit_inputs - 2;
  if (body->outputs.size() < 1 + carried_count) {
    return InvalidModelError("{}: the body has {} outputs, fewer than cond and the {} loop-carried values",
                             ops::NodeLabel(node), body->outputs.size(), carried_count);
  }
  size_t scan_count = body->outputs.size() - 1 - carried_count;
  std::optional<int64_t> trip_count;
  if (inputs[0]) {
    VIGIL_ASSIGN_OR_RETURN(int64_t m, ScalarValue(node, *inputs[0], "the trip count M"));
    trip_count = m;
  }
  bool has_cond = inputs[1] != nullptr;
  int64_t cond = 1;
  if (has_cond) {
    VIGIL_ASSIGN_OR_RETURN(cond, ScalarValue(node, *inputs[1], "the condition"));
  }
  if (!trip_count && !has_cond) {
    return InvalidModelError("{}: neither a trip count M nor a condition is given, so the loop would never end",
                             ops::NodeLabel(node))
        .WithFix("give the Loop node an M or a cond input");
  }
  std::vector<std::pair<std::string, const Tensor*>> free;
  VIGIL_RETURN_IF_ERROR(BindFreeNames(node, inputs, body, free));

  std::vector<Tensor> carried;  // the current values; the node's inputs at first
  for (size_t i = 0; i < carried_count; ++i) {
    if (!inputs[2 + i]) {
      return UnsupportedError("{}: loop-carried value {} is omitted (an optional), which vigil does not support yet",
                              ops::NodeLabel(node), i);
    }
    carried.push_back(*inputs[2 + i]);
  }
  std::vector<std::vector<Tensor>> scans(scan_count);
  for (int64_t iter = 0; (!trip_count || iter < *trip_count) && cond; ++iter) {
    VIGIL_ASSIGN_OR_RETURN(Tensor iter_t, ScalarTensor(ir::DataType::kInt64, iter));
    VIGIL_ASSIGN_OR_RETURN(Tensor cond_t, ScalarTensor(ir::DataType::kBool, cond));
    std::vector<Bound> bound;
    bound.push_back({body->inputs[0].name, &iter_t});
    bound.push_back({body->inputs[1].name, &cond_t});
    for (size_t i = 0; i < carried_count; ++i) bound.push_back({body->inputs[2 + i].name, &carried[i]});
    for (auto& [name, t] : free) bound.push_back({name, t});
    VIGIL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunBody(body, bound, node, device_ != nullptr));
    VIGIL_ASSIGN_OR_RETURN(cond, HostScalar(node, outs[0], "the condition the body returns"));
    for (size_t i = 0; i < carried_count; ++i) carried[i] = std::move(outs[1 + i]);
    for (size_t k = 0; k < scan_count; ++k) scans[k].push_back(std::move(outs[1 + carried_count + k]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (i < carried_count) {
      outputs[i] = carried[i];
    } else if (scans[i - carried_count].empty()) {
      VIGIL_ASSIGN_OR_RETURN(outputs[i], EmptyScanOutput(node, *body, 1 + i));
    } else {
      VIGIL_ASSIGN_OR_RETURN(outputs[i], StackIterations(node, scans[i - carried_count], i));
    }
  }
  return Status::Ok();
}

// One scan over `scan_in` along `axes`: the states and scan inputs are
// bound to the body's inputs in order, then the names it reads from
// enclosing graphs.
Result<std::vector<Tensor>> ControlFlowBackend::ScanOnce(const ir::Node& node, const std::shared_ptr<ir::Graph>& body,
                                                         const ScanSpec& spec, std::vector<Tensor> state,
                                                         const std::vector<const Tensor*>& scan_in,
                                                         const std::vector<std::pair<std::string, const Tensor*>>& free) const {
  size_t states = state.size();
  int64_t length = -1;
  for (size_t j = 0; j < scan_in.size(); ++j) {
    VIGIL_RETURN_IF_ERROR(CheckSliceable(node, *scan_in[j], "a scan input"));
    int64_t n = scan_in[j]->dim(spec.in_axes[j]);
    if (length >= 0 && n != length) {
      return InvalidInputError("{}: scan input {} has {} slices along axis {}, the first has {}; all must agree",
                               ops::NodeLabel(node), j, n, spec.in_axes[j], length);
    }
    length = n;
  }
  std::vector<std::vector<Tensor>> scans(spec.scan_outputs);
  for (int64_t step = 0; step < length; ++step) {
    std::vector<Tensor> slices;
    for (size_t j = 0; j < scan_in.size(); ++j) {
      bool reverse = j < spec.in_dirs.size() && spec.in_dirs[j] == 1;
      VIGIL_ASSIGN_OR_RETURN(Tensor sl, SliceAlong(*scan_in[j], spec.in_axes[j], reverse ? length - 1 - step : step));
      slices.push_back(std::move(sl));
    }
    std::vector<Bound> bound;
    for (size_t i = 0; i < states; ++i) bound.push_back({body->inputs[i].name, &state[i]});
    for (size_t j = 0; j < slices.size(); ++j) bound.push_back({body->inputs[states + j].name, &slices[j]});
    for (auto& [name, t] : free) bound.push_back({name, t});
    VIGIL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunBody(body, bound, node));
    if (outs.size() != states + spec.scan_outputs) {
      return InvalidModelError("{}: the body gives {} outputs, the node has {}", ops::NodeLabel(node), outs.size(),
                               states + spec.scan_outputs);
    }
    for (size_t i = 0; i < states; ++i) state[i] = std::move(outs[i]);
    for (size_t k = 0; k < spec.scan_outputs; ++k) scans[k].push_back(std::move(outs[states + k]));
  }
  std::vector<Tensor> result = std::move(state);
  for (size_t k = 0; k < spec.scan_outputs; ++k) {
    if (scans[k].empty()) {
      VIGIL_ASSIGN_OR_RETURN(Tensor empty, EmptyScanOutput(node, *body, states + k));
      result.push_back(std::move(empty));
      continue;
    }
    bool reverse = k < spec.out_dirs.size() && spec.out_dirs[k] == 1;
    VIGIL_ASSIGN_OR_RETURN(Tensor stacked, Stack(node, scans[k], k < spec.out_axes.size() ? spec.out_axes[k] : 0,
                                                 reverse, states + k));
    result.push_back(std::move(stacked));
  }
  return result;
}

// Scan-9 and later scan along each input's axis; Scan-8 takes a batch axis
// first (and an optional sequence_lens input before the states) and scans
// each batch entry along axis 1.
Status ControlFlowBackend::RunScan(const ir::Node& node, int64_t opset, std::span<const Tensor* const> inputs,
                                   std::vector<Tensor>& outputs) const {
  VIGIL_ASSIGN_OR_RETURN(auto body, GraphAttr(node, "body"));
  VIGIL_ASSIGN_OR_RETURN(int64_t scan_inputs, ops::RequiredIntAttr(node, "num_scan_inputs"));
  const bool batched = opset < 9;
  size_t first = batched ? 1 : 0;  // Scan-8: input 0 is sequence_lens
  size_t explicit_inputs = ops::ExplicitInputCount(node);
  if (explicit_inputs < first || scan_inputs < 1 || static_cast<size_t>(scan_inputs) > explicit_inputs - first ||
      body->inputs.size() != explicit_inputs - first) {
    return InvalidModelError("{}: num_scan_inputs {} does not fit its {} inputs and its body's {}",
                             ops::NodeLabel(node), scan_inputs, explicit_inputs, body->inputs.size());
  }
  size_t states = explicit_inputs - first - static_cast<size_t>(scan_inputs);
  ScanSpec spec;
  spec.scan_outputs = outputs.size() - std::min(outputs.size(), states);
  VIGIL_ASSIGN_OR_RETURN(spec.in_dirs, ops::IntsAttr(node, batched ? "directions" : "scan_input_directions", {}));
  VIGIL_ASSIGN_OR_RETURN(spec.out_axes, ops::IntsAttr(node, "scan_output_axes", {}));
  VIGIL_ASSIGN_OR_RETURN(spec.out_dirs, ops::IntsAttr(node, "scan_output_directions", {}));
  VIGIL_ASSIGN_OR_RETURN(auto in_axes, ops::IntsAttr(node, "scan_input_axes", {}));
  for (size_t i = first; i < explicit_inputs; ++i) {
    if (!inputs[i]) return InvalidModelError("{}: input {} is missing", ops::NodeLabel(node), i);
  }
  std::vector<std::pair<std::string, const Tensor*>> free;
  VIGIL_RETURN_IF_ERROR(BindFreeNames(node, inputs, body, free));

  if (!batched) {
    std::vector<const Tensor*> scan_in;
    for (size_t j = 0; j < static_cast<size_t>(scan_inputs); ++j) {
      const Tensor* t = inputs[states + j];
      VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(node, j < in_axes.size() ? in_axes[j] : 0,
                                                              static_cast<int64_t>(t->rank()), "scan_input_axes"));
      spec.in_axes.push_back(static_cast<size_t>(axis));
      scan_in.push_back(t);
    }
    std::vector<Tensor> state;
    for (size_t i = 0; i < states; ++i) state.push_back(*inputs[i]);
    VIGIL_ASSIGN_OR_RETURN(std::vector<Tensor> result, ScanOnce(node, body, spec, std::move(state), scan_in, free));
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i] = std::move(result[i]);
    return Status::Ok();
  }

  // Scan-8: every state and scan input has the batch axis first.
  int64_t batch = -1;
  for (size_t i = first; i < explicit_inputs; ++i) {
    const Tensor* t = inputs[i];
    bool scan = i >= first + states;
    VIGIL_RETURN_IF_ERROR(CheckSliceable(node, *t, scan ? "a scan input" : "a state"));
    if (t->rank() < (scan ? 2u : 1u) || (batch >= 0 && t->dim(0) != batch)) {
      return InvalidInputError("{}: input {} is {}; Scan-8 takes [batch, ...] states and [batch, sequence, ...] scan "
                               "inputs with one batch size",
                               ops::NodeLabel(node), i, t->Describe());
    }
    batch = t->dim(0);
  }
  if (inputs[0]) {
    const Tensor& lens = *inputs[0];
    int64_t full = inputs[first + states]->dim(1);
    for (uint64_t b = 0; b < lens.element_count(); ++b) {
      int64_t n = lens.dtype() == ir::DataType::kInt32 ? lens.data<int32_t>()[b] : lens.data<int64_t>()[b];
      if (n != full) {
        return UnsupportedError("{}: sequence_lens[{}] is {}, shorter than the sequence ({}); vigil runs Scan-8 "
                                "only on full sequences",
                                ops::NodeLabel(node), b, n, full);
      }
    }
  }
  spec.in_axes.assign(static_cast<size_t>(scan_inputs), 0);
  std::vector<std::vector<Tensor>> per_output(outputs.size());
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state, scan_slices;
    for (size_t i = 0; i < states; ++i) {
      VIGIL_ASSIGN_OR_RETURN(Tensor st, SliceAlong(*inputs[first + i], 0, b));
      state.push_back(std::move(st));
    }
    for (size_t j = 0; j < static_cast<size_t>(scan_inputs); ++j) {
      VIGIL_ASSIGN_OR_RETURN(Tensor sc, SliceAlong(*inputs[first + states + j], 0, b));
      scan_slices.push_back(std::move(sc));
    }
    std::vector<const Tensor*> scan_in;
    for (const Tensor& t : scan_slices) scan_in.push_back(&t);
    VIGIL_ASSIGN_OR_RETURN(std::vector<Tensor> result, ScanOnce(node, body, spec, std::move(state), scan_in, free));
    for (size_t i = 0; i < outputs.size(); ++i) per_output[i].push_back(std::move(result[i]));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (per_output[i].empty()) return UnsupportedError("{}: the batch is empty", ops::NodeLabel(node));
    VIGIL_ASSIGN_OR_RETURN(outputs[i], Stack(node, per_output[i], 0, false, i));
  }
  return Status::Ok();
}

// SequenceMap: the body runs once per item of the input sequence; sequence
// inputs give it their i-th item, tensor inputs the whole tensor. Each body
// output is collected into a sequence.
Status ControlFlowBackend::RunSequenceMap(const ir::Node& node, std::span<const Tensor* const> inputs,
                                          std::vector<Tensor>& outputs) const {
  VIGIL_ASSIGN_OR_RETURN(auto body, GraphAttr(node, "body"));
  size_t explicit_inputs = ops::ExplicitInputCount(node);
  if (explicit_inputs < 1 || body->inputs.size() != explicit_inputs || body->outputs.size() != outputs.size()) {
    return InvalidModelError("{}: has {} inputs and {} outputs, its body {} and {}; they must agree",
                             ops::NodeLabel(node), explicit_inputs, outputs.size(), body->inputs.size(),
                             body->outputs.size());
  }
  size_t length = 0;
  for (size_t i = 0; i < explicit_inputs; ++i) {
    const Tensor* t = inputs[i];
    if (!t) return InvalidModelError("{}: input {} is missing", ops::NodeLabel(node), i);
    if (i == 0 && t->kind() != Tensor::Kind::kSequence) {
      return InvalidModelError("{}: input 0 must be a sequence, is {}", ops::NodeLabel(node), t->Describe());
    }
    if (t->kind() != Tensor::Kind::kSequence) continue;
    if (i > 0 && t->items().size() != length) {
      return InvalidInputError("{}: input {} is a sequence of {} tensors, input 0 of {}; they must be as long",
                               ops::NodeLabel(node), i, t->items().size(), length);
    }
    length = t->items().size();
  }
  std::vector<std::pair<std::string, const Tensor*>> free;
  VIGIL_RETURN_IF_ERROR(BindFreeNames(node, inputs, body, free));
  std::vector<std::vector<Tensor>> items(outputs.size());
  for (size_t step = 0; step < length; ++step) {
    std::vector<Bound> bound;
    for (size_t i = 0; i < explicit_inputs; ++i) {
      const Tensor* t = inputs[i];
      bound.push_back({body->inputs[i].name, t->kind() == Tensor::Kind::kSequence ? &t->items()[step] : t});
    }
    for (auto& [name, t] : free) bound.push_back({name, t});
    VIGIL_ASSIGN_OR_RETURN(std::vector<Tensor> outs, RunBody(body, bound, node));
    for (size_t k = 0; k < outs.size() && k < items.size(); ++k) {
      if (!outs[k].is_dense() || !outs[k].on_host()) {
        return UnsupportedError("{}: body output {} is {}; SequenceMap collects host tensors", ops::NodeLabel(node), k,
                                outs[k].Describe());
      }
      items[k].push_back(std::move(outs[k]));
    }
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    ir::DataType dtype = items[k].empty() ? ir::DataType::kUndefined : items[k].front().dtype();
    if (items[k].empty() && body->outputs[k].has_type) dtype = body->outputs[k].type.elem_type;
    outputs[k] = Tensor::Sequence(dtype, std::move(items[k]));
  }
  return Status::Ok();
}

Result<BodyMemory> ControlFlowBackend::PlanBodies(const ir::Node& node, int64_t opset,
                                                  const std::vector<const ir::TypeInfo*>& input_types) const {
  BodyMemory total;
  auto type_at = [&](size_t i) -> const ir::TypeInfo* { return i < input_types.size() ? input_types[i] : nullptr; };
  const size_t explicit_inputs = ops::ExplicitInputCount(node);
  // Plans `body` with `entry` (its explicit inputs' types, in order) and the
  // types of the names it reads from enclosing graphs.
  auto plan = [&](const std::shared_ptr<ir::Graph>& body, std::vector<const ir::TypeInfo*> entry) -> Status {
    std::vector<std::pair<std::string, const ir::TypeInfo*>> named;
    for (size_t i = 0; i < entry.size() && i < body->inputs.size(); ++i) named.emplace_back(body->inputs[i].name, entry[i]);
    for (const std::string& name : FreeNames(body)) {
      const ir::TypeInfo* t = nullptr;
      for (size_t i = explicit_inputs; i < node.inputs.size(); ++i) {
        if (node.inputs[i] == name) t = type_at(i);
      }
      named.emplace_back(name, t);
    }
    std::vector<ir::ValueInfo> inputs;
    std::vector<InputBinding> shapes;
    for (const auto& [name, t] : named) {
      std::optional<std::vector<int64_t>> dims = t && t->kind == ir::TypeInfo::Kind::kTensor ? ops::KnownDims(t) : std::nullopt;
      if (!dims || t->elem_type == ir::DataType::kUndefined) {
        total.unplanned.push_back(fmt::format("body '{}' of {}", body->name, ops::NodeLabel(node)));
        return Status::Ok();
      }
      inputs.push_back(BodyInput(*body, name, *t));
      InputBinding b;
      b.name = name;
      b.dtype = t->elem_type;
      b.shape = *dims;
      shapes.push_back(std::move(b));
    }
    // A body that cannot be prepared or planned at these shapes (the branch
    // of an If that these inputs do not take may not fit them) is left to
    // fail, if it ever runs, when it runs.
    Result<const Session*> session = BodySession(body, inputs, node);
    Result<MemoryPlan> m = session.ok() ? (*session)->PlanShapes(shapes) : Result<MemoryPlan>(session.status());
    if (!m.ok()) {
      total.unplanned.push_back(fmt::format("body '{}' of {}", body->name, ops::NodeLabel(node)));
      return Status::Ok();
    }
    BodyMemory mine;
    mine.host_bytes = m->arena_bytes + m->bodies.host_bytes;
    mine.device_bytes = m->device_arena_bytes + m->bodies.device_bytes;
    mine.unplanned = m->bodies.unplanned;
    total.Add(mine);
    return Status::Ok();
  };
  const ir::TypeInfo scalar_i64 = ops::TensorType(ir::DataType::kInt64, std::vector<int64_t>{});
  const ir::TypeInfo scalar_bool = ops::TensorType(ir::DataType::kBool, std::vector<int64_t>{});
  if (node.op_type == "If") {
    for (const char* branch : {"then_branch", "else_branch"}) {
      VIGIL_ASSIGN_OR_RETURN(auto body, GraphAttr(node, branch));
      VIGIL_RETURN_IF_ERROR(plan(body, {}));
    }
  } else if (node.op_type == "Loop") {
    VIGIL_ASSIGN_OR_RETURN(auto body, GraphAttr(node, "body"));
    std::vector<const ir::TypeInfo*> entry = {&scalar_i64, &scalar_bool};
    for (size_t i = 2; i < explicit_inputs; ++i) entry.push_back(type_at(i));
    VIGIL_RETURN_IF_ERROR(plan(body, entry));
  } else if (node.op_type == "Scan" && opset >= 9) {
    VIGIL_ASSIGN_OR_RETURN(auto body, GraphAttr(node, "body"));
    VIGIL_ASSIGN_OR_RETURN(int64_t scan_inputs, ops::RequiredIntAttr(node, "num_scan_inputs"));
    VIGIL_ASSIGN_OR_RETURN(auto in_axes, ops::IntsAttr(node, "scan_input_axes", {}));
    const size_t states = explicit_inputs - std::min(explicit_inputs, static_cast<size_t>(std::max<int64_t>(scan_inputs, 0)));
    std::vector<ir::TypeInfo> slices;  // a scan input less its scan axis
    slices.reserve(explicit_inputs);
    std::vector<const ir::TypeInfo*> entry;
    for (size_t i = 0; i < explicit_inputs; ++i) {
      const ir::TypeInfo* t = type_at(i);
      if (i < states || !t || !ops::HasRank(t)) {
        entry.push_back(i < states ? t : nullptr);
        continue;
      }
      const size_t j = i - states;
      const int64_t rank = static_cast<int64_t>(t->shape.dims.size());
      int64_t axis = j < in_axes.size() ? in_axes[j] : 0;
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) {
        entry.push_back(nullptr);
        continue;
      }
      slices.push_back(*t);
      slices.back().shape.dims.erase(slices.back().shape.dims.begin() + axis);
      entry.push_back(&slices.back());
    }
    VIGIL_RETURN_IF_ERROR(plan(body, entry));
  } else {
    // Scan-8 (batched) and SequenceMap: the entry shapes are the items' or
    // the batch entries', known when the node runs.
    const ir::Attribute* a = node.FindAttribute("body");
    total.unplanned.push_back(
        fmt::format("body '{}' of {}", a && a->g ? a->g->name : std::string("?"), ops::NodeLabel(node)));
  }
  return total;
}

}  // namespace vigil::runtime
