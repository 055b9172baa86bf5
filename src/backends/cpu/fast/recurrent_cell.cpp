// The optimised LSTM cell (fast_kernels.h, LstmCellFloat): the reference
// LstmStep (recurrent.cpp) calls the C library's exp and tanh per element
// through an activation switch, which at the LSTM tagger's sizes took more
// time than the step's products; here each gate's pre-activations are
// gathered into a row and activated in one vectorised call.
#include <algorithm>
#include <vector>

#include "backends/cpu/fast/fast_kernels.h"

namespace vigil::cpu::fast {
namespace {

inline float Clip(const float* clip, float v) { return clip ? std::min(std::max(v, -*clip), *clip) : v; }

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
  for (int64_t r = 0; r < a.rows; ++r) {
    const float* pre = a.pre + r * 4 * hs;
    const float* cp = a.c + r * hs;
    float* c_out = a.c_out + r * hs;
    float* h_out = a.h_out + r * hs;
    for (int64_t j = 0; j < hs; ++j) {
      gi[j] = Clip(a.clip, pre[j] + pi[j] * cp[j]);
      gf[j] = Clip(a.clip, pre[2 * hs + j] + pf[j] * cp[j]);
      gc[j] = Clip(a.clip, pre[3 * hs + j]);
    }
    SigmoidFloat(gi, gi, static_cast<uint64_t>(a.input_forget ? hs : 2 * hs));
    if (a.input_forget) {
      for (int64_t j = 0; j < hs; ++j) gf[j] = 1.0f - gi[j];
    }
    TanhFloat(gc, gc, static_cast<uint64_t>(hs));
    for (int64_t j = 0; j < hs; ++j) {
      const float cell = gf[j] * cp[j] + gi[j] * gc[j];
      c_out[j] = cell;
      go[j] = Clip(a.clip, pre[hs + j] + po[j] * cell);
    }
    SigmoidFloat(go, go, static_cast<uint64_t>(hs));
    TanhFloat(c_out, tc, static_cast<uint64_t>(hs));
    for (int64_t j = 0; j < hs; ++j) h_out[j] = go[j] * tc[j];
  }
}

}  // namespace vigil::cpu::fast
