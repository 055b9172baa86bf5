// The sequence and optional ops on host values (ops/sequence.cpp has their
// schemas). A sequence's items own their memory: tensors put into one are
// copied, since the value they came from may live in the run's arena.
#include "runtime/sequence_ops.h"

#include <cstring>

#include <fmt/format.h>

#include "ops/attributes.h"
#include "ops/schema.h"
#include "ops/sequence.h"

namespace vigil::runtime {
namespace {

using ops::NodeLabel;

Status NeedDense(const ir::Node& node, const Tensor* t, size_t i) {
  if (!t) return InvalidModelError("{}: input {} is missing", NodeLabel(node), i);
  if (!t->is_dense()) return InvalidModelError("{}: input {} must be a tensor, is {}", NodeLabel(node), i, t->Describe());
  if (!t->on_host()) return InternalError("{}: input {} {} is not in host memory", NodeLabel(node), i, t->Describe());
  return Status::Ok();
}

Status NeedSequence(const ir::Node& node, const Tensor* t, size_t i) {
  if (!t) return InvalidModelError("{}: input {} is missing", NodeLabel(node), i);
  if (t->kind() != Tensor::Kind::kSequence) {
    return InvalidModelError("{}: input {} must be a sequence, is {}", NodeLabel(node), i, t->Describe());
  }
  return Status::Ok();
}

size_t ElementBytes(ir::DataType dtype) { return static_cast<size_t>(ir::DataTypeBits(dtype) / 8); }

Status CheckByteElements(const ir::Node& node, ir::DataType dtype) {
  if (ir::DataTypeBits(dtype) == 0 || ir::DataTypeBits(dtype) % 8 != 0) {
    return UnsupportedError("{}: dtype {} has no whole-byte elements, which sequences cannot hold",
                            NodeLabel(node), ir::DataTypeName(dtype));
  }
  return Status::Ok();
}

// A copy of a host tensor in memory of its own.
Result<Tensor> OwnedCopy(const ir::Node& node, const Tensor& t) {
  VIGIL_RETURN_IF_ERROR(CheckByteElements(node, t.dtype()));
  VIGIL_ASSIGN_OR_RETURN(Tensor copy, Tensor::Allocate(t.dtype(), t.shape()));
  if (t.byte_size()) std::memcpy(copy.raw_data(), t.raw_data(), t.byte_size());
  return copy;
}

// A position input: a one-element int32 or int64 tensor, in [-n, n + extra).
Result<size_t> Position(const ir::Node& node, const Tensor* t, size_t n, size_t extra, size_t default_value) {
  if (!t) return default_value;
  VIGIL_RETURN_IF_ERROR(NeedDense(node, t, 1));
  if (t->element_count() != 1 || (t->dtype() != ir::DataType::kInt64 && t->dtype() != ir::DataType::kInt32)) {
    return InvalidInputError("{}: position must be one int32 or int64, is {}", NodeLabel(node), t->Describe());
  }
  int64_t p = t->dtype() == ir::DataType::kInt64 ? t->data<int64_t>()[0] : t->data<int32_t>()[0];
  const int64_t count = static_cast<int64_t>(n);
  if (p < -count || p >= count + static_cast<int64_t>(extra)) {
    return InvalidInputError("{}: position {} is outside [{}, {}] for a sequence of {} tensors", NodeLabel(node), p,
                             -count, count + static_cast<int64_t>(extra) - 1, n);
  }
  return static_cast<size_t>(p < 0 ? p + count : p);
}

Status CheckItemDtype(const ir::Node& node, const Tensor& seq, const Tensor& item) {
  if (seq.elem_type() != ir::DataType::kUndefined && item.dtype() != seq.elem_type()) {
    return InvalidInputError("{}: the tensor is {}, but the sequence holds {}; a sequence's tensors share one dtype",
                             NodeLabel(node), item.Describe(), ir::DataTypeName(seq.elem_type()));
  }
  return Status::Ok();
}

Status RunConstruct(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < in.size(); ++i) {
    VIGIL_RETURN_IF_ERROR(NeedDense(node, in[i], i));
    if (in[i]->dtype() != in[0]->dtype()) {
      return InvalidInputError("{}: input {} is {} and input 0 {}; a sequence's tensors share one dtype",
                               NodeLabel(node), i, in[i]->Describe(), in[0]->Describe());
    }
    VIGIL_ASSIGN_OR_RETURN(Tensor copy, OwnedCopy(node, *in[i]));
    items.push_back(std::move(copy));
  }
  out[0] = Tensor::Sequence(in[0]->dtype(), std::move(items));
  return Status::Ok();
}

Status RunInsert(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  VIGIL_RETURN_IF_ERROR(NeedSequence(node, in[0], 0));
  VIGIL_RETURN_IF_ERROR(NeedDense(node, in[1], 1));
  VIGIL_RETURN_IF_ERROR(CheckItemDtype(node, *in[0], *in[1]));
  std::vector<Tensor> items = in[0]->items();
  VIGIL_ASSIGN_OR_RETURN(size_t at, Position(node, in.size() > 2 ? in[2] : nullptr, items.size(), 1, items.size()));
  VIGIL_ASSIGN_OR_RETURN(Tensor copy, OwnedCopy(node, *in[1]));
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), std::move(copy));
  out[0] = Tensor::Sequence(in[1]->dtype(), std::move(items));
  return Status::Ok();
}

