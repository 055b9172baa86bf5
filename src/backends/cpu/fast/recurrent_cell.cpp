// The optimised LSTM cell (fast_kernels.h, LstmCellFloat): the reference
// LstmStep (recurrent.cpp) calls the C library's exp and tanh per element
// through an activation switch, which at the LSTM tagger's sizes took more
// time than the step's products; here each gate's pre-activations are
// gathered into a row and activated in one vectorised call.
#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/fast/wide_vectors.h"

namespace vigil::cpu::fast {
namespace {

// v clipped to [lo, hi]; without a clip the bounds are -inf and +inf, which
// leave every value as it is (NaN included), so one loop serves both.
inline float Clamp(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }

// The element loops of one row, in fixed blocks that GCC vectorises at -O2
// (ForEachIndexBlocked), in each clone's widest vectors. Arguments are
// copied into the lambdas: by reference, GCC reloads them every element and
// does not vectorise.

// gi = clamp(pre_i + pi * c), gf = clamp(pre_f + pf * c), gc = clamp(pre_c).
VIGIL_WIDE_VECTORS void GatherGates(const float* pre, const float* pi, const float* pf, const float* cp, float lo,
                                    float hi, int64_t hs, float* gi, float* gf, float* gc) {
  const float* pre_f = pre + 2 * hs;
  const float* pre_c = pre + 3 * hs;
  ForEachIndexBlocked(hs, [=](int64_t j) {
    gi[j] = Clamp(pre[j] + pi[j] * cp[j], lo, hi);
    gf[j] = Clamp(pre_f[j] + pf[j] * cp[j], lo, hi);
    gc[j] = Clamp(pre_c[j], lo, hi);
  });
}

// cell = f * c + i * candidate; go = clamp(pre_o + po * cell).
VIGIL_WIDE_VECTORS void UpdateCell(const float* pre_o, const float* po, const float* cp, const float* gi,
                                   const float* gf, const float* gc, float lo, float hi, int64_t hs, float* c_out,
                                   float* go) {
  ForEachIndexBlocked(hs, [=](int64_t j) {
    const float cell = gf[j] * cp[j] + gi[j] * gc[j];
    c_out[j] = cell;
    go[j] = Clamp(pre_o[j] + po[j] * cell, lo, hi);
  });
}

VIGIL_WIDE_VECTORS void MultiplyRows(const float* a, const float* b, int64_t n, float* out) {
  ForEachIndexBlocked(n, [=](int64_t j) { out[j] = a[j] * b[j]; });
}

VIGIL_WIDE_VECTORS void OneMinus(const float* a, int64_t n, float* out) {
  ForEachIndexBlocked(n, [=](int64_t j) { out[j] = 1.0f - a[j]; });
}

}  // namespace

void LstmCellFloat(const LstmCellArgs& a) {
  const int64_t hs = a.hidden;
  thread_local std::vector<float> scratch;
  scratch.resize(static_cast<size_t>(5 * hs));
  float* gi = scratch.data();  // i, then f right after it: one Sigmoid call
  float* gf = gi + hs;
  float* gc = gf + hs;
  float* go = gc + hs;
  float* tc = go + hs;
  const float* pi = a.peep;
  const float* po = a.peep + hs;
  const float* pf = a.peep + 2 * hs;
  const float inf = std::numeric_limits<float>::infinity();
  const float lo = a.clip ? -*a.clip : -inf, hi = a.clip ? *a.clip : inf;
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* pre = a.pre + r * 4 * hs;
    const float* cp = a.c + r * hs;
    float* c_out = a.c_out + r * hs;
    float* h_out = a.h_out + r * hs;
    GatherGates(pre, pi, pf, cp, lo, hi, hs, gi, gf, gc);
    SigmoidFloat(gi, gi, static_cast<uint64_t>(a.input_forget ? hs : 2 * hs));
    if (a.input_forget) OneMinus(gi, hs, gf);
    TanhFloat(gc, gc, static_cast<uint64_t>(hs));
    UpdateCell(pre + hs, po, cp, gi, gf, gc, lo, hi, hs, c_out, go);
    SigmoidFloat(go, go, static_cast<uint64_t>(hs));
    TanhFloat(c_out, tc, static_cast<uint64_t>(hs));
    MultiplyRows(go, tc, hs, h_out);
  }
}

}  // namespace vigil::cpu::fast
