#include "runtime/session.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/dev_switch.h"
#include "ir/attention_layout.h"
#include "ir/fuse_attention.h"
#include "ir/fuse_conv_epilogue.h"
#include "ir/expand_flex_attention.h"
#include "ir/fuse_gelu.h"
#include "ir/fuse_hardswish.h"
#include "ir/fuse_silu.h"
#include "ir/fuse_matmul_bias.h"
#include "ir/eliminate_common.h"
#include "ir/layout_nhwc.h"  // kVigilDomain
#include "ir/transpose_reshape.h"
#include "ir/validate.h"
#include "ops/attributes.h"
#include "ops/control_flow.h"
#include "ops/sequence.h"
#include "ops/shape_helpers.h"
#include "runtime/captured_run.h"
#include "runtime/control_flow.h"
#include "ir/fold_batch_norm.h"
#include "runtime/execution.h"
#include "runtime/type_inference.h"

namespace vigil::runtime {
namespace {

// Load-time folding evaluates any all-constant node up to this size; plan-time
// folding (with concrete input shapes) only small shape arithmetic.
constexpr uint64_t kLoadFoldLimit = uint64_t{64} << 20;
constexpr uint64_t kPlanFoldLimit = 4096;

// Whether `device` takes a node a fusion pass would write, with its inputs'
// and outputs' types as inferred (an omitted input or an unknown type: null).
bool DeviceTakesFused(const Backend& device, const std::unordered_map<std::string, ir::TypeInfo>& inferred,
                      const ir::Node& fused) {
  auto type = [&](const std::string& v) -> const ir::TypeInfo* {
    auto it = inferred.find(v);
    return v.empty() || it == inferred.end() ? nullptr : &it->second;
  };
  NodeTypes types;
  for (const std::string& in : fused.inputs) types.inputs.push_back(type(in));
  for (const std::string& out : fused.outputs) types.outputs.push_back(type(out));
  return device.SupportsTyped(fused, ir::kVigilOpsetVersion, types, nullptr);
}

const Backend* FindCpu(const SessionOptions& options) {
  for (const auto& b : options.backends) {
    if (b && b->name() == "cpu") return b.get();
  }
  return nullptr;
}

// The graph with every folded node removed and its outputs turned into
// initializers that reference the folded tensors.
ir::Model ApplyFolding(const ir::Model& model, const InferredGraph& inferred) {
  ir::Model folded = model;
  std::unordered_set<std::string> needed;
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < model.graph.nodes.size(); ++i) {
    if (inferred.folded_nodes.count(i)) continue;
    kept.push_back(model.graph.nodes[i]);
    for (const std::string& in : model.graph.nodes[i].inputs) needed.insert(in);
  }
  for (const ir::ValueInfo& out : model.graph.outputs) needed.insert(out.name);
  std::unordered_set<std::string> existing;
  for (const ir::Tensor& t : model.graph.initializers) existing.insert(t.name);
  for (size_t i : inferred.folded_nodes) {
    for (const std::string& out : model.graph.nodes[i].outputs) {
      if (out.empty() || !needed.count(out) || existing.count(out)) continue;
      folded.graph.initializers.push_back(inferred.values.at(out).AsConstant(out));
    }
  }
  folded.graph.nodes = std::move(kept);
  return folded;
}

// Initializers are used in place from the mapped file, where protobuf leaves
// them at any byte offset. Kernels read them as typed arrays, so a tensor
// whose bytes are not aligned to its element size is copied once, here.
void AlignInitializers(ir::Graph& g) {
  for (ir::Tensor& t : g.initializers) {
    size_t align = std::max(1, ir::DataTypeBits(t.dtype) / 8);
    if (t.bytes.empty() || reinterpret_cast<uintptr_t>(t.bytes.data()) % align == 0) continue;
    std::shared_ptr<uint8_t[]> copy(new uint8_t[t.bytes.size()]);  // new[] aligns to max_align_t
    std::memcpy(copy.get(), t.bytes.data(), t.bytes.size());
    t.bytes = {copy.get(), t.bytes.size()};
    t.keep_alive = std::shared_ptr<const void>(copy, copy.get());
  }
}

std::string PlanKey(const std::vector<InputBinding>& inputs) {
  std::string key;
  for (const InputBinding& b : inputs) {
    if (b.value && !b.value->is_dense()) {
      key += fmt::format("{}:{}:{};", b.name, b.value->Describe(), static_cast<int>(b.value->elem_type()));
      continue;
    }
    key += fmt::format("{}:{}:", b.name, static_cast<int>(b.dtype));
    for (int64_t d : b.shape) key += fmt::format("{},", d);
    key += ';';
  }
  return key;
}

}  // namespace

