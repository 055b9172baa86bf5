// What cuDNN offers for int8 convolutions on this GPU, measured at the
// convolution shapes of ResNet-50, beside the float16 path vigil runs today.
// A measurement tool for the int8 issue's design (docs/int8.md), not part of
// the product: it builds two cuDNN graphs per shape with the module's own
// graph code (backends/cuda/cudnn_graph.h), in four forms per shape:
//   f16: x, w float16 NHWC -> conv (float accumulation) -> + bias -> relu -> y float16
//   i8:  x, w int8 NHWC -> conv (int32 accumulation) -> * scale[k] -> + bias[k]
//        -> relu -> y int8 (the fused QDQ pattern: DQ -> Conv -> Relu -> Q)
//   the same int8 graph with x, w, y in NC/32HW32 (vectors of 32 channels),
//   and again with cuDNN's int8x32 filter reordering.
// For each it reports whether cuDNN has an engine, the time of the fastest of
// the engines measured (median of CUDA-event timings, L2 flushed), and with
// `check`, whether the NHWC int8 y equals a CPU evaluation of the same formula
// with round-half-to-even and saturation (the ONNX QuantizeLinear rule).
//
// Build and run: bench/int8/run_conv_probe.sh (on the GPU machine).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <fmt/format.h>

#include "backends/cuda/cudnn_graph.h"
#include "backends/cuda/plan_tuning.h"
#include "backends/cuda/tuning_cache.h"

using namespace vigil;
using namespace vigil::cuda;

