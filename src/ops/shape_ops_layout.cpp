// Shape inference of the ops that rearrange a tensor without looking at its
// values: Reshape, Flatten, Transpose, Squeeze, Unsqueeze, Concat, Split,
// Expand, Tile. Exported models compute shapes with these, so every function
// uses known input values (shape, axes, repeats) to give exact dims.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "ops/shape_ops_common.h"
#include "ops/families.h"

namespace vigil::ops::shape_family {
namespace {

using Dims = std::vector<ir::Dim>;

// The dim a Reshape's -1 stands for: input elements divided by the product of
// the other output dims. Symbols that appear on both sides cancel, so
// [N,3,4] -> [N,-1] gives 12 and [2,N] -> [-1,2] gives N.
Result<ir::Dim> InferMinusOne(InferenceContext& ctx, const Dims* in, const Dims& out, size_t at) {
  if (!in) return ctx.NewSymbol();
  int64_t in_known = 1, out_known = 1;
  std::multiset<std::string> in_symbols;
  for (const ir::Dim& d : *in) {
    if (d.value) {
      std::optional<int64_t> p = CheckedMul(in_known, *d.value);
      if (!p) return ctx.NewSymbol();
      in_known = *p;
    } else if (d.is_symbolic()) {
      in_symbols.insert(d.param);
    } else {
      return ctx.NewSymbol();
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == at) continue;
    const ir::Dim& d = out[i];
    if (d.value) {
      std::optional<int64_t> p = CheckedMul(out_known, *d.value);
      if (!p) return ctx.NewSymbol();
      out_known = *p;
      continue;
    }
    auto it = d.is_symbolic() ? in_symbols.find(d.param) : in_symbols.end();
    if (it == in_symbols.end()) return ctx.NewSymbol();
    in_symbols.erase(it);
  }
  if (in_symbols.empty()) {
    if (out_known == 0) return ctx.Fail("cannot infer the -1 dim of the shape: the other dims multiply to 0");
    if (in_known % out_known != 0) {
      return ctx.Fail("cannot reshape {} elements: not divisible by {} (the product of the other dims)", in_known,
                      out_known);
    }
    return ir::Dim::Known(in_known / out_known);
  }
  if (in_symbols.size() == 1 && in_known == out_known && out_known != 0) {
    return ir::Dim::Symbolic(*in_symbols.begin());
  }
  return ctx.NewSymbol();
}

Status CheckReshapeCount(InferenceContext& ctx, const Dims* in, const Dims& out) {
  auto in_known = KnownDims(ctx.input_type(0));
  if (!in_known) return Status::Ok();
  std::optional<int64_t> a = 1, b = 1;
  for (int64_t v : *in_known) a = a ? CheckedMul(*a, v) : a;
  for (const ir::Dim& d : out) {
    if (!d.value) return Status::Ok();
    b = b ? CheckedMul(*b, *d.value) : b;
  }
  if (!a || !b) return ctx.Fail("the element count of the input or of the shape overflows int64");
  if (a != b) {
    return ctx.Fail("cannot reshape {} ({} elements) to {} ({} elements)", ir::ShapeToString({true, *in}), *a,
                    ir::ShapeToString({true, out}), *b);
  }
  return Status::Ok();
}

Status InferReshape(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  std::optional<std::vector<int64_t>> shape;
  if (ctx.opset() < 5) {
    VIGIL_ASSIGN_OR_RETURN(shape, RequiredIntsAttr(ctx.node(), "shape"));
  } else {
    VIGIL_ASSIGN_OR_RETURN(shape, KnownInts(ctx, 1));
  }
  VIGIL_ASSIGN_OR_RETURN(int64_t allowzero, IntAttr(ctx.node(), "allowzero", 0));
  if (ctx.opset() < 14) allowzero = 0;
  if (!shape) {
    std::optional<int64_t> rank = KnownLength(ctx, 1);
    if (rank) SetTensor(ctx, 0, dtype, Symbols(ctx, *rank));
    else SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  const Dims* in = InputDims(ctx, 0);
  Dims out;
  std::optional<size_t> minus_one;
  bool has_zero = false;
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t v = (*shape)[i];
    if (v == -1) {
      if (minus_one) return ctx.Fail("shape has more than one -1 (at {} and {})", *minus_one, i);
      minus_one = i;
      out.push_back(ir::Dim{});
    } else if (v == 0 && !allowzero) {
      if (in && i >= in->size()) {
        return ctx.Fail("shape[{}] is 0 (copy the input dim) but the input has rank {}", i, in->size());
      }
      out.push_back(in ? (*in)[i] : ctx.NewSymbol());
    } else if (v < 0) {
      return ctx.Fail("shape[{}] is {}; dims must be >= -1", i, v);
    } else {
      has_zero = has_zero || v == 0;
      out.push_back(ir::Dim::Known(v));
    }
  }
  if (has_zero && minus_one) return ctx.Fail("shape has both 0 and -1 while allowzero=1");
  if (minus_one) {
    VIGIL_ASSIGN_OR_RETURN(out[*minus_one], InferMinusOne(ctx, in, out, *minus_one));
  } else {
    VIGIL_RETURN_IF_ERROR(CheckReshapeCount(ctx, in, out));
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferFlatten(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 1));
  if (!in) {
    SetTensor(ctx, 0, dtype, Symbols(ctx, 2));
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(in->size());
  if (axis < -rank || axis > rank) return ctx.Fail("axis {} is out of range for a rank-{} input", axis, rank);
  if (axis < 0) axis += rank;
  std::span<const ir::Dim> all(*in);
  SetTensor(ctx, 0, dtype, {ProductDim(ctx, all.first(axis)), ProductDim(ctx, all.subspan(axis))});
  return Status::Ok();
}

Status InferTranspose(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> perm, IntsAttr(ctx.node(), "perm"));
  if (!in) {
    if (perm.empty()) SetUnknownShape(ctx, 0, dtype);
    else SetTensor(ctx, 0, dtype, Symbols(ctx, perm.size()));
    return Status::Ok();
  }
  size_t rank = in->size();
  if (!HasAttr(ctx.node(), "perm")) {
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  }
  if (perm.size() != rank) return ctx.Fail("perm has {} entries but the input has rank {}", perm.size(), rank);
  std::vector<bool> seen(rank, false);
  Dims out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) {
      return ctx.Fail("perm [{}] is not a permutation of 0..{}", fmt::join(perm, ","), rank - 1);
    }
    seen[p] = true;
    out.push_back((*in)[p]);
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

// Squeeze/Unsqueeze axes: the attribute before opset 13, input 1 from 13.
// nullopt when given as an input whose value is not known.
Result<std::optional<std::vector<int64_t>>> AxesOf(InferenceContext& ctx, bool* present) {
  if (ctx.opset() < 13) {
    *present = HasAttr(ctx.node(), "axes");
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, IntsAttr(ctx.node(), "axes"));
    return std::optional<std::vector<int64_t>>(std::move(axes));
  }
  *present = ctx.has_input(1);
  if (!*present) return std::optional<std::vector<int64_t>>(std::vector<int64_t>{});
  return KnownInts(ctx, 1);
}

// Normalised, sorted axes; an error on out-of-range or repeated ones.
Result<std::vector<int64_t>> NormalizeAxes(InferenceContext& ctx, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) {
    VIGIL_ASSIGN_OR_RETURN(a, NormalizeAxis(ctx.node(), a, rank, "axes entry"));
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) return ctx.Fail("axes contains a repeated axis");
  return axes;
}