struct Session::State {
  ir::Model model;  // after load-time folding
  SessionOptions options;
  const Backend* cpu = nullptr;
  ModelInputs inputs;
  std::vector<ir::ValueInfo> outputs;
  std::vector<size_t> order;
  std::vector<const Backend*> node_backend;  // per node index of `model.graph.nodes`
  std::vector<NodePlacement> placement;
  std::vector<ir::QdqNote> int8_notes;
  std::string layout_note;  // which way the device's float32 convolutions went (conv_layout.h)
  Float16Summary float16;
  std::unordered_map<size_t, std::string> fallback_reasons;  // node -> why the first backend refused it
  std::unordered_map<std::string, Tensor> constants;
  std::unordered_map<std::string, Tensor> device_constants;  // copies on the device for device steps
  std::unique_ptr<ControlFlowBackend> control_flow;           // runs control-flow, sequence and optional nodes

  mutable std::mutex plan_mutex;
  mutable std::map<std::string, std::shared_ptr<const ExecutionPlan>> plans;

  // Recorded runs (options.device_graphs), per thread and plan.
  struct GraphSlot {
    int normal_runs = 0;
    bool unavailable = false;
    std::string note;
    std::unique_ptr<CapturedRun> run;
  };
  // Host arenas reused across runs (execution.h).
  mutable HostArenaPool host_arenas;
  mutable std::mutex graph_mutex;
  mutable std::map<std::pair<std::thread::id, const ExecutionPlan*>, GraphSlot> graphs;
  Result<std::vector<NamedTensor>> RunWithGraphs(const std::shared_ptr<const ExecutionPlan>& plan,
                                                 const std::vector<InputBinding>& inputs,
                                                 bool outputs_on_device) const;
  const Backend* DeviceBackend() const {
    for (const Backend* b : node_backend) {
      if (b && b->device() != Device::kHost) return b;
    }
    return nullptr;
  }

  Result<std::shared_ptr<const ExecutionPlan>> GetPlan(const std::vector<InputBinding>& bindings) const;
  Status UploadConstants();
};

// Constants read on the device by device steps are uploaded once, here, so
// runs do not copy weights.
Status Session::State::UploadConstants() {
  for (size_t i : order) {
    const Backend* b = node_backend[i];
    if (b->device() == Device::kHost) continue;
    const ir::Node& node = model.graph.nodes[i];
    for (size_t k = 0; k < node.inputs.size(); ++k) {
      const std::string& name = node.inputs[k];
      auto c = constants.find(name);
      if (name.empty() || c == constants.end() || device_constants.count(name) || b->InputOnHost(node, model.OpsetVersion(node.domain), k)) continue;
      Result<Tensor> up = b->ToDevice(c->second);
      if (!up.ok()) {
        return std::move(up).TakeStatus().WithContext(
            fmt::format("uploading weight '{}' ({}) to the {} device", name, c->second.Describe(), b->name()));
      }
      device_constants.emplace(name, std::move(up).value());
    }
  }
  for (const auto& b : options.backends) {
    if (b->device() != Device::kHost) VIGIL_RETURN_IF_ERROR(b->Synchronize());
  }
  return Status::Ok();
}