Status RunAt(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  VIGIL_RETURN_IF_ERROR(NeedSequence(node, in[0], 0));
  const std::vector<Tensor>& items = in[0]->items();
  if (!in[1]) return InvalidModelError("{}: the position input is missing", NodeLabel(node));
  VIGIL_ASSIGN_OR_RETURN(size_t at, Position(node, in[1], items.size(), 0, 0));
  out[0] = items[at];  // items are immutable and own their memory
  return Status::Ok();
}

Status RunErase(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  VIGIL_RETURN_IF_ERROR(NeedSequence(node, in[0], 0));
  std::vector<Tensor> items = in[0]->items();
  if (items.empty()) return InvalidInputError("{}: the sequence is empty; there is nothing to erase", NodeLabel(node));
  VIGIL_ASSIGN_OR_RETURN(size_t at, Position(node, in.size() > 1 ? in[1] : nullptr, items.size(), 0, items.size() - 1));
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
  out[0] = Tensor::Sequence(in[0]->elem_type(), std::move(items));
  return Status::Ok();
}

Status RunLength(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  VIGIL_RETURN_IF_ERROR(NeedSequence(node, in[0], 0));
  VIGIL_ASSIGN_OR_RETURN(out[0], Tensor::Allocate(ir::DataType::kInt64, {}));
  out[0].data<int64_t>()[0] = static_cast<int64_t>(in[0]->items().size());
  return Status::Ok();
}

// Rows [begin, end) of `x` along `axis`, as a tensor of its own.
Result<Tensor> Rows(const Tensor& x, size_t axis, int64_t begin, int64_t end, bool drop_axis) {
  std::vector<int64_t> shape = x.shape();
  shape[axis] = end - begin;
  if (drop_axis) shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
  VIGIL_ASSIGN_OR_RETURN(Tensor part, Tensor::Allocate(x.dtype(), shape));
  size_t outer = 1, inner = ElementBytes(x.dtype());
  for (size_t d = 0; d < axis; ++d) outer *= static_cast<size_t>(x.dim(d));
  for (size_t d = axis + 1; d < x.rank(); ++d) inner *= static_cast<size_t>(x.dim(d));
  const size_t n = static_cast<size_t>(x.dim(axis)), rows = static_cast<size_t>(end - begin);
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(part.raw_data());
  for (size_t o = 0; o < outer && rows * inner; ++o) {
    std::memcpy(dst + o * rows * inner, src + (o * n + static_cast<size_t>(begin)) * inner, rows * inner);
  }
  return part;
}

