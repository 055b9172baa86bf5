// MaxPool over 2D float32 planes: the taps of each window are found once per
// output row and column (no per-tap index arithmetic over a generic rank), and
// the comparison is a select, not a branch. The reference is MaxPoolPlanes in
// pool.cpp. Also the channels-last MaxPool and GlobalAveragePool (the
// references: pool_nhwc.cpp's, which transpose and run pool.cpp's), along
// the channels, which are contiguous.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/elementwise_kernels.h"
#include "backends/cpu/fast/fast_kernels.h"
#include "backends/cpu/parallel.h"

namespace vigil::cpu::fast {
namespace {

// The taps [first, last) of the window of output position o along one axis
// that fall inside [0, size).
struct TapRange {
  int64_t start;  // image position of tap 0 (may be negative)
  int64_t first, last;
};

std::vector<TapRange> Taps(int64_t outputs, int64_t size, int64_t kernel, int64_t stride, int64_t dilation,
                           int64_t pad) {
  std::vector<TapRange> r(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o) {
    TapRange& t = r[static_cast<size_t>(o)];
    t.start = o * stride - pad;
    t.first = 0;
    while (t.first < kernel && t.start + t.first * dilation < 0) ++t.first;
    t.last = kernel;
    while (t.last > t.first && t.start + (t.last - 1) * dilation >= size) --t.last;
  }
  return r;
}


// acc becomes v where v is larger or the first NaN; a NaN acc stays: the
// reference's rule, for the rows that hold a NaN.
inline float Take(float acc, float v) { return (acc == acc && (v > acc || v != v)) ? v : acc; }

// One output row, tap by tap in row-major window order for each column (the
// reference's order), with Take.
void ExactRow(const float* xp, int64_t w, const TapRange& r, int64_t dh, const std::vector<TapRange>& cols,
              int64_t dw, float* out) {
  for (size_t j = 0; j < cols.size(); ++j) {
    const TapRange& c = cols[j];
    float acc = -std::numeric_limits<float>::infinity();
    for (int64_t a = r.first; a < r.last; ++a) {
      const float* row = xp + (r.start + a * dh) * w;
      for (int64_t b = c.first; b < c.last; ++b) acc = Take(acc, row[c.start + b * dw]);
    }
    out[j] = acc;
  }
}

}  // namespace

bool MaxPool2dFloat(const SpatialGeometry& g, int64_t planes, const float* x, float* y) {
  if (g.rank() != 2) return false;
  const int64_t h = g.image[0], w = g.image[1], oh = g.columns[0], ow = g.columns[1];
  const int64_t kw = g.kernel[1], sw = g.strides[1], dh = g.dilations[0], dw = g.dilations[1];
  const int64_t left = g.pad_begin[1];
  const std::vector<TapRange> rows = Taps(oh, h, g.kernel[0], g.strides[0], dh, g.pad_begin[0]);
  const std::vector<TapRange> cols = Taps(ow, w, kw, sw, dw, left);
  // Separable, at the input's column resolution: v = the maximum down the
  // window's rows over the padded columns the windows read (-inf in the
  // padding), t = the maximum of v across the window's columns, and an
  // output is t at its window's first column. Each step runs along
  // contiguous memory, several columns at once; `a > b ? a : b` is one max
  // instruction and never takes a NaN, so a row that saw a NaN is redone
  // with the reference's rule (ExactRow).
  const int64_t starts = (ow - 1) * sw + 1, span = starts + (kw - 1) * dw;
  std::vector<float> v(static_cast<size_t>(span)), t(static_cast<size_t>(starts));
  const float lowest = -std::numeric_limits<float>::infinity();
  const int64_t in0 = std::min(left, span), in1 = std::min(left + w, span);  // v's columns inside the image
  for (int64_t p = 0; p < planes; ++p) {
    const float* xp = x + p * h * w;
    float* yp = y + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      const TapRange& r = rows[static_cast<size_t>(i)];
      float* out = yp + i * ow;
      std::fill(v.begin(), v.end(), lowest);
      int nan = 0;
      for (int64_t a = r.first; a < r.last; ++a) {
        const float* row = xp + (r.start + a * dh) * w - left;
        float* vv = v.data();
        ForEachIndexBlocked(in1 - in0, [&](int64_t k) {
          const float e = row[in0 + k], m = vv[in0 + k];
          vv[in0 + k] = e > m ? e : m;
          nan |= e != e;
        });
      }
      if (nan) {
        ExactRow(xp, w, r, dh, cols, dw, out);
        continue;
      }
      const float* vv = v.data();
      float* tt = t.data();
      ForEachIndexBlocked(starts, [&](int64_t k) { tt[k] = vv[k]; });
      for (int64_t b = 1; b < kw; ++b) {
        const float* vb = vv + b * dw;
        ForEachIndexBlocked(starts, [&](int64_t k) { tt[k] = vb[k] > tt[k] ? vb[k] : tt[k]; });
      }
      for (int64_t j = 0; j < ow; ++j) out[j] = tt[j * sw];
    }
  }
  return true;
}