Result<std::shared_ptr<const ExecutionPlan>> Session::State::GetPlan(const std::vector<InputBinding>& bindings) const {
  std::string key = PlanKey(bindings);
  {
    std::lock_guard<std::mutex> lock(plan_mutex);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
  }
  std::map<std::string, ir::TypeInfo> input_types;
  for (const InputBinding& b : bindings) {
    if (!b.value || b.value->is_dense()) {
      input_types[b.name] = ops::TensorType(b.dtype, b.shape);
    } else if (b.value->kind() == Tensor::Kind::kSequence) {
      input_types[b.name] = ops::SequenceOf(ops::TensorTypeUnknownShape(b.value->elem_type()));
    } else {
      input_types[b.name] = ir::TypeInfo();  // an empty optional: the declared type
    }
  }
  FoldingPolicy folding{cpu, kPlanFoldLimit};
  VIGIL_ASSIGN_OR_RETURN(InferredGraph inferred, InferGraph(model, order, input_types, folding));
  BodyMemory bodies;
  for (size_t i : order) {
    const ir::Node& node = model.graph.nodes[i];
    if (node_backend[i] != control_flow.get() || !ops::IsControlFlowOp(node) || inferred.folded_nodes.count(i)) continue;
    std::vector<const ir::TypeInfo*> types;
    for (const std::string& in : node.inputs) {
      auto t = inferred.types.find(in);
      types.push_back(in.empty() || t == inferred.types.end() ? nullptr : &t->second);
    }
    VIGIL_ASSIGN_OR_RETURN(BodyMemory b, control_flow->PlanBodies(node, model.OpsetVersion(node.domain), types));
    bodies.Add(b);
  }
  VIGIL_ASSIGN_OR_RETURN(auto plan,
                         BuildExecutionPlan(model, order, node_backend, std::move(inferred), std::move(bodies)));
  std::lock_guard<std::mutex> lock(plan_mutex);
  auto [it, inserted] = plans.emplace(key, std::move(plan));
  return it->second;
}

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::Create(ir::Model model, SessionOptions options) {
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  state->cpu = FindCpu(state->options);
  if (state->options.backends.empty()) return InternalError("a session needs at least one backend");
  VIGIL_RETURN_IF_ERROR(ir::ValidateModel(model));
  // If, Loop and Scan read values of this graph inside their bodies: as
  // inputs of the node, the planner and the folding see them.
  AppendImplicitInputs(model.graph);
  VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> order, ir::TopologicalOrder(model.graph));
  // FlexAttention runs as the ONNX ops it stands for, its modifier bodies
  // inlined (ir/expand_flex_attention.h); the expansion needs Q's dtype.
  if (ir::HasFlexAttention(model.graph)) {
    VIGIL_ASSIGN_OR_RETURN(InferredGraph declared, InferGraph(model, order, {}, FoldingPolicy{}));
    VIGIL_ASSIGN_OR_RETURN(size_t expanded, ir::ExpandFlexAttention(model, declared.types));
    static_cast<void>(expanded);
    VIGIL_ASSIGN_OR_RETURN(order, ir::TopologicalOrder(model.graph));
  }
  AlignInitializers(model.graph);

  // Load-time shape inference with the declared input types, folding every
  // node whose inputs are all constant.
  FoldingPolicy folding{state->options.constant_folding ? state->cpu : nullptr, kLoadFoldLimit};
  // A device session that lays convolutions out for the device keeps the
  // weights' DequantizeLinear nodes for the QDQ pass, which reads their
  // int8 inputs; what it does not fuse is folded after it.
  const bool qdq_pass = state->options.backends[0]->device() != Device::kHost &&
                        state->options.conv_layout == ConvLayout::kNhwcWhereFaster;
  FoldingPolicy first_folding = folding;
  first_folding.keep_dequantize = qdq_pass;
  VIGIL_ASSIGN_OR_RETURN(InferredGraph inferred, InferGraph(model, order, {}, first_folding));
  state->model = ApplyFolding(model, inferred);
  AlignInitializers(state->model.graph);  // folded values may be views of attribute bytes
  if (state->options.float16_inputs) {
    // A float32 model run in float16: rewritten on the folded graph, then
    // its types inferred again for the passes below.
    VIGIL_ASSIGN_OR_RETURN(state->float16,
                           ConvertToFloat16(state->model, inferred.types, state->options.float16_inputs));
    VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> float16_order, ir::TopologicalOrder(state->model.graph));
    VIGIL_ASSIGN_OR_RETURN(inferred, InferGraph(state->model, float16_order, {}, first_folding));
    state->model = ApplyFolding(state->model, inferred);
    AlignInitializers(state->model.graph);
  }
  if (state->options.fold_batch_norm) {
    // The Conv writes the BatchNormalization's output, whose inferred type
    // stays valid; nothing else is renamed.
    VIGIL_ASSIGN_OR_RETURN(size_t folded, ir::FoldBatchNormIntoConv(state->model));
    static_cast<void>(folded);
  }
  if (state->options.backends[0]->device() != Device::kHost) {
    // Linear layers as one cuBLASLt product with a bias epilogue, erf-GELU
    // chains as one kernel; fused nodes write the outputs they replace, whose
    // inferred types stay valid.
    VIGIL_ASSIGN_OR_RETURN(size_t linear, ir::FuseMatMulBias(state->model, inferred.types));
    VIGIL_ASSIGN_OR_RETURN(size_t gelu, ir::FuseGelu(state->model));
    // Self-attention chains (after MatMulBias, which writes their packed
    // projection) as one ai.vigil.Attention, where the device has a kernel
    // for it (the CPU fallback is a reference, far slower than the chain);
    // VIGIL_FUSE_ATTENTION=0 keeps them, for before/after measurements. The
    // pass records the types of the values it creates.
    size_t attention = 0;
    ir::Node probe;
    probe.op_type = ir::kAttentionOp;
    probe.domain = ir::kVigilDomain;
    if (DevSwitchOn("VIGIL_FUSE_ATTENTION") &&
        state->options.backends[0]->Supports(probe, ir::kVigilOpsetVersion)) {
      const Backend& device = *state->options.backends[0];
      auto accept = [&device](const ir::Node& node, const std::vector<const ir::TypeInfo*>& inputs) {
        NodeTypes types{inputs, {}};
        return device.SupportsTyped(node, ir::kVigilOpsetVersion, types, nullptr);
      };
      VIGIL_ASSIGN_OR_RETURN(attention, ir::FuseAttention(state->model, inferred.types, accept));
      // Then batch-first, without the two layout Transposes around each
      // block; VIGIL_ATTENTION_BATCH_FIRST=0 keeps them.
      if (attention > 0 && DevSwitchOn("VIGIL_ATTENTION_BATCH_FIRST")) {
        VIGIL_ASSIGN_OR_RETURN(size_t relaid, ir::AttentionBatchFirst(state->model, inferred.types));
        static_cast<void>(relaid);
      }
    }
    // Then each block's residual Add into the MatMulBias before it (after
    // the batch-first rewrite, which writes the out-projection's), where the
    // device takes the 4-input node: cuBLASLt adds R as its C matrix.
    // VIGIL_FUSE_RESIDUAL=0 keeps the Adds, for before/after measurements.
    const Backend& device = *state->options.backends[0];
    auto device_takes = [&](const ir::Node& fused) { return DeviceTakesFused(device, inferred.types, fused); };
    size_t residual = 0;
    if (DevSwitchOn("VIGIL_FUSE_RESIDUAL")) {
      VIGIL_ASSIGN_OR_RETURN(residual, ir::FuseResidualAdd(state->model, inferred.types, device_takes));
    }
    // Then each MLP's first product and its GELU, where the device applies
    // the GELU in the product's epilogue (CUDA: float16 and bfloat16);
    // VIGIL_FUSE_GELU_EPILOGUE=0 keeps them apart, for before/after
    // measurements.
    size_t gelu_epilogue = 0;
    if (DevSwitchOn("VIGIL_FUSE_GELU_EPILOGUE")) {
      VIGIL_ASSIGN_OR_RETURN(gelu_epilogue, ir::FuseMatMulBiasGelu(state->model, device_takes));
    }
    static_cast<void>(linear + gelu + attention + residual + gelu_epilogue);
  }
  // QDQ chains as the device's int8 ops (ir/fuse_qdq.h), where the session
  // lays convolutions out for the device (QConv only runs channels-last) and
  // the device takes each fused node.
  bool refold = false;
  if (qdq_pass) {
    const Backend& device = *state->options.backends[0];
    const ir::Model& model = state->model;
    auto accept = [&device, &model](const ir::Node& fused, const std::vector<const ir::TypeInfo*>& inputs,
                                    const std::vector<const ir::TypeInfo*>& outputs, std::string* why_not) {
      return DeviceTakesFusedQdq(fused, inputs, outputs, device, model, why_not);
    };
    VIGIL_ASSIGN_OR_RETURN(ir::QdqStats qdq, ir::FuseQdq(state->model, inferred.types, accept));
    state->int8_notes = std::move(qdq.notes);
    for (const ir::Node& n : state->model.graph.nodes) refold = refold || n.op_type == "DequantizeLinear";
    refold = refold && folding.evaluator != nullptr;
  }
  VIGIL_ASSIGN_OR_RETURN(bool relaid, ApplyConvLayout(state->model, inferred.types, state->options.conv_layout,
                                                      *state->options.backends[0], state->options.nhwc_float32,
                                                      &state->layout_note));
  if (relaid || refold) {
    // Again, for the new values' types and to fold the weight transposes
    // into KRSC initializers (and the DequantizeLinear nodes of weights the
    // QDQ pass left).
    VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> relaid_order, ir::TopologicalOrder(state->model.graph));
    VIGIL_ASSIGN_OR_RETURN(inferred, InferGraph(state->model, relaid_order, {}, folding));
    state->model = ApplyFolding(state->model, inferred);
    AlignInitializers(state->model.graph);
  }
  // A convolution the layout pass left in the model's layout (NCHW: 1D and
  // 3D ones, float32 where channels-last is not chosen, --layout nchw) takes
  // its residual Add and its Relu or Clip(0, 6) into one ai.vigil.FusedConv
  // where the device runs it (ir/fuse_conv_epilogue.h): one pass over its
  // result instead of three. VIGIL_FUSE_CONV_EPILOGUE=0 keeps them apart,
  // for before/after measurements. The fused node writes the value it
  // replaces, whose inferred type stays valid.
  if (state->options.backends[0]->device() != Device::kHost && DevSwitchOn("VIGIL_FUSE_CONV_EPILOGUE")) {
    const Backend& device = *state->options.backends[0];
    auto device_takes = [&](const ir::Node& fused) { return DeviceTakesFused(device, inferred.types, fused); };
    VIGIL_ASSIGN_OR_RETURN(size_t fused_convs, ir::FuseConvEpilogue(state->model, inferred.types, device_takes));
    static_cast<void>(fused_convs);
  }
  if (state->options.fuse_activations) {
    // After the layout pass, which moves transposes through the chains; the
    // fused nodes write the outputs they replace, whose inferred types stay
    // valid. (A device session has fused its GELU chains already: the second
    // pass finds none.)
    VIGIL_ASSIGN_OR_RETURN(size_t silu, ir::FuseSilu(state->model));
    VIGIL_ASSIGN_OR_RETURN(size_t hardswish, ir::FuseHardSwishChains(state->model));
    VIGIL_ASSIGN_OR_RETURN(size_t gelu, ir::FuseGelu(state->model));
    static_cast<void>(silu + hardswish + gelu);
  }
  // Transposes that meet across a Reshape (the NHWC layout pass's to_nchw
  // before a ViT's patch flattening) cancel or compose into one, on the
  // types just inferred; VIGIL_CANCEL_TRANSPOSES=0 keeps them, for
  // before/after measurements. Device sessions only: CPU reference graphs
  // stay as written.
  if (state->options.backends[0]->device() != Device::kHost && DevSwitchOn("VIGIL_CANCEL_TRANSPOSES")) {
    VIGIL_ASSIGN_OR_RETURN(size_t cancelled, ir::CancelTransposeReshape(state->model, inferred.types));
    static_cast<void>(cancelled);
  }
  // Work an exporter repeats (BERT's attention mask, once per layer) is
  // done once, in device sessions, after every fusion (which then see the
  // graph as exported); VIGIL_ELIMINATE_COMMON=0 keeps it, for before/after
  // measurements. The surviving values have the dropped ones' types.
  if (state->options.backends[0]->device() != Device::kHost && DevSwitchOn("VIGIL_ELIMINATE_COMMON")) {
    VIGIL_ASSIGN_OR_RETURN(size_t common, ir::EliminateCommonSubexpressions(state->model));
    static_cast<void>(common);
  }
  VIGIL_ASSIGN_OR_RETURN(state->order, ir::TopologicalOrder(state->model.graph));

  const ir::Graph& g = state->model.graph;
  state->inputs = ListModelInputs(g);
  state->outputs = g.outputs;
  for (const ir::Tensor& t : g.initializers) state->constants[t.name] = Tensor::FromConstant(t);

  // Partition: each node goes to the first backend that supports it.
  state->node_backend.assign(g.nodes.size(), nullptr);
  auto type_of = [&](const std::string& name) -> const ir::TypeInfo* {
    auto it = inferred.types.find(name);
    return name.empty() || it == inferred.types.end() ? nullptr : &it->second;
  };
  state->control_flow = std::make_unique<ControlFlowBackend>(state->model, state->options);
  for (size_t i : state->order) {
    const ir::Node& node = g.nodes[i];
    int64_t opset = state->model.OpsetVersion(node.domain);
    NodeTypes types;
    for (const std::string& in : node.inputs) types.inputs.push_back(type_of(in));
    for (const std::string& out : node.outputs) types.outputs.push_back(type_of(out));
    if (state->control_flow->SupportsTyped(node, opset, types, nullptr)) {
      // The node runs on the host; its bodies' nodes go to the backends.
      state->node_backend[i] = state->control_flow.get();
      state->placement.push_back({i, node.Describe(i), std::string(state->control_flow->name()), {}});
      continue;
    }
    std::vector<std::string> refusals;  // "cpu: dtype int8 of input 0 is not among ...", per backend
    for (size_t b = 0; b < state->options.backends.size(); ++b) {
      std::string why_not;
      if (!state->options.backends[b]->SupportsTyped(node, opset, types, &why_not)) {
        refusals.push_back(fmt::format("{}: {}", state->options.backends[b]->name(),
                                       why_not.empty() ? "not supported" : why_not));
        if (b == 0 && state->options.no_fallback) {
          return UnsupportedError("{} (op {}, opset {}) cannot run on the {} backend, and fallback is off",
                                  ops::NodeLabel(node), node.op_type, opset, state->options.backends[0]->name())
              .WithFact("reason", why_not)
              .WithFix("allow fallback to the CPU backend, or replace the op");
        }
        if (b == 0) state->fallback_reasons[i] = why_not;
        continue;
      }
      state->node_backend[i] = state->options.backends[b].get();
      break;
    }
    if (!state->node_backend[i]) {
      // The last backend (the CPU, the fallback) says why in the summary;
      // every backend's reason is a fact.
      Status error = UnsupportedError("{} (op {}, opset {}): no backend can run it ({})", ops::NodeLabel(node),
                                      node.op_type, opset, refusals.empty() ? "no backend" : refusals.back());
      error.WithFact("backends", [&] {
        std::string s;
        for (const auto& b : state->options.backends) s += fmt::format("{}{}", s.empty() ? "" : ", ", b->name());
        return s;
      }());
      for (const std::string& r : refusals) error.WithFact("refused by", r);
      return error;
    }
    auto reason = state->fallback_reasons.find(i);
    state->placement.push_back({i, node.Describe(i), std::string(state->node_backend[i]->name()),
                                reason == state->fallback_reasons.end() ? std::string() : reason->second});
  }
  VIGIL_RETURN_IF_ERROR(state->UploadConstants());
  return std::unique_ptr<Session>(new Session(std::move(state)));
}