Status RunSplit(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  VIGIL_RETURN_IF_ERROR(NeedDense(node, in[0], 0));
  const Tensor& x = *in[0];
  VIGIL_RETURN_IF_ERROR(CheckByteElements(node, x.dtype()));
  if (x.rank() == 0) return InvalidInputError("{}: the input is a scalar; there is no axis to split", NodeLabel(node));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::IntAttr(node, "axis", 0));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(node, axis_attr, static_cast<int64_t>(x.rank())));
  VIGIL_ASSIGN_OR_RETURN(int64_t keepdims, ops::IntAttr(node, "keepdims", 1));
  const size_t ax = static_cast<size_t>(axis);
  const int64_t n = x.dim(ax);
  std::vector<int64_t> sizes;
  const Tensor* split = in.size() > 1 ? in[1] : nullptr;
  if (!split) {
    sizes.assign(static_cast<size_t>(n), 1);
  } else {
    VIGIL_RETURN_IF_ERROR(NeedDense(node, split, 1));
    if (split->dtype() != ir::DataType::kInt64 && split->dtype() != ir::DataType::kInt32) {
      return InvalidInputError("{}: split must be int32 or int64, is {}", NodeLabel(node), split->Describe());
    }
    std::vector<int64_t> v(split->element_count());
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = split->dtype() == ir::DataType::kInt64 ? split->data<int64_t>()[i] : split->data<int32_t>()[i];
    }
    if (split->rank() == 0) {
      if (v[0] <= 0) return InvalidInputError("{}: split {} must be positive", NodeLabel(node), v[0]);
      for (int64_t at = 0; at < n; at += v[0]) sizes.push_back(std::min(v[0], n - at));
    } else {
      int64_t total = 0;
      for (int64_t s : v) {
        if (s < 0) return InvalidInputError("{}: split has a negative size {}", NodeLabel(node), s);
        total += s;
      }
      if (total != n) {
        return InvalidInputError("{}: split sizes add up to {}, but axis {} of the input {} has {}", NodeLabel(node),
                                 total, axis, x.Describe(), n);
      }
      sizes = std::move(v);
    }
  }
  const bool drop = !split && keepdims == 0;
  std::vector<Tensor> items;
  int64_t at = 0;
  for (int64_t s : sizes) {
    VIGIL_ASSIGN_OR_RETURN(Tensor part, Rows(x, ax, at, at + s, drop));
    items.push_back(std::move(part));
    at += s;
  }
  out[0] = Tensor::Sequence(x.dtype(), std::move(items));
  return Status::Ok();
}

Status RunConcat(const ir::Node& node, std::span<const Tensor* const> in, std::vector<Tensor>& out) {
  VIGIL_RETURN_IF_ERROR(NeedSequence(node, in[0], 0));
  const std::vector<Tensor>& items = in[0]->items();
  if (items.empty()) {
    return InvalidInputError("{}: the sequence is empty; there is nothing to concatenate", NodeLabel(node));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t axis_attr, ops::RequiredIntAttr(node, "axis"));
  VIGIL_ASSIGN_OR_RETURN(int64_t new_axis, ops::IntAttr(node, "new_axis", 0));
  const Tensor& first = items.front();
  VIGIL_RETURN_IF_ERROR(CheckByteElements(node, first.dtype()));
  const int64_t rank = static_cast<int64_t>(first.rank()) + (new_axis ? 1 : 0);
  if (rank == 0) return InvalidInputError("{}: the tensors are scalars; give new_axis=1 to stack them", NodeLabel(node));
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::NormalizeAxis(node, axis_attr, rank));
  const size_t ax = static_cast<size_t>(axis);
  // Each item as rank-`rank` blocks: with new_axis a 1 is inserted at axis.
  std::vector<int64_t> out_shape = first.shape();
  if (new_axis) out_shape.insert(out_shape.begin() + axis, 0);
  else out_shape[ax] = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const Tensor& t = items[k];
    bool fits = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (size_t d = 0; fits && d < t.rank(); ++d) fits = t.dim(d) == first.dim(d) || (!new_axis && d == ax);
    if (!fits) {
      return InvalidInputError("{}: tensor {} of the sequence is {} and tensor 0 {}; they must agree {}",
                               NodeLabel(node), k, t.Describe(), first.Describe(),
                               new_axis ? "in every dim" : fmt::format("except along axis {}", axis));
    }
    out_shape[ax] += new_axis ? 1 : t.dim(ax);
  }
  VIGIL_ASSIGN_OR_RETURN(out[0], Tensor::Allocate(first.dtype(), out_shape));
  size_t outer = 1, inner = ElementBytes(first.dtype());
  for (size_t d = 0; d < ax; ++d) outer *= static_cast<size_t>(out_shape[d]);
  for (size_t d = ax + 1; d < out_shape.size(); ++d) inner *= static_cast<size_t>(out_shape[d]);
  const size_t out_rows = static_cast<size_t>(out_shape[ax]);
  auto* dst = static_cast<uint8_t*>(out[0].raw_data());
  size_t row = 0;
  for (const Tensor& t : items) {
    const size_t rows = new_axis ? 1 : static_cast<size_t>(t.dim(ax));
    const auto* src = static_cast<const uint8_t*>(t.raw_data());
    for (size_t o = 0; o < outer && rows * inner; ++o) {
      std::memcpy(dst + (o * out_rows + row) * inner, src + o * rows * inner, rows * inner);
    }
    row += rows;
  }
  return Status::Ok();
}