Status InferSqueeze(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  bool present = false;
  VIGIL_ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, &present));
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  if (!axes) {
    std::optional<int64_t> n = KnownLength(ctx, 1);
    if (n && *n <= static_cast<int64_t>(in->size())) SetTensor(ctx, 0, dtype, Symbols(ctx, in->size() - *n));
    else SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  Dims out;
  if (!present || axes->empty()) {
    // Every dim known to be 1 goes; an unknown dim might be 1, so the rank is unknown.
    for (const ir::Dim& d : *in) {
      if (!d.value) {
        SetUnknownShape(ctx, 0, dtype);
        return Status::Ok();
      }
      if (*d.value != 1) out.push_back(d);
    }
    SetTensor(ctx, 0, dtype, std::move(out));
    return Status::Ok();
  }
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> sorted, NormalizeAxes(ctx, *axes, in->size()));
  for (size_t i = 0; i < in->size(); ++i) {
    bool squeezed = std::binary_search(sorted.begin(), sorted.end(), static_cast<int64_t>(i));
    const ir::Dim& d = (*in)[i];
    if (squeezed && d.value && *d.value != 1) return ctx.Fail("cannot squeeze axis {} of size {}", i, *d.value);
    if (!squeezed) out.push_back(d);
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferUnsqueeze(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  bool present = false;
  VIGIL_ASSIGN_OR_RETURN(auto axes, AxesOf(ctx, &present));
  if (!present) return ctx.Fail("Unsqueeze needs axes");
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  if (!axes) {
    std::optional<int64_t> n = KnownLength(ctx, 1);
    if (n) SetTensor(ctx, 0, dtype, Symbols(ctx, in->size() + *n));
    else SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t out_rank = static_cast<int64_t>(in->size() + axes->size());
  VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> sorted, NormalizeAxes(ctx, *axes, out_rank));
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (std::binary_search(sorted.begin(), sorted.end(), i)) out.push_back(ir::Dim::Known(1));
    else out.push_back((*in)[next++]);
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferConcat(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  // Concat-1 had an optional axis defaulting to 1; from opset 4 it is required.
  int64_t axis = 0;
  if (ctx.opset() < 4) {
    VIGIL_ASSIGN_OR_RETURN(axis, IntAttr(ctx.node(), "axis", 1));
  } else {
    VIGIL_ASSIGN_OR_RETURN(axis, RequiredIntAttr(ctx.node(), "axis"));
  }
  const Dims* first = nullptr;
  for (size_t i = 0; i < ctx.num_inputs() && !first; ++i) first = InputDims(ctx, i);
  if (!first) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  int64_t rank = static_cast<int64_t>(first->size());
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, rank));
  Dims out = *first;
  std::vector<ir::Dim> axis_dims;
  bool all_known = true;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Dims* d = InputDims(ctx, i);
    if (!d) {
      all_known = false;
      continue;
    }
    if (d->size() != first->size()) {
      return ctx.Fail("input {} has rank {}, input 0 has rank {}; Concat needs equal ranks", i, d->size(), rank);
    }
    for (int64_t k = 0; k < rank; ++k) {
      if (k == axis) continue;
      const ir::Dim& a = out[k];
      const ir::Dim& b = (*d)[k];
      if (a.value && b.value && *a.value != *b.value) {
        return ctx.Fail("input {} has dim {} = {} but another input has {} (only axis {} may differ)", i, k,
                        *b.value, *a.value, axis);
      }
      if (!a.value && b.value) out[k] = b;  // a known dim is better than a symbol
    }
    axis_dims.push_back((*d)[axis]);
  }
  std::optional<int64_t> sum = 0;
  for (const ir::Dim& d : axis_dims) {
    if (!d.value) all_known = false;
    else if (sum) sum = CheckedAdd(*sum, *d.value);
  }
  out[axis] = all_known && sum ? ir::Dim::Known(*sum) : ctx.NewSymbol();
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