const ir::Model& Session::model() const { return state_->model; }
const ModelInputs& Session::inputs() const { return state_->inputs; }
const std::vector<ir::ValueInfo>& Session::outputs() const { return state_->outputs; }
const std::vector<NodePlacement>& Session::placement() const { return state_->placement; }
const std::vector<ir::QdqNote>& Session::int8_notes() const { return state_->int8_notes; }
const std::string& Session::layout_note() const { return state_->layout_note; }
const Float16Summary& Session::float16_summary() const { return state_->float16; }

Result<DimBindings> Session::Check(std::vector<InputBinding>& inputs) const {
  return ValidateInputs(state_->inputs, inputs);
}

Result<MemoryPlan> Session::Plan(std::vector<InputBinding> inputs) const {
  VIGIL_RETURN_IF_ERROR(Check(inputs).status());
  return PlanShapes(inputs);
}

Result<MemoryPlan> Session::PlanShapes(const std::vector<InputBinding>& shapes) const {
  VIGIL_ASSIGN_OR_RETURN(auto plan, state_->GetPlan(shapes));
  MemoryPlan memory = plan->memory;
  memory.device_arena_bytes = plan->device_memory.arena_bytes;
  memory.device_peak_live_bytes = plan->device_memory.peak_live_bytes;
  memory.bodies = plan->bodies;
  return memory;
}

