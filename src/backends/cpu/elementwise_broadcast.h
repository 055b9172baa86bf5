// Internal to the CPU elementwise family: broadcasting binary loops shared by
// elementwise_binary.cpp (Add ... Equal) and elementwise_nary.cpp (Max, Min,
// Sum, Mean, PRelu).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/elementwise_kernels.h"

namespace vigil::cpu {

// out = op(a, b) over the walk, loading and storing through the Elem
// traits. The inner run is specialised on which inputs are contiguous (stride
// 1) or repeated (stride 0), so same-shape and scalar-broadcast cases are
// plain loops the compiler can vectorise.
template <typename EA, typename EB, typename EO, typename Op>
void RunBinary(const BroadcastWalk<2>& w, const typename EA::Storage* a, const typename EB::Storage* b,
               typename EO::Storage* out, const Op& op) {
  // Elements [begin, end) of the run at output offset o; blocked so that -O2
  // vectorises it (ForEachIndexBlocked).
  auto segment = [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st, int64_t begin,
                     int64_t end) {
    const auto* pa = a + off[0] + (st[0] ? begin : 0);
    const auto* pb = b + off[1] + (st[1] ? begin : 0);
    auto* po = out + o + begin;
    const int64_t len = end - begin;
    if (st[0] && st[1]) {
      ForEachIndexBlocked(len, [&](int64_t i) { po[i] = EO::Store(op(EA::Load(pa[i]), EB::Load(pb[i]))); });
    } else if (st[0]) {
      const auto vb = EB::Load(pb[0]);
      ForEachIndexBlocked(len, [&](int64_t i) { po[i] = EO::Store(op(EA::Load(pa[i]), vb)); });
    } else if (st[1]) {
      const auto va = EA::Load(pa[0]);
      ForEachIndexBlocked(len, [&](int64_t i) { po[i] = EO::Store(op(va, EB::Load(pb[i]))); });
    } else {
      std::fill(po, po + len, EO::Store(op(EA::Load(pa[0]), EB::Load(pb[0]))));
    }
  };
  const int64_t inner = w.dims.back();
  if (inner > 0 && inner < 2 * kParallelGrain && w.count >= 2 * kParallelGrain) {
    // Many short runs (a bias added to each row): whole runs split across
    // the pool's threads (parallel.h).
    ParallelFor(w.count / inner, ItemsPerGrain(inner), [&](int64_t first, int64_t last) {
      ForEachBroadcastRunRange(w, first, last,
                               [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st,
                                   int64_t n) { segment(o, off, st, 0, n); });
    });
    return;
  }
  // Long runs (same shapes, or a scalar against a tensor): each splits
  // across the threads.
  ForEachBroadcastRun(w, [&](int64_t o, const std::array<int64_t, 2>& off, const std::array<int64_t, 2>& st,
                             int64_t n) {
    ParallelFor(n, kParallelGrain, [&](int64_t begin, int64_t end) { segment(o, off, st, begin, end); });
  });
}

// Two inputs broadcast against each other, checked and planned.
struct BinaryPlan {
  const runtime::Tensor* a = nullptr;
  const runtime::Tensor* b = nullptr;
  std::vector<int64_t> b_shape;  // b's shape as broadcast (differs from b's own only for opset < 7)
  std::vector<int64_t> out_shape;
  BroadcastWalk<2> walk;
};

// Before opset 7, binary ops broadcast only with attribute broadcast=1, and
// then only B onto A: B's dims line up with A's from `axis` (default: the
// trailing dims) and each equals A's dim or 1. Returns B's shape padded with
// 1s to A's rank, ready for numpy broadcasting.
inline Result<std::vector<int64_t>> LegacyBroadcastShape(KernelContext& ctx, const std::vector<int64_t>& a,
                                                         const std::vector<int64_t>& b) {
  VIGIL_ASSIGN_OR_RETURN(int64_t broadcast, ops::IntAttr(ctx.node(), "broadcast", 0));
  if (broadcast == 0) {
    if (a != b) {
      return ctx.Fail("input shapes {} and {} differ; at opset {} that needs attribute broadcast=1",
                      ShapeString(a), ShapeString(b), ctx.opset());
    }
    return b;
  }
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  VIGIL_ASSIGN_OR_RETURN(int64_t axis, ops::IntAttr(ctx.node(), "axis", ra - rb));
  if (axis < 0) axis += ra;
  if (axis < 0 || axis + rb > ra) {
    return ctx.Fail("input 1 of shape {} does not fit into input 0 of shape {} at axis {}", ShapeString(b),
                    ShapeString(a), axis);
  }
  std::vector<int64_t> shaped(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) {
    int64_t d = b[static_cast<size_t>(i)];
    if (d != 1 && d != a[static_cast<size_t>(axis + i)]) {
      return ctx.Fail("input 1 of shape {} does not broadcast onto input 0 of shape {} at axis {}", ShapeString(b),
                      ShapeString(a), axis);
    }
    shaped[static_cast<size_t>(axis + i)] = d;
  }
  return shaped;
}

// Plans `a op b` for inputs `ia` and `ib`; with `same_dtype` the two must
// have equal dtypes. Errors name the inputs and their shapes or dtypes.
inline Result<BinaryPlan> PlanBinary(KernelContext& ctx, size_t ia, size_t ib, bool same_dtype) {
  BinaryPlan p;
  p.a = ctx.input(ia);
  p.b = ctx.input(ib);
  if (!p.a || !p.b) return ctx.Fail("input {} is missing", p.a ? ib : ia);
  if (same_dtype && p.a->dtype() != p.b->dtype()) {
    return ctx.Fail("input {} has dtype {} but input {} has dtype {}; they must be equal", ib,
                    ir::DataTypeName(p.b->dtype()), ia, ir::DataTypeName(p.a->dtype()));
  }
  if (ctx.opset() < 7) {
    VIGIL_ASSIGN_OR_RETURN(p.b_shape, LegacyBroadcastShape(ctx, p.a->shape(), p.b->shape()));
  } else {
    p.b_shape = p.b->shape();
  }
  auto shape = BroadcastShape(p.a->shape(), p.b_shape);
  if (!shape) {
    return ctx.Fail("cannot broadcast input {} of shape {} with input {} of shape {}", ia,
                    ShapeString(p.a->shape()), ib, ShapeString(p.b->shape()));
  }
  p.out_shape = std::move(*shape);
  p.walk = PlanBroadcast<2>(p.out_shape, {&p.a->shape(), &p.b_shape});
  return p;
}

}  // namespace vigil::cpu