namespace {

struct ConvCase {
  const char* name;
  int count;  // how many times ResNet-50 has it
  int64_t c, h, w, k, r, stride, pad;
};

// ResNet-50 (torchvision, v1.5: the stride on the 3x3) convolutions.
const ConvCase kCases[] = {
    {"stem 7x7/2 3(4)->64 @224", 1, 4, 224, 224, 64, 7, 2, 3},
    {"l1 1x1 64->64 @56", 1, 64, 56, 56, 64, 1, 1, 0},
    {"l1 3x3 64->64 @56", 3, 64, 56, 56, 64, 3, 1, 1},
    {"l1 1x1 64->256 @56", 4, 64, 56, 56, 256, 1, 1, 0},  // 3 + downsample
    {"l1 1x1 256->64 @56", 2, 256, 56, 56, 64, 1, 1, 0},
    {"l2 1x1 256->128 @56", 1, 256, 56, 56, 128, 1, 1, 0},
    {"l2 3x3/2 128 @56", 1, 128, 56, 56, 128, 3, 2, 1},
    {"l2 1x1/2 256->512 @56", 1, 256, 56, 56, 512, 1, 2, 0},
    {"l2 1x1 128->512 @28", 4, 128, 28, 28, 512, 1, 1, 0},
    {"l2 1x1 512->128 @28", 3, 512, 28, 28, 128, 1, 1, 0},
    {"l2 3x3 128 @28", 3, 128, 28, 28, 128, 3, 1, 1},
    {"l3 1x1 512->256 @28", 1, 512, 28, 28, 256, 1, 1, 0},
    {"l3 3x3/2 256 @28", 1, 256, 28, 28, 256, 3, 2, 1},
    {"l3 1x1/2 512->1024 @28", 1, 512, 28, 28, 1024, 1, 2, 0},
    {"l3 1x1 256->1024 @14", 6, 256, 14, 14, 1024, 1, 1, 0},
    {"l3 1x1 1024->256 @14", 5, 1024, 14, 14, 256, 1, 1, 0},
    {"l3 3x3 256 @14", 5, 256, 14, 14, 256, 3, 1, 1},
    {"l4 1x1 1024->512 @14", 1, 1024, 14, 14, 512, 1, 1, 0},
    {"l4 3x3/2 512 @14", 1, 512, 14, 14, 512, 3, 2, 1},
    {"l4 1x1/2 1024->2048 @14", 1, 1024, 14, 14, 2048, 1, 2, 0},
    {"l4 1x1 512->2048 @7", 3, 512, 7, 7, 2048, 1, 1, 0},
    {"l4 1x1 2048->512 @7", 2, 2048, 7, 7, 512, 1, 1, 0},
    {"l4 3x3 512 @7", 2, 512, 7, 7, 512, 3, 1, 1},
};

constexpr int64_t kX = 1, kW = 2, kY = 3, kScale = 4, kBias = 5, kVirtual = 10;

struct Geometry {
  std::vector<int64_t> x, w, y;  // logical NCHW / KCRS
  int64_t stride, pad;
};

Geometry Shape(const ConvCase& c, int64_t n) {
  const int64_t oh = (c.h + 2 * c.pad - c.r) / c.stride + 1, ow = (c.w + 2 * c.pad - c.r) / c.stride + 1;
  return {{n, c.c, c.h, c.w}, {c.k, c.c, c.r, c.r}, {n, c.k, oh, ow}, c.stride, c.pad};
}

Result<CudnnDescriptor> Tensor(int64_t uid, cudnnDataType_t t, const std::vector<int64_t>& dims, bool is_virtual) {
  return MakeCudnnTensor(uid, t, dims, ChannelsLastStrides(dims), is_virtual);
}

// NC/32HW32: int8 channels in vectors of 32 (dims and strides count vectors).
Result<CudnnDescriptor> Vec32Tensor(int64_t uid, const std::vector<int64_t>& dims, bool is_virtual,
                                    bool reorder_filter = false) {
  std::vector<int64_t> d = dims;
  d[1] = dims[1] / 32;
  std::vector<int64_t> strides(4, 1);
  for (size_t i = 4; i-- > 1;) strides[i - 1] = strides[i] * d[i];
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor t, CudnnDescriptor::Create(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
  cudnnDataType_t type = CUDNN_DATA_INT8;
  VIGIL_RETURN_IF_ERROR(t.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  VIGIL_RETURN_IF_ERROR(t.SetInts(CUDNN_ATTR_TENSOR_DIMENSIONS, d));
  VIGIL_RETURN_IF_ERROR(t.SetInts(CUDNN_ATTR_TENSOR_STRIDES, strides));
  VIGIL_RETURN_IF_ERROR(t.SetInt(CUDNN_ATTR_TENSOR_UNIQUE_ID, uid));
  VIGIL_RETURN_IF_ERROR(t.SetInt(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 32));
  VIGIL_RETURN_IF_ERROR(t.SetInt(CUDNN_ATTR_TENSOR_VECTOR_COUNT, 32));
  VIGIL_RETURN_IF_ERROR(t.SetInt(CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION, 1));
  if (reorder_filter) {
    cudnnBackendTensorReordering_t r = CUDNN_TENSOR_REORDERING_INT8x32;
    VIGIL_RETURN_IF_ERROR(t.Set(CUDNN_ATTR_TENSOR_REORDERING_MODE, CUDNN_TYPE_TENSOR_REORDERING_MODE, 1, &r));
  }
  bool v = is_virtual;
  VIGIL_RETURN_IF_ERROR(t.Set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
  VIGIL_RETURN_IF_ERROR(t.Finalize());
  return t;
}

// conv -> [* scale] -> + bias -> relu -> y. int8: x, w, y int8, int32
// accumulation, float scale and bias; otherwise float16 data, float
// accumulation, float16 bias.
// variant 0: float16 NHWC, 1: int8 NHWC, 2: int8 NC/32HW32 (x, y; w with or
// without cuDNN's int8x32 filter reordering, variant 3 with).
Result<CudnnPlan> BuildPlan(cudnnHandle_t handle, const Geometry& g, int variant, TuningCache* cache,
                            cudaStream_t stream, const std::function<Status(const CudnnPlan&)>& run) {
  const bool int8 = variant > 0, vec = variant >= 2;
  const cudnnDataType_t data = int8 ? CUDNN_DATA_INT8 : CUDNN_DATA_HALF;
  const cudnnDataType_t acc = int8 ? CUDNN_DATA_INT32 : CUDNN_DATA_FLOAT;
  std::vector<int64_t> per_channel = {1, g.y[1], 1, 1};
  std::vector<CudnnDescriptor> ops, keep;
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor x, vec ? Vec32Tensor(kX, g.x, false) : Tensor(kX, data, g.x, false));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor w,
                         vec ? Vec32Tensor(kW, g.w, false, variant == 3) : Tensor(kW, data, g.w, false));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor conv_out, Tensor(kVirtual, acc, g.y, true));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor conv, MakeConvolutionDescriptor(acc, {g.stride, g.stride}, {g.pad, g.pad},
                                                                        {g.pad, g.pad}, {1, 1}));
  VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor op, MakeConvolutionForwardOp(x, w, conv_out, conv));
  ops.push_back(std::move(op));
  keep.push_back(std::move(x));
  keep.push_back(std::move(w));
  keep.push_back(std::move(conv));

  CudnnDescriptor in = std::move(conv_out);
  int64_t next_virtual = kVirtual + 1;
  auto step = [&](cudnnPointwiseMode_t m, int64_t operand_uid, cudnnDataType_t operand_type, bool last) -> Status {
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor out, last ? (vec ? Vec32Tensor(kY, g.y, false) : Tensor(kY, data, g.y, false))
                                                     : Tensor(next_virtual++, CUDNN_DATA_FLOAT, g.y, true));
    CudnnDescriptor operand;
    if (operand_uid) {
      VIGIL_ASSIGN_OR_RETURN(operand, Tensor(operand_uid, operand_type, per_channel, false));
    }
    VIGIL_ASSIGN_OR_RETURN(CudnnDescriptor pw, MakePointwiseOp(m, in, operand_uid ? &operand : nullptr, out, keep));
    ops.push_back(std::move(pw));
    if (operand_uid) keep.push_back(std::move(operand));
    keep.push_back(std::move(in));
    in = std::move(out);
    return Status::Ok();
  };
  if (int8) VIGIL_RETURN_IF_ERROR(step(CUDNN_POINTWISE_MUL, kScale, CUDNN_DATA_FLOAT, false));
  VIGIL_RETURN_IF_ERROR(step(CUDNN_POINTWISE_ADD, kBias, int8 ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF, false));
  VIGIL_RETURN_IF_ERROR(step(CUDNN_POINTWISE_RELU_FWD, 0, CUDNN_DATA_FLOAT, true));
  keep.push_back(std::move(in));

  CudnnTuning tuning;
  tuning.policy = {cache, true};
  tuning.problem = fmt::format("probe|v{}|x{}|w{}|s{}", variant, fmt::join(g.x, ","), fmt::join(g.w, ","),
                               g.stride);
  tuning.stream = stream;
  tuning.run = run;
  PlanFilter filter{false, false, false};
  return BuildCudnnPlan(handle, std::move(ops), std::move(keep), filter, tuning.problem, &tuning);
}