// The first run at a plan's shapes runs normally (it builds the library
// plans and workspaces a recording must not allocate); the second records
// and replays; later ones replay. Where recording is impossible or fails,
// runs go on normally and the slot's note says why.
Result<std::vector<NamedTensor>> Session::State::RunWithGraphs(const std::shared_ptr<const ExecutionPlan>& plan,
                                                               const std::vector<InputBinding>& bindings,
                                                               bool outputs_on_device) const {
  GraphSlot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(graph_mutex);
    slot = &graphs[{std::this_thread::get_id(), plan.get()}];  // map nodes stay put
  }
  if (slot->run) return slot->run->Replay(bindings, outputs_on_device);
  if (!slot->unavailable && slot->normal_runs == 0) {
    std::string why_not;
    if (!CapturedRun::Recordable(model, *plan, &why_not)) {
      slot->unavailable = true;
      std::lock_guard<std::mutex> lock(graph_mutex);  // DeviceGraphNotes reads notes from other threads
      slot->note = "not used: " + why_not;
    }
  }
  if (!slot->unavailable && slot->normal_runs >= 1) {
    auto recorded = CapturedRun::Record(model, plan, constants, device_constants, bindings);
    std::lock_guard<std::mutex> lock(graph_mutex);
    if (recorded.ok()) {
      slot->run = std::move(recorded).value();
      slot->note = fmt::format("replaying a recording of the whole run ({} steps)", plan->steps.size());
    } else {
      slot->unavailable = true;
      slot->note = "not used: " + recorded.status().summary();
    }
  }
  if (slot->run) return slot->run->Replay(bindings, outputs_on_device);
  ++slot->normal_runs;
  return ExecutePlan(model, *plan, constants, device_constants, bindings, /*keep_all=*/false, nullptr,
                     outputs_on_device, &host_arenas);
}

