// If, Loop and Scan: the ops whose attributes are graphs. Their bodies run in
// sessions of their own (runtime/control_flow.cpp); here are their counts and
// the types of their outputs, taken from the bodies' declared outputs.
//
// Sessions append each node's implicit inputs (the values its bodies read
// from enclosing graphs) to its inputs, so that planning sees them
// (runtime/control_flow.h); the explicit inputs come first, and the counts
// below are checked on those.
#include "ops/control_flow.h"

#include "ir/extract_subgraph.h"
#include "ops/attributes.h"
#include "ops/families.h"
#include "ops/schema.h"
#include "ops/shape_helpers.h"

namespace vigil::ops {

size_t ExplicitInputCount(const ir::Node& node) {
  size_t implicit = IsControlFlowOp(node) ? ir::ImplicitInputs(node).size() : 0;
  return node.inputs.size() >= implicit ? node.inputs.size() - implicit : 0;
}

bool IsControlFlowOp(const ir::Node& node) {
  return IsDefaultDomain(node.domain) && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan" ||
                                          node.op_type == "SequenceMap");
}

namespace {

Result<const ir::Graph*> GraphAttribute(const InferenceContext& ctx, const char* name) {
  const ir::Attribute* a = ctx.node().FindAttribute(name);
  if (!a || a->type != ir::AttributeType::kGraph || !a->g) {
    return ctx.Fail("attribute '{}' must be a graph", name);
  }
  return a->g.get();
}

// The declared type of a body output, or unknown. Symbolic dims are
// dropped: a name inside a body need not mean the same size outside it.
ir::TypeInfo Declared(const ir::Graph& g, size_t i) {
  if (i >= g.outputs.size() || !g.outputs[i].has_type) return {};
  ir::TypeInfo t = g.outputs[i].type;
  for (ir::Dim& d : t.shape.dims) {
    if (!d.value) d = ir::Dim{};
  }
  return t;
}

// Where two branches declare different shapes: the same rank with the dims
// they agree on, or an unknown shape.
ir::TypeInfo Merge(const ir::TypeInfo& a, const ir::TypeInfo& b) {
  if (a.kind != ir::TypeInfo::Kind::kTensor || b.kind != ir::TypeInfo::Kind::kTensor) {
    return a.kind == ir::TypeInfo::Kind::kUnknown ? b : a;
  }
  ir::TypeInfo m = a;
  if (a.elem_type != b.elem_type) m.elem_type = ir::DataType::kUndefined;
  if (!a.shape.rank_known || !b.shape.rank_known || a.shape.dims.size() != b.shape.dims.size()) {
    m.shape = {};
    return m;
  }
  for (size_t d = 0; d < m.shape.dims.size(); ++d) {
    if (a.shape.dims[d].value != b.shape.dims[d].value) m.shape.dims[d] = ir::Dim{};
  }
  return m;
}

// The type with a new leading (or `axis`) dim of unknown size: a scan output.
ir::TypeInfo Stacked(ir::TypeInfo t, int64_t axis) {
  if (t.kind != ir::TypeInfo::Kind::kTensor || !t.shape.rank_known) return t;
  int64_t rank = static_cast<int64_t>(t.shape.dims.size()) + 1;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    t.shape = {};
    return t;
  }
  t.shape.dims.insert(t.shape.dims.begin() + axis, ir::Dim{});
  return t;
}

Status InferIf(InferenceContext& ctx) {
  if (ExplicitInputCount(ctx.node()) != 1) return ctx.Fail("If takes 1 input (cond), has {}", ExplicitInputCount(ctx.node()));
  VIGIL_ASSIGN_OR_RETURN(const ir::Graph* then_g, GraphAttribute(ctx, "then_branch"));
  VIGIL_ASSIGN_OR_RETURN(const ir::Graph* else_g, GraphAttribute(ctx, "else_branch"));
  if (then_g->outputs.size() != ctx.num_outputs() || else_g->outputs.size() != ctx.num_outputs()) {
    return ctx.Fail("the node has {} outputs, then_branch {} and else_branch {}; all three must agree",
                    ctx.num_outputs(), then_g->outputs.size(), else_g->outputs.size());
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) ctx.set_output(i, Merge(Declared(*then_g, i), Declared(*else_g, i)));
  return Status::Ok();
}

