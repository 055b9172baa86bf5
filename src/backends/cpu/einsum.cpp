// The CPU Einsum kernel. Any equation is evaluated as a left-to-right chain
// of two-operand contractions:
//   1. size-1 dims that broadcast against a larger size elsewhere are dropped
//      from their operand (numpy broadcasting);
//   2. each operand is reduced on its own: diagonals of repeated labels are
//      taken, and labels no one else needs are summed out;
//   3. operands are contracted pairwise; each contraction is a batched matrix
//      product (labels shared and kept = batch, shared and not kept = K, the
//      rest = M or N), with the operands transposed into place only when
//      their layout is not already usable;
//   4. the result is transposed into the output's label order.
// Step 2 and the transposes use one general index walk (Rearrange), which on
// its own would compute any single-operand equation.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "backends/cpu/gemm.h"
#include "backends/cpu/linalg_compute.h"
#include "ops/einsum_equation.h"

namespace vigil::cpu {
namespace {

using Labels = std::vector<int>;

template <typename C>
struct Operand {
  Labels labels;               // one per dim
  std::vector<int64_t> dims;
  std::vector<C> owned;        // the data, unless `borrowed` is set
  const C* borrowed = nullptr;  // an input's buffer, used in place
  const C* data() const { return borrowed ? borrowed : owned.data(); }
};

bool Contains(const Labels& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

template <typename C>
C Add(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));  // wraps like numpy
  } else {
    return a + b;
  }
}