std::vector<std::string> Session::DeviceGraphNotes() const {
  std::lock_guard<std::mutex> lock(state_->graph_mutex);
  std::vector<std::string> notes;
  for (const auto& [key, slot] : state_->graphs) {
    if (!slot.note.empty() && std::find(notes.begin(), notes.end(), slot.note) == notes.end()) {
      notes.push_back(slot.note);
    }
  }
  return notes;
}

std::vector<std::string> Session::BackendNotes() const {
  std::vector<std::string> notes;
  for (const auto& b : state_->options.backends) {
    for (std::string& n : b->Notes()) notes.push_back(std::move(n));
  }
  return notes;
}

Result<std::vector<NamedTensor>> Session::Run(std::vector<InputBinding> inputs) const {
  return Run(std::move(inputs), RunOptions{});
}

Result<std::vector<NamedTensor>> Session::Run(std::vector<InputBinding> inputs, const RunOptions& options) const {
  VIGIL_RETURN_IF_ERROR(Check(inputs).status());
  const Backend* dev = state_->DeviceBackend();
  for (const InputBinding& b : inputs) {
    if (!dev && b.device != Device::kHost) {
      return InvalidInputError("input '{}' is in device memory, but no node of this session runs on a device", b.name)
          .WithFix("bind host memory, or create the session with the CUDA backend");
    }
    if (dev && b.byte_size > 0) {
      VIGIL_RETURN_IF_ERROR(dev->CheckPointer(b.data, b.byte_size, b.device, options.device_id,
                                              fmt::format("input '{}'", b.name)));
    }
  }
  if (options.wait_for_stream) {
    if (!dev) return InvalidInputError("a CUDA stream was given, but no node of this session runs on a device");
    VIGIL_RETURN_IF_ERROR(dev->WaitForStream(options.wait_for_stream));
  }
  VIGIL_ASSIGN_OR_RETURN(auto plan, state_->GetPlan(inputs));
  if (state_->options.device_graphs) return state_->RunWithGraphs(plan, inputs, options.outputs_on_device);
  return ExecutePlan(state_->model, *plan, state_->constants, state_->device_constants, inputs, /*keep_all=*/false,
                     nullptr, options.outputs_on_device, &state_->host_arenas);
}