// The split sizes given explicitly: the attribute before opset 13 (or Split-1's
// optional second input), input 1 from 13. nullopt when absent; *unknown
// when given but not known.
Result<std::optional<std::vector<int64_t>>> SplitSizes(InferenceContext& ctx, bool* unknown) {
  *unknown = false;
  if (ctx.opset() < 13 && HasAttr(ctx.node(), "split")) {
    VIGIL_ASSIGN_OR_RETURN(std::vector<int64_t> s, IntsAttr(ctx.node(), "split"));
    return std::optional<std::vector<int64_t>>(std::move(s));
  }
  if (!ctx.has_input(1)) return std::optional<std::vector<int64_t>>();
  VIGIL_ASSIGN_OR_RETURN(auto s, KnownInts(ctx, 1));
  *unknown = !s.has_value();
  return s;
}

Status InferSplit(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  size_t n = ctx.num_outputs();
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, IntAttr(ctx.node(), "axis", 0));
  bool unknown = false;
  VIGIL_ASSIGN_OR_RETURN(auto split, SplitSizes(ctx, &unknown));
  bool has_num = ctx.opset() >= 18 && HasAttr(ctx.node(), "num_outputs");
  if (has_num) {
    VIGIL_ASSIGN_OR_RETURN(int64_t num, IntAttr(ctx.node(), "num_outputs", 0));
    if (num != static_cast<int64_t>(n)) return ctx.Fail("num_outputs is {} but the node has {} outputs", num, n);
    if (split || unknown) return ctx.Fail("split and num_outputs are both given; use one");
  }
  if (!in) {
    for (size_t i = 0; i < n; ++i) SetUnknownShape(ctx, i, dtype);
    return Status::Ok();
  }
  VIGIL_ASSIGN_OR_RETURN(axis, NormalizeAxis(ctx.node(), axis, in->size()));
  const ir::Dim& d = (*in)[axis];
  std::vector<ir::Dim> sizes;
  if (split) {
    if (split->size() != n) return ctx.Fail("split has {} entries but the node has {} outputs", split->size(), n);
    int64_t sum = 0;
    for (int64_t s : *split) {
      if (s < 0) return ctx.Fail("split [{}] has a negative size", fmt::join(*split, ","));
      std::optional<int64_t> next = CheckedAdd(sum, s);
      if (!next) return ctx.Fail("split [{}] overflows", fmt::join(*split, ","));
      sum = *next;
    }
    if (d.value && sum != *d.value) {
      return ctx.Fail("split sizes [{}] add up to {} but axis {} has size {}", fmt::join(*split, ","), sum, axis,
                      *d.value);
    }
    sizes = ToDims(*split);
  } else if (unknown || !d.value) {
    // Equal parts of an unknown size are still equal: one shared symbol.
    ir::Dim part = ctx.NewSymbol();
    for (size_t i = 0; i < n; ++i) sizes.push_back(unknown || has_num ? ctx.NewSymbol() : part);
  } else {
    int64_t total = *d.value, count = static_cast<int64_t>(n);
    if (total % count != 0 && !has_num) {
      return ctx.Fail("axis {} of size {} cannot be split into {} equal parts", axis, total, count);
    }
    // From opset 18 (num_outputs) the parts are ceil(total/count) and the last is smaller.
    int64_t part = total % count == 0 ? total / count : total / count + 1;
    int64_t last = total - part * (count - 1);
    if (last < 0) return ctx.Fail("axis {} of size {} cannot be split into {} parts", axis, total, count);
    for (int64_t i = 0; i < count; ++i) sizes.push_back(ir::Dim::Known(i + 1 == count ? last : part));
  }
  for (size_t i = 0; i < n; ++i) {
    Dims out = *in;
    out[axis] = sizes[i];
    SetTensor(ctx, i, dtype, std::move(out));
  }
  return Status::Ok();
}