Status InferLoop(InferenceContext& ctx) {
  size_t explicit_inputs = ExplicitInputCount(ctx.node());
  if (explicit_inputs < 2) return ctx.Fail("Loop takes at least 2 inputs (M, cond, which may be empty names)");
  VIGIL_ASSIGN_OR_RETURN(const ir::Graph* body, GraphAttribute(ctx, "body"));
  size_t carried = explicit_inputs - 2;
  if (body->inputs.size() != carried + 2) {
    return ctx.Fail("the body takes {} inputs; it must take 2 + the {} loop-carried values", body->inputs.size(),
                    carried);
  }
  if (body->outputs.size() < carried + 1) {
    return ctx.Fail("the body has {} outputs; it must return cond and the {} loop-carried values first",
                    body->outputs.size(), carried);
  }
  size_t scans = body->outputs.size() - 1 - carried;
  if (ctx.num_outputs() > carried + scans) {
    return ctx.Fail("the node has {} outputs; the body gives {} loop-carried values and {} scan outputs",
                    ctx.num_outputs(), carried, scans);
  }
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (i < carried) {
      ir::TypeInfo t = Declared(*body, 1 + i);
      const ir::TypeInfo* init = ctx.input_type(2 + i);
      if (t.kind == ir::TypeInfo::Kind::kUnknown && init && init->kind == ir::TypeInfo::Kind::kTensor) {
        t = TensorTypeUnknownShape(init->elem_type);  // the body may change its shape
      }
      ctx.set_output(i, t);
    } else {
      ctx.set_output(i, Stacked(Declared(*body, 1 + i), 0));
    }
  }
  return Status::Ok();
}

// Scan-8 has an optional sequence_lens input first, and a batch axis in
// front of every state and scan input and output.
Status InferScan(InferenceContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(const ir::Graph* body, GraphAttribute(ctx, "body"));
  VIGIL_ASSIGN_OR_RETURN(int64_t scan_inputs, RequiredIntAttr(ctx.node(), "num_scan_inputs"));
  const bool batched = ctx.opset() < 9;
  size_t explicit_inputs = ExplicitInputCount(ctx.node());
  if (batched) {
    if (explicit_inputs < 1) return ctx.Fail("Scan-8 takes sequence_lens (which may be an empty name) first");
    --explicit_inputs;
  }
  if (scan_inputs < 1 || static_cast<size_t>(scan_inputs) > explicit_inputs) {
    return ctx.Fail("num_scan_inputs is {}; it must be between 1 and the {} inputs", scan_inputs, explicit_inputs);
  }
  size_t states = explicit_inputs - static_cast<size_t>(scan_inputs);
  if (body->inputs.size() != explicit_inputs) {
    return ctx.Fail("the body takes {} inputs; it must take the node's {}", body->inputs.size(), explicit_inputs);
  }
  if (body->outputs.size() != ctx.num_outputs() || ctx.num_outputs() < states) {
    return ctx.Fail("the node has {} outputs and the body {}; both must be the {} states and then the scan outputs",
                    ctx.num_outputs(), body->outputs.size(), states);
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, IntsAttr(ctx.node(), "scan_output_axes", {}));
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    if (i < states) {
      const ir::TypeInfo* init = ctx.input_type(batched ? i + 1 : i);
      ir::TypeInfo t = batched ? Stacked(Declared(*body, i), 0) : Declared(*body, i);
      if (t.kind == ir::TypeInfo::Kind::kUnknown && init) t = *init;
      ctx.set_output(i, t);
    } else if (batched) {
      ctx.set_output(i, Stacked(Stacked(Declared(*body, i), 0), 0));
    } else {
      size_t k = i - states;
      ctx.set_output(i, Stacked(Declared(*body, i), k < out_axes.size() ? out_axes[k] : 0));
    }
  }
  return Status::Ok();
}

// Inputs are variadic here because sessions append the implicit ones; the
// inference functions check the explicit counts.
const OpSchema kControlFlowSchemas[] = {
    {"", "If", 1, kLatest, 1, kVariadic, 1, kVariadic, InferIf},
    {"", "Loop", 1, kLatest, 2, kVariadic, 1, kVariadic, InferLoop},
    {"", "Scan", 8, 8, 1, kVariadic, 1, kVariadic, InferScan},
    {"", "Scan", 9, kLatest, 1, kVariadic, 1, kVariadic, InferScan},
};

}  // namespace

std::span<const OpSchema> ControlFlowSchemas() { return kControlFlowSchemas; }

}  // namespace vigil::ops