bool Session::HasDeviceBackend() const { return state_->DeviceBackend() != nullptr; }

Result<Tensor> Session::AllocateDeviceBuffer(ir::DataType dtype, std::vector<int64_t> shape) const {
  const Backend* dev = state_->DeviceBackend();
  if (!dev) return InvalidInputError("no node of this session runs on a device, so no device memory can be given");
  VIGIL_ASSIGN_OR_RETURN(Tensor t, dev->AllocateDevice(dtype, std::move(shape)));
  VIGIL_RETURN_IF_ERROR(dev->Synchronize());  // the allocation is stream-ordered; callers use it on any stream
  return t;
}

Status Session::CopyTensor(const Tensor& src, const Tensor& dst) const {
  if (src.byte_size() != dst.byte_size()) {
    return InternalError("copying {} into {}: the byte sizes differ", src.Describe(), dst.Describe());
  }
  if (src.on_host() && dst.on_host()) {
    if (src.byte_size()) std::memcpy(const_cast<void*>(dst.raw_data()), src.raw_data(), src.byte_size());
    return Status::Ok();
  }
  const Backend* dev = state_->DeviceBackend();
  if (!dev) return InvalidInputError("no node of this session runs on a device, so device memory cannot be copied");
  if (dst.on_host()) {
    VIGIL_ASSIGN_OR_RETURN(Tensor host, dev->ToHost(src));
    if (host.byte_size()) std::memcpy(const_cast<void*>(dst.raw_data()), host.raw_data(), host.byte_size());
    return Status::Ok();
  }
  VIGIL_RETURN_IF_ERROR(dev->CopyInto(src, dst));
  return dev->Synchronize();
}

