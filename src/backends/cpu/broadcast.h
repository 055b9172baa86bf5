// Multidirectional (numpy) broadcasting for CPU kernels: the broadcast shape
// of several input shapes, and a walk over the output that yields, for each
// contiguous inner run, the matching offsets into every input. The walk keeps
// one running offset per input and steps it by per-dim strides (an odometer),
// so no element pays for an index division; adjacent dims that broadcast the
// same way are merged first, so `[N,C,H,W] + [1,C,1,1]` walks as `[N,C,H*W]`
// and two same-shape inputs walk as one flat run.
//
// Used by the elementwise family (binary ops, Where, variadic Max/Min/Sum,
// PRelu) and meant for any other kernel that broadcasts (Expand).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace vigil::cpu {

// The numpy broadcast of `shapes` (right-aligned; each dim equal or 1), or
// nullopt when two dims differ and neither is 1.
inline std::optional<std::vector<int64_t>> BroadcastShape(std::span<const std::vector<int64_t>* const> shapes) {
  size_t rank = 0;
  for (const auto* s : shapes) rank = std::max(rank, s->size());
  std::vector<int64_t> out(rank, 1);
  for (const auto* s : shapes) {
    size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      int64_t d = (*s)[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o != 1) return std::nullopt;
      o = d;  // also covers 0 against 1: the output dim becomes 0
    }
  }
  return out;
}

inline std::optional<std::vector<int64_t>> BroadcastShape(const std::vector<int64_t>& a,
                                                          const std::vector<int64_t>& b) {
  const std::vector<int64_t>* both[] = {&a, &b};
  return BroadcastShape(both);
}

// "[2,3]": for error messages about shapes.
inline std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// How to walk an output of shape `out_shape` reading N inputs broadcast to it.
// dims[0] is the outermost merged dim, dims.back() the innermost (the run).
template <size_t N>
struct BroadcastWalk {
  std::vector<int64_t> dims;                     // merged output dims, never empty
  std::vector<std::array<int64_t, N>> strides;   // element strides per input; 0 where broadcast
  int64_t count = 0;                             // output elements
};

// Plans the walk. Each input shape must broadcast to `out_shape` (check with
// BroadcastShape first); its rank may be smaller.
template <size_t N>
BroadcastWalk<N> PlanBroadcast(const std::vector<int64_t>& out_shape,
                               const std::array<const std::vector<int64_t>*, N>& in_shapes) {
  const size_t rank = out_shape.size();
  // Per-dim strides of each input in output coordinates (0 where the input
  // has no such dim or has size 1 there).
  std::vector<std::array<int64_t, N>> full(rank);
  for (size_t k = 0; k < N; ++k) {
    const std::vector<int64_t>& s = *in_shapes[k];
    int64_t stride = 1;
    for (size_t i = rank; i-- > 0;) {
      size_t offset = rank - s.size();
      int64_t d = i >= offset ? s[i - offset] : 1;
      full[i][k] = d == 1 ? 0 : stride;
      stride *= d;
    }
  }
  BroadcastWalk<N> w;
  w.count = 1;
  for (int64_t d : out_shape) w.count *= d;
  // Merge from the inside out: dim i joins the run below it when every input
  // steps through it contiguously with that run (stride[i] == stride[i+1] *
  // size[i+1]); size-1 dims vanish.
  for (size_t i = rank; i-- > 0;) {
    if (out_shape[i] == 1) continue;
    if (!w.dims.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k) {
        if (full[i][k] != w.strides.front()[k] * w.dims.front()) mergeable = false;
      }
      if (mergeable) {
        w.dims.front() *= out_shape[i];
        continue;
      }
    }
    w.dims.insert(w.dims.begin(), out_shape[i]);
    w.strides.insert(w.strides.begin(), full[i]);
  }
  if (w.dims.empty()) {  // scalar output (or all dims 1)
    w.dims.push_back(1);
    w.strides.push_back({});
  }
  return w;
}

// Calls run(out_offset, in_offsets, inner_strides, run_length) for each
// innermost run of the output, in row-major order. inner_strides[k] is 0
// (input k repeats one value along the run) or 1 (it is contiguous there).
// ForEachBroadcastRunRange: runs [first, last) only (run r starts at output
// element r * run_length), so that threads can take disjoint ranges.
template <size_t N, typename RunFn>
void ForEachBroadcastRunRange(const BroadcastWalk<N>& w, int64_t first, int64_t last, RunFn&& run) {
  if (w.count == 0 || first >= last) return;
  const size_t outer = w.dims.size() - 1;
  const int64_t inner = w.dims.back();
  const std::array<int64_t, N> inner_strides = w.strides.back();
  // The odometer at run `first`: its outer index, digit by digit.
  std::vector<int64_t> counter(outer, 0);
  std::array<int64_t, N> offsets{};
  for (size_t d = outer, rest = static_cast<size_t>(first); d-- > 0;) {
    counter[d] = static_cast<int64_t>(rest % static_cast<size_t>(w.dims[d]));
    rest /= static_cast<size_t>(w.dims[d]);
    for (size_t k = 0; k < N; ++k) offsets[k] += counter[d] * w.strides[d][k];
  }
  for (int64_t r = first; r < last; ++r) {
    run(r * inner, offsets, inner_strides, inner);
    // Odometer step over the outer dims: advance the innermost outer dim,
    // carrying into the next when it wraps.
    for (size_t d = outer; d-- > 0;) {
      if (++counter[d] < w.dims[d]) {
        for (size_t k = 0; k < N; ++k) offsets[k] += w.strides[d][k];
        break;
      }
      counter[d] = 0;
      for (size_t k = 0; k < N; ++k) offsets[k] -= w.strides[d][k] * (w.dims[d] - 1);
    }
  }
}

template <size_t N, typename RunFn>
void ForEachBroadcastRun(const BroadcastWalk<N>& w, RunFn&& run) {
  if (w.count == 0) return;
  ForEachBroadcastRunRange(w, 0, w.count / w.dims.back(), run);
}

}  // namespace vigil::cpu