#define CUDA_OK(call)                                                              \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));             \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

struct Buffers {
  void *x = nullptr, *w = nullptr, *y = nullptr, *scale = nullptr, *bias = nullptr;
  std::vector<int8_t> hx, hw;
  std::vector<float> hscale, hbias;
};

// Random int8 data (never zeros), scales that spread y over the int8 range.
int Fill(Buffers& b, const Geometry& g, bool int8, std::mt19937& rng) {
  auto count = [](const std::vector<int64_t>& d) { return d[0] * d[1] * d[2] * d[3]; };
  const int64_t nx = count(g.x), nw = count(g.w), ny = count(g.y), k = g.y[1];
  const size_t es = int8 ? 1 : 2;
  std::uniform_int_distribution<int> q(-127, 127);
  b.hx.resize(nx);
  b.hw.resize(nw);
  for (auto& v : b.hx) v = static_cast<int8_t>(q(rng));
  for (auto& v : b.hw) v = static_cast<int8_t>(q(rng));
  const double fan_in = static_cast<double>(g.w[1] * g.w[2] * g.w[3]);
  std::uniform_real_distribution<float> u(0.5f, 1.5f), ub(-20.f, 20.f);
  b.hscale.resize(k);
  b.hbias.resize(k);
  for (int64_t i = 0; i < k; ++i) {
    b.hscale[i] = static_cast<float>(u(rng) * 60.0 / (std::sqrt(fan_in) * 73.0 * 73.0));
    b.hbias[i] = ub(rng);
  }
  CUDA_OK(cudaMalloc(&b.x, nx * es));
  CUDA_OK(cudaMalloc(&b.w, nw * es));
  CUDA_OK(cudaMalloc(&b.y, ny * es));
  CUDA_OK(cudaMalloc(&b.scale, k * 4));
  CUDA_OK(cudaMalloc(&b.bias, k * 4));
  if (int8) {
    CUDA_OK(cudaMemcpy(b.x, b.hx.data(), nx, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(b.w, b.hw.data(), nw, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(b.bias, b.hbias.data(), k * 4, cudaMemcpyHostToDevice));
  } else {
    // float16: the same values scaled to about unit size.
    std::vector<__half> hx(nx), hw(nw), hb(k);
    for (int64_t i = 0; i < nx; ++i) hx[i] = __float2half(b.hx[i] / 64.0f);
    for (int64_t i = 0; i < nw; ++i) hw[i] = __float2half(b.hw[i] / (64.0f * static_cast<float>(std::sqrt(fan_in))));
    for (int64_t i = 0; i < k; ++i) hb[i] = __float2half(b.hbias[i] / 20.0f);
    CUDA_OK(cudaMemcpy(b.x, hx.data(), nx * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(b.w, hw.data(), nw * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(b.bias, hb.data(), k * 2, cudaMemcpyHostToDevice));
  }
  CUDA_OK(cudaMemcpy(b.scale, b.hscale.data(), k * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(b.y, 0x7f, ny * es));  // poison
  return 0;
}

void Free(Buffers& b) {
  for (void* p : {b.x, b.w, b.y, b.scale, b.bias}) cudaFree(p);
}

// y[n, k, oh, ow] (stored NHWC) from the CPU: int32 sum, then float
// acc * scale + bias (as the graph computes, in float), relu, round half to
// even, saturate. Returns {mismatches, off-by-one mismatches}.
std::pair<int64_t, int64_t> Check(const Buffers& b, const Geometry& g, const std::vector<int8_t>& y) {
  const int64_t n = g.x[0], c = g.x[1], h = g.x[2], w = g.x[3], k = g.w[0], r = g.w[2];
  const int64_t oh = g.y[2], ow = g.y[3];
  int64_t bad = 0, off1 = 0;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t y0 = 0; y0 < oh; ++y0)
      for (int64_t x0 = 0; x0 < ow; ++x0)
        for (int64_t ik = 0; ik < k; ++ik) {
          int64_t acc = 0;
          for (int64_t dy = 0; dy < r; ++dy) {
            const int64_t iy = y0 * g.stride - g.pad + dy;
            if (iy < 0 || iy >= h) continue;
            for (int64_t dx = 0; dx < r; ++dx) {
              const int64_t ix = x0 * g.stride - g.pad + dx;
              if (ix < 0 || ix >= w) continue;
              const int8_t* xp = &b.hx[((in * h + iy) * w + ix) * c];
              const int8_t* wp = &b.hw[((ik * r + dy) * r + dx) * c];
              for (int64_t ic = 0; ic < c; ++ic) acc += int32_t{xp[ic]} * int32_t{wp[ic]};
            }
          }
          float v = static_cast<float>(acc) * b.hscale[ik] + b.hbias[ik];
          v = std::max(v, 0.0f);
          const float q = std::min(127.0f, std::max(-128.0f, std::nearbyint(v)));
          const int8_t got = y[((in * oh + y0) * ow + x0) * k + ik];
          if (got != static_cast<int8_t>(q)) {
            ++bad;
            if (std::abs(got - q) <= 1) ++off1;
          }
        }
  return {bad, off1};
}

}  // namespace

int main(int argc, char** argv) {
  const int batch = argc > 1 ? std::atoi(argv[1]) : 64;
  const bool check = argc > 2 && std::string(argv[2]) == "check";
  cudnnHandle_t handle;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
    std::fprintf(stderr, "cudnnCreate failed\n");
    return 1;
  }
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  cudnnSetStream(handle, stream);
  auto cache = TuningCache::Open("/tmp/int8_probe_tuning.txt", "probe", true);
  if (!cache.ok()) {
    std::fprintf(stderr, "%s\n", cache.status().ToString().c_str());
    return 1;
  }
  std::printf("cuDNN %zu, batch %d\n", cudnnGetVersion(), batch);
  std::printf("| conv | count | f16 us | i8 NHWC us | i8 NC/32HW32 us | same, reordered w | f16 / best i8 | i8 NHWC check |\n"
              "|---|---|---|---|---|---|---|---|\n");
  std::mt19937 rng(7);
  double total_f16 = 0, total_i8 = 0;
  const char* kVariant[4] = {"f16", "i8 NHWC", "i8 NC/32HW32", "i8 NC/32HW32 reordered w"};
  for (const ConvCase& cc : kCases) {
    Geometry g = Shape(cc, batch);
    double us[4] = {-1, -1, -1, -1};
    std::string note[4], verdict = "-";
    for (int variant = 0; variant < 4; ++variant) {
      const int int8 = variant > 0 ? 1 : 0;
      if (variant >= 2 && (g.x[1] % 32 != 0 || g.y[1] % 32 != 0)) {
        note[variant] = "channels not a multiple of 32";
        continue;
      }
      Buffers b;
      if (Fill(b, g, int8, rng) != 0) return 1;
      std::vector<int64_t> uids = {kX, kW, kY, kBias};
      std::vector<void*> ptrs = {b.x, b.w, b.y, b.bias};
      if (int8) {
        uids.push_back(kScale);
        ptrs.push_back(b.scale);
      }
      void* ws = nullptr;
      size_t ws_bytes = 0;
      auto run = [&](const CudnnPlan& p) -> Status {
        if (static_cast<size_t>(p.workspace_bytes) > ws_bytes) {
          cudaFree(ws);
          ws_bytes = static_cast<size_t>(p.workspace_bytes);
          if (cudaMalloc(&ws, ws_bytes) != cudaSuccess) return InternalError("workspace");
        }
        return ExecuteCudnnPlan(handle, p, uids, ptrs, ws);
      };
      Result<CudnnPlan> plan = BuildPlan(handle, g, variant, cache->get(), stream, run);
      if (!plan.ok()) {
        note[variant] = plan.status().ToString();
        Free(b);
        continue;
      }
      Result<double> t = MedianMicros(stream, [&] { return run(*plan); }, 20);
      if (!t.ok()) {
        note[variant] = t.status().ToString();
      } else {
        us[variant] = *t;
        note[variant] = plan->engine;
      }
      if (variant == 1 && t.ok() && check) {
        std::vector<int8_t> y(static_cast<size_t>(g.y[0] * g.y[1] * g.y[2] * g.y[3]));
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(y.data(), b.y, y.size(), cudaMemcpyDeviceToHost));
        auto [bad, off1] = Check(b, g, y);
        verdict = fmt::format("{} of {} differ ({} by one)", bad, y.size(), off1);
      }
      cudaFree(ws);
      Free(b);
    }
    double best_i8 = -1;
    for (int i = 1; i < 4; ++i) {
      if (us[i] > 0 && (best_i8 < 0 || us[i] < best_i8)) best_i8 = us[i];
    }
    // The network total takes, per convolution, the faster of f16 and the
    // best int8 form (a stem with 3 channels stays in float16).
    if (us[0] > 0) total_f16 += us[0] * cc.count;
    if (best_i8 > 0 || us[0] > 0) {
      total_i8 += (best_i8 > 0 && (us[0] < 0 || best_i8 < us[0]) ? best_i8 : us[0]) * cc.count;
    }
    std::printf("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %s |\n", cc.name, cc.count, us[0], us[1], us[2], us[3],
                us[0] > 0 && best_i8 > 0 ? us[0] / best_i8 : 0.0, verdict.c_str());
    for (int i = 0; i < 4; ++i) {
      if (us[i] < 0) std::printf("  %s: %s\n", kVariant[i], note[i].c_str());
    }
  }
  std::printf("\nsum over ResNet-50's 53 convolutions: f16 %.0f us, mixed (the faster of f16 and int8 each) %.0f us"
              " (ratio %.2f)\n", total_f16, total_i8,
              total_i8 > 0 ? total_f16 / total_i8 : 0.0);
  if (total_i8 > 0) std::printf("mixed conv-only ceiling: %.0f images/s\n", batch * 1e6 / total_i8);
  if (total_f16 > 0) std::printf("f16 conv-only ceiling: %.0f images/s\n", batch * 1e6 / total_f16);
  return 0;
}