// Calls fn(offset) for every index of `dims` in row-major order, where
// offset = sum of index[d] * strides[d]. Empty dims: one call with offset 0.
template <typename Fn>
void ForEachOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, const Fn& fn) {
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  if (dims.empty()) {
    fn(int64_t{0});
    return;
  }
  const size_t last = dims.size() - 1;
  std::vector<int64_t> index(last, 0);
  int64_t base = 0;
  while (true) {
    for (int64_t i = 0; i < dims[last]; ++i) fn(base + i * strides[last]);
    size_t d = last;
    while (d-- > 0) {  // odometer step over the outer dims
      if (++index[d] < dims[d]) {
        base += strides[d];
        break;
      }
      base -= strides[d] * (dims[d] - 1);
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// The operand with dims `out_labels` (each a label of `in`, in that order),
// summing over every label of `in` not listed. A label that occurs several
// times in `in` walks their diagonal: its stride is the sum of theirs.
template <typename C>
Operand<C> Rearrange(const Operand<C>& in, const Labels& out_labels) {
  std::vector<int64_t> in_strides(in.dims.size());
  int64_t stride = 1;
  for (size_t d = in.dims.size(); d-- > 0;) {
    in_strides[d] = stride;
    stride *= in.dims[d];
  }
  auto walk_of = [&](int label, std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
    int64_t s = 0, size = 1;
    for (size_t d = 0; d < in.labels.size(); ++d) {
      if (in.labels[d] == label) {
        s += in_strides[d];
        size = in.dims[d];
      }
    }
    dims.push_back(size);
    strides.push_back(s);
  };
  Operand<C> out;
  out.labels = out_labels;
  std::vector<int64_t> out_strides, sum_dims, sum_strides;
  for (int label : out_labels) walk_of(label, out.dims, out_strides);
  Labels summed;
  for (int label : in.labels) {
    if (!Contains(out_labels, label) && !Contains(summed, label)) {
      summed.push_back(label);
      walk_of(label, sum_dims, sum_strides);
    }
  }
  int64_t count = 1;
  for (int64_t d : out.dims) count *= d;
  out.owned.assign(count, C(0));
  const C* src = in.data();
  C* dst = out.owned.data();
  ForEachOffset(out.dims, out_strides, [&](int64_t base) {
    C acc = C(0);
    ForEachOffset(sum_dims, sum_strides, [&](int64_t off) { acc = Add(acc, src[base + off]); });
    *dst++ = acc;
  });
  return out;
}

Labels Concat(std::initializer_list<const Labels*> parts) {
  Labels out;
  for (const Labels* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// `op` laid out as [batch, first, second] (as is), [batch, second, first]
// (as is, transposed = true), or else rearranged into the first layout.
template <typename C>
const Operand<C>& Arrange(const Operand<C>& op, const Labels& batch, const Labels& first, const Labels& second,
                          Operand<C>& scratch, bool& transposed) {
  transposed = false;
  if (op.labels == Concat({&batch, &first, &second})) return op;
  if (op.labels == Concat({&batch, &second, &first})) {
    transposed = true;
    return op;
  }
  scratch = Rearrange(op, Concat({&batch, &first, &second}));
  return scratch;
}

template <typename C>
Operand<C> Contract(const Operand<C>& a, const Operand<C>& b, const Labels& needed,
                    const std::map<int, int64_t>& sizes) {
  Labels batch, m, k, n;
  for (int label : a.labels) {
    const bool in_b = Contains(b.labels, label), keep = Contains(needed, label);
    (in_b ? (keep ? batch : k) : m).push_back(label);
  }
  for (int label : b.labels) {
    if (!Contains(a.labels, label)) n.push_back(label);
  }
  auto product = [&](const Labels& labels) {
    int64_t p = 1;
    for (int label : labels) p *= sizes.at(label);
    return p;
  };
  GemmShape s;
  s.m = product(m);
  s.n = product(n);
  s.k = product(k);
  const int64_t batches = product(batch);
  Operand<C> a_scratch, b_scratch;
  const Operand<C>& a2 = Arrange(a, batch, m, k, a_scratch, s.trans_a);
  const Operand<C>& b2 = Arrange(b, batch, k, n, b_scratch, s.trans_b);
  Operand<C> out;
  out.labels = Concat({&batch, &m, &n});
  for (int label : out.labels) out.dims.push_back(sizes.at(label));
  out.owned.resize(batches * s.m * s.n);
  if (out.owned.empty()) return out;
  std::vector<int64_t> a_offsets(batches), b_offsets(batches);
  for (int64_t i = 0; i < batches; ++i) {
    a_offsets[i] = i * s.m * s.k;
    b_offsets[i] = i * s.k * s.n;
  }
  BatchedMatMul(s, a2.data(), a_offsets, b2.data(), b_offsets, out.owned.data());
  return out;
}

// Labels of `op` that are kept when reducing it on its own: those in
// `needed`, once each, in order of first occurrence.
Labels KeptLabels(const Labels& labels, const Labels& needed) {
  Labels kept;
  for (int label : labels) {
    if (Contains(needed, label) && !Contains(kept, label)) kept.push_back(label);
  }
  return kept;
}

// Sizes of every label; a size-1 dim broadcasts against a larger one.
Result<std::map<int, int64_t>> LabelSizes(const KernelContext& ctx, const ops::EinsumLabels& labels) {
  std::map<int, int64_t> sizes;
  for (size_t i = 0; i < labels.inputs.size(); ++i) {
    std::map<int, int64_t> own;  // repeated labels in one input must match exactly
    for (size_t d = 0; d < labels.inputs[i].size(); ++d) {
      const int label = labels.inputs[i][d];
      const int64_t size = ctx.input(i)->dim(d);
      auto [it, fresh] = own.emplace(label, size);
      if (!fresh && it->second != size) {
        return ctx.Fail("label '{}' occurs in input {} with sizes {} and {}", ops::EinsumLabelName(label), i,
                        it->second, size);
      }
      auto [g, first] = sizes.emplace(label, size);
      if (first || g->second == size || size == 1) continue;
      if (g->second != 1) {
        return ctx.Fail("label '{}' has size {} in one input and {} in input {}", ops::EinsumLabelName(label),
                        g->second, size, i);
      }
      g->second = size;
    }
  }
  for (int label : labels.output) sizes.emplace(label, 1);  // an ellipsis dim no input covers
  return sizes;
}

template <DataType D>
Status RunEinsum(KernelContext& ctx, const ops::EinsumLabels& labels) {
  using C = LinalgCompute<D>;
  VIGIL_ASSIGN_OR_RETURN(auto sizes, LabelSizes(ctx, labels));
  const size_t count = labels.inputs.size();
  std::vector<std::vector<C>> scratch(count);
  std::vector<Operand<C>> ops(count);
  for (size_t i = 0; i < count; ++i) {
    ops[i].borrowed = LoadLinalg<D>(*ctx.input(i), scratch[i]);
    // Dropping a broadcast size-1 dim leaves the data as it is.
    for (size_t d = 0; d < labels.inputs[i].size(); ++d) {
      const int label = labels.inputs[i][d];
      if (ctx.input(i)->dim(d) == 1 && sizes[label] != 1) continue;
      ops[i].labels.push_back(label);
      ops[i].dims.push_back(ctx.input(i)->dim(d));
    }
  }
  // Labels needed after operand i has been folded in: the output's and those
  // of every later operand.
  auto needed_after = [&](size_t i) {
    Labels needed = labels.output;
    for (size_t j = i + 1; j < count; ++j) needed.insert(needed.end(), ops[j].labels.begin(), ops[j].labels.end());
    return needed;
  };
  for (size_t i = 0; i < count; ++i) {
    Labels needed = needed_after(i);
    for (size_t j = 0; j < i; ++j) needed.insert(needed.end(), ops[j].labels.begin(), ops[j].labels.end());
    Labels kept = KeptLabels(ops[i].labels, needed);
    if (kept != ops[i].labels) ops[i] = Rearrange(ops[i], kept);
  }
  Operand<C> result = std::move(ops[0]);
  for (size_t i = 1; i < count; ++i) result = Contract(result, ops[i], needed_after(i), sizes);
  if (result.labels != labels.output) result = Rearrange(result, labels.output);

  std::vector<int64_t> out_shape;
  for (int label : labels.output) out_shape.push_back(sizes[label]);
  VIGIL_ASSIGN_OR_RETURN(runtime::Tensor * y, ctx.Output(0, ctx.input(0)->dtype(), out_shape));
  std::vector<C> y_scratch;
  C* y_data = LinalgResultBuffer<D>(*y, y_scratch);
  const uint64_t n = y->element_count();
  if (n) std::memcpy(y_data, result.data(), n * sizeof(C));
  StoreLinalg<D>(y_data, *y);
  return Status::Ok();
}

}  // namespace

Status EinsumKernel(KernelContext& ctx) {
  VIGIL_ASSIGN_OR_RETURN(std::string text, ops::StringAttr(ctx.node(), "equation", ""));
  if (!ops::HasAttr(ctx.node(), "equation")) return ctx.Fail("required attribute 'equation' is missing");
  auto eq = ops::ParseEinsumEquation(text);
  if (!eq.ok()) return ctx.Fail("{}", eq.status().summary());
  std::vector<int64_t> ranks;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const runtime::Tensor* t = ctx.input(i);
    if (!t) return ctx.Fail("input {} is missing", i);
    if (t->dtype() != ctx.input(0)->dtype()) {
      return ctx.Fail("input {} has dtype {}, input 0 has {}; Einsum needs them equal", i,
                      ir::DataTypeName(t->dtype()), ir::DataTypeName(ctx.input(0)->dtype()));
    }
    ranks.push_back(static_cast<int64_t>(t->rank()));
  }
  if (ranks.empty()) return ctx.Fail("Einsum needs at least one input");
  auto labels = ops::ExpandEinsumEquation(*eq, ranks);
  if (!labels.ok()) return ctx.Fail("{}", labels.status().summary());
  return DispatchDtype<kLinalgTypes>(
      ctx.input(0)->dtype(), [&](auto tag) { return RunEinsum<decltype(tag)::value>(ctx, *labels); },
      [&] { return ctx.UnsupportedDtype(0); });
}

}  // namespace vigil::cpu