// A dense value passed on (Optional, OptionalGetElement, Identity): copied,
// since it may live in the run's arena; sequences and empty optionals are
// immutable and shared.
Result<Tensor> PassOn(const ir::Node& node, const Tensor& t) {
  if (!t.is_dense()) return t;
  if (!t.on_host()) return InternalError("{}: {} is not in host memory", NodeLabel(node), t.Describe());
  return OwnedCopy(node, t);
}

}  // namespace

bool TakesNonDenseValues(const ir::Node& node, const NodeTypes& types) {
  if (ops::IsSequenceOp(node)) return true;
  for (const auto* list : {&types.inputs, &types.outputs}) {
    for (const ir::TypeInfo* t : *list) {
      if (t && (t->kind == ir::TypeInfo::Kind::kSequence || t->kind == ir::TypeInfo::Kind::kOptional)) return true;
    }
  }
  return false;
}

Status RunSequenceOp(const ir::Node& node, int64_t opset, std::span<const Tensor* const> in,
                     std::vector<Tensor>& out) {
  static_cast<void>(opset);
  out.resize(node.outputs.size());
  const std::string& op = node.op_type;
  if (op == "SequenceEmpty") {
    VIGIL_ASSIGN_OR_RETURN(int64_t dtype, ops::IntAttr(node, "dtype", static_cast<int64_t>(ir::DataType::kFloat32)));
    out[0] = Tensor::Sequence(static_cast<ir::DataType>(dtype), {});
    return Status::Ok();
  }
  if (op == "SequenceConstruct") return RunConstruct(node, in, out);
  if (op == "SequenceInsert") return RunInsert(node, in, out);
  if (op == "SequenceAt") return RunAt(node, in, out);
  if (op == "SequenceErase") return RunErase(node, in, out);
  if (op == "SequenceLength") return RunLength(node, in, out);
  if (op == "SplitToSequence") return RunSplit(node, in, out);
  if (op == "ConcatFromSequence") return RunConcat(node, in, out);
  const Tensor* x = in.empty() ? nullptr : in[0];
  if (op == "Optional") {
    if (!x) {
      out[0] = Tensor::EmptyOptional();
      return Status::Ok();
    }
    VIGIL_ASSIGN_OR_RETURN(out[0], PassOn(node, *x));
    return Status::Ok();
  }
  if (op == "OptionalHasElement") {
    VIGIL_ASSIGN_OR_RETURN(out[0], Tensor::Allocate(ir::DataType::kBool, {}));
    out[0].data<uint8_t>()[0] = x && x->kind() != Tensor::Kind::kEmptyOptional;
    return Status::Ok();
  }
  if (op == "OptionalGetElement") {
    if (!x || x->kind() == Tensor::Kind::kEmptyOptional) {
      return InvalidInputError("{}: the optional input has no value", NodeLabel(node))
          .WithFix("check it first with OptionalHasElement");
    }
    VIGIL_ASSIGN_OR_RETURN(out[0], PassOn(node, *x));
    return Status::Ok();
  }
  // Any other op given a sequence or an optional: only Identity passes one on.
  if (ops::IsDefaultDomain(node.domain) && op == "Identity" && x) {
    VIGIL_ASSIGN_OR_RETURN(out[0], PassOn(node, *x));
    return Status::Ok();
  }
  return UnsupportedError("{}: op {} on sequence or optional values is not supported", NodeLabel(node), op);
}

}  // namespace vigil::runtime