Result<std::vector<NamedTensor>> Session::Run(std::vector<InputBinding> inputs, const NodeObserver& observer) const {
  VIGIL_RETURN_IF_ERROR(Check(inputs).status());
  VIGIL_ASSIGN_OR_RETURN(auto plan, state_->GetPlan(inputs));
  return ExecutePlan(state_->model, *plan, state_->constants, state_->device_constants, inputs, /*keep_all=*/false,
                     observer ? &observer : nullptr, /*outputs_on_device=*/false, &state_->host_arenas);
}

Result<Tensor> Session::UploadInput(const Tensor& host) const {
  for (const Backend* b : state_->node_backend) {
    if (b && b->device() != Device::kHost) {
      VIGIL_ASSIGN_OR_RETURN(Tensor up, b->ToDevice(host));
      VIGIL_RETURN_IF_ERROR(b->Synchronize());
      return up;
    }
  }
  return InvalidInputError("no node of this session runs on a device, so an input cannot be placed on one");
}

Result<Tensor> Session::AllocateHostBuffer(ir::DataType dtype, std::vector<int64_t> shape) const {
  for (const Backend* b : state_->node_backend) {
    if (b && b->device() != Device::kHost) return b->AllocateHost(dtype, std::move(shape));
  }
  return Tensor::Allocate(dtype, std::move(shape));
}

Result<std::vector<NamedTensor>> Session::RunKeepingAll(std::vector<InputBinding> inputs) const {
  VIGIL_RETURN_IF_ERROR(Check(inputs).status());
  VIGIL_ASSIGN_OR_RETURN(auto plan, state_->GetPlan(inputs));
  return ExecutePlan(state_->model, *plan, state_->constants, state_->device_constants, inputs, /*keep_all=*/true);
}

}  // namespace vigil::runtime