Status InferExpand(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(auto shape, KnownInts(ctx, 1));
  if (shape) {
    for (int64_t v : *shape) {
      if (v < 0) return ctx.Fail("shape [{}] has a negative dim", fmt::join(*shape, ","));
    }
  }
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  if (shape) {
    VIGIL_ASSIGN_OR_RETURN(Dims out, BroadcastDims(ctx, *in, ToDims(*shape)));
    SetTensor(ctx, 0, dtype, std::move(out));
    return Status::Ok();
  }
  std::optional<int64_t> len = KnownLength(ctx, 1);
  if (!len) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  // Without the values: a known input dim other than 1 survives broadcasting.
  size_t rank = std::max<size_t>(in->size(), *len);
  Dims out = Symbols(ctx, rank);
  for (size_t i = 0; i < in->size(); ++i) {
    const ir::Dim& d = (*in)[i];
    if (d.value && *d.value != 1) out[rank - in->size() + i] = d;
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

Status InferTile(InferenceContext& ctx) {
  ir::DataType dtype = ElemType(ctx, 0);
  const Dims* in = InputDims(ctx, 0);
  VIGIL_ASSIGN_OR_RETURN(auto repeats, KnownInts(ctx, 1));
  if (!in) {
    SetUnknownShape(ctx, 0, dtype);
    return Status::Ok();
  }
  if (!repeats) {
    SetTensor(ctx, 0, dtype, Symbols(ctx, in->size()));
    return Status::Ok();
  }
  if (repeats->size() != in->size()) {
    return ctx.Fail("repeats has {} entries but the input has rank {}", repeats->size(), in->size());
  }
  Dims out;
  for (size_t i = 0; i < in->size(); ++i) {
    int64_t r = (*repeats)[i];
    const ir::Dim& d = (*in)[i];
    if (r < 0) return ctx.Fail("repeats[{}] is {}; repeats must be >= 0", i, r);
    if (r == 1) {
      out.push_back(d);
    } else if (d.value) {
      std::optional<int64_t> n = CheckedMul(*d.value, r);
      if (!n) return ctx.Fail("repeats[{}] = {} overflows dim {}", i, r, *d.value);
      out.push_back(ir::Dim::Known(*n));
    } else {
      out.push_back(r == 0 ? ir::Dim::Known(0) : ctx.NewSymbol());
    }
  }
  SetTensor(ctx, 0, dtype, std::move(out));
  return Status::Ok();
}

const OpSchema kLayoutSchemas[] = {
    {"", "Reshape", 1, 4, 1, 1, 1, 1, InferReshape},
    {"", "Reshape", 5, kLatest, 2, 2, 1, 1, InferReshape},
    {"", "Flatten", 1, kLatest, 1, 1, 1, 1, InferFlatten},
    {"", "Transpose", 1, kLatest, 1, 1, 1, 1, InferTranspose},
    {"", "Squeeze", 1, 12, 1, 1, 1, 1, InferSqueeze},
    {"", "Squeeze", 13, kLatest, 1, 2, 1, 1, InferSqueeze},
    {"", "Unsqueeze", 1, 12, 1, 1, 1, 1, InferUnsqueeze},
    {"", "Unsqueeze", 13, kLatest, 2, 2, 1, 1, InferUnsqueeze},
    {"", "Concat", 1, kLatest, 1, kVariadic, 1, 1, InferConcat},
    {"", "Split", 1, 1, 1, 2, 1, kVariadic, InferSplit},
    {"", "Split", 2, 12, 1, 1, 1, kVariadic, InferSplit},
    {"", "Split", 13, kLatest, 1, 2, 1, kVariadic, InferSplit},
    {"", "Expand", 8, kLatest, 2, 2, 1, 1, InferExpand},
    {"", "Tile", 6, kLatest, 2, 2, 1, 1, InferTile},
};

}  // namespace

std::span<const OpSchema> LayoutSchemas() { return kLayoutSchemas; }

}  // namespace vigil::ops::shape_family