bool MaxPool2dNhwcFloat(const SpatialGeometry& g, int64_t batch, int64_t channels, const float* x, float* y) {
  if (g.rank() != 2) return false;
  const int64_t h = g.image[0], w = g.image[1], oh = g.columns[0], ow = g.columns[1];
  const std::vector<TapRange> rows = Taps(oh, h, g.kernel[0], g.strides[0], g.dilations[0], g.pad_begin[0]);
  const std::vector<TapRange> cols = Taps(ow, w, g.kernel[1], g.strides[1], g.dilations[1], g.pad_begin[1]);
  const float lowest = -std::numeric_limits<float>::infinity();
  // Output rows of every image split across the pool's threads
  // (parallel.h); each output is computed on its own.
  ParallelFor(batch * oh, ItemsPerGrain(ow * channels), [&](int64_t first, int64_t last) {
    for (int64_t ni = first; ni < last; ++ni) {
      const int64_t n = ni / oh, i = ni % oh;
      const float* xn = x + n * h * w * channels;
      const TapRange& r = rows[static_cast<size_t>(i)];
      for (int64_t j = 0; j < ow; ++j) {
        const TapRange& c = cols[static_cast<size_t>(j)];
        float* out = y + ((n * oh + i) * ow + j) * channels;
        std::fill(out, out + channels, lowest);
        // Taps in row-major window order, each channel by the reference's
        // rule (Take, as a select).
        for (int64_t a = r.first; a < r.last; ++a) {
          const float* row = xn + (r.start + a * g.dilations[0]) * w * channels;
          for (int64_t b = c.first; b < c.last; ++b) {
            const float* e = row + (c.start + b * g.dilations[1]) * channels;
            ForEachIndexBlocked(channels, [&](int64_t k) { out[k] = Take(out[k], e[k]); });
          }
        }
      }
    }
  });
  return true;
}

void GlobalAveragePoolNhwcFloat(int64_t batch, int64_t spatial, int64_t channels, const float* x, float* y) {
  // Blocks of channels of each image split across the pool's threads
  // (parallel.h); each channel's sum runs over the positions in order, as
  // on one thread.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (channels + kBlock - 1) / kBlock;
  ParallelFor(batch * blocks, ItemsPerGrain(spatial * kBlock), [&](int64_t first, int64_t last) {
    double s[kBlock];
    for (int64_t t = first; t < last; ++t) {
      const int64_t n = t / blocks, c0 = (t % blocks) * kBlock, width = std::min(kBlock, channels - c0);
      std::fill(s, s + width, 0.0);
      const float* xn = x + n * spatial * channels + c0;
      for (int64_t p = 0; p < spatial; ++p) {
        const float* e = xn + p * channels;
        ForEachIndexBlocked(width, [&](int64_t k) { s[k] += static_cast<double>(e[k]); });
      }
      float* out = y + n * channels + c0;
      const double count = static_cast<double>(spatial);  // 0: NaN, as the reference
      for (int64_t k = 0; k < width; ++k) out[k] = static_cast<float>(s[k] / count);
    }
  });
}

}  // namespace vigil::cpu::fast
