// Probe, run on the GPU machine: for ResNet-50's four residual 1x1
// convolutions (NHWC float16, batch N), fused with bias, Z and ReLU as
// conv_cudnn.cpp builds them, (1) which of cuDNN's mode-A engine configs
// are runtime-compiled, for the epilogue orders bias-then-Z and
// Z-then-bias, and (2) how long finalizing the first runtime-compiled plan
// of each takes one after another, and on four threads at once (each with
// its own handle). Run with a fresh CUDA_CACHE_PATH per mode.
//   g++ -O2 -std=c++17 cudnn_compile_probe.cpp -I/usr/local/cuda/include \
//       -L/usr/local/cuda/lib64 -lcudnn -lcudart -lpthread -o cudnn_compile_probe
//   cudnn_compile_probe list|serial|threads [N]
#include <cudnn.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

#define CHECK(x)                                                                         \
  do {                                                                                   \
    cudnnStatus_t s_ = (x);                                                              \
    if (s_ != CUDNN_STATUS_SUCCESS) {                                                    \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudnnGetErrorString(s_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

cudnnBackendDescriptor_t Make(cudnnBackendDescriptorType_t t) {
  cudnnBackendDescriptor_t d = nullptr;
  CHECK(cudnnBackendCreateDescriptor(t, &d));
  return d;
}

cudnnBackendDescriptor_t Tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims, bool is_virtual) {
  // logical NCHW dims stored channels-last
  std::vector<int64_t> st = {dims[1] * dims[2] * dims[3], 1, dims[3] * dims[1], dims[1]};
  auto d = Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  int64_t align = 16;
  bool v = is_virtual;
  CHECK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  CHECK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
  CHECK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st.data()));
  CHECK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  CHECK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  CHECK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &v));
  CHECK(cudnnBackendFinalize(d));
  return d;
}

cudnnBackendDescriptor_t Pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                   cudnnBackendDescriptor_t y) {
  auto pw = Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnnDataType_t f = CUDNN_DATA_FLOAT;
  CHECK(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
  CHECK(cudnnBackendSetAttribute(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &f));
  CHECK(cudnnBackendFinalize(pw));
  auto op = Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  if (b) CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
  CHECK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
  CHECK(cudnnBackendFinalize(op));
  return op;
}

// conv(x, w) + epilogue on `handle`: the finalized operation graph.
cudnnBackendDescriptor_t Graph(cudnnHandle_t handle, int64_t n, int64_t c, int64_t hw, int64_t m, bool z_first) {
  cudnnDataType_t h = CUDNN_DATA_HALF, f = CUDNN_DATA_FLOAT;
  auto x = Tensor(1, h, {n, c, hw, hw}, false);
  auto w = Tensor(2, h, {m, c, 1, 1}, false);
  auto acc = Tensor(5, f, {n, m, hw, hw}, true);
  auto conv = Make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  int64_t dims = 2, zero[2] = {0, 0}, one[2] = {1, 1};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, zero));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, zero));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, one));
  CHECK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, one));
  CHECK(cudnnBackendFinalize(conv));
  auto cop = Make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  float alpha = 1, beta = 0;
  CHECK(cudnnBackendSetAttribute(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
  CHECK(cudnnBackendSetAttribute(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w));
  CHECK(cudnnBackendSetAttribute(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &acc));
  CHECK(cudnnBackendSetAttribute(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                 1, &conv));
  CHECK(cudnnBackendSetAttribute(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
  CHECK(cudnnBackendSetAttribute(cop, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  CHECK(cudnnBackendFinalize(cop));
  auto bias = Tensor(4, h, {1, m, 1, 1}, false);
  auto z = Tensor(6, h, {n, m, hw, hw}, false);
  auto t1 = Tensor(10, f, {n, m, hw, hw}, true);
  auto t2 = Tensor(11, f, {n, m, hw, hw}, true);
  auto y = Tensor(3, h, {n, m, hw, hw}, false);
  auto add1 = Pointwise(CUDNN_POINTWISE_ADD, acc, z_first ? z : bias, t1);
  auto add2 = Pointwise(CUDNN_POINTWISE_ADD, t1, z_first ? bias : z, t2);
  auto relu = Pointwise(CUDNN_POINTWISE_RELU_FWD, t2, nullptr, y);
  cudnnBackendDescriptor_t ops[4] = {cop, add1, add2, relu};
  auto g = Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CHECK(cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 4, ops));
  CHECK(cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
  CHECK(cudnnBackendFinalize(g));
  return g;
}

std::vector<cudnnBackendDescriptor_t> Configs(cudnnBackendDescriptor_t g) {
  auto heur = Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  CHECK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g));
  CHECK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
  CHECK(cudnnBackendFinalize(heur));
  int64_t count = 0;
  CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  std::vector<cudnnBackendDescriptor_t> cfg(count);
  for (auto& c : cfg) c = Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t got = 0;
  CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                                 cfg.data()));
  cfg.resize(got);
  return cfg;
}

struct EngineInfo {
  int64_t index = -1;
  bool runtime = false;
  std::string numerical;
};

EngineInfo Info(cudnnBackendDescriptor_t cfg) {
  EngineInfo e;
  auto eng = Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t n = 0;
  CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
  CHECK(cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &e.index));
  cudnnBackendBehaviorNote_t b[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &n, b) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < n; ++i) e.runtime |= b[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  }
  cudnnBackendNumericalNote_t nn[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, nn) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < n; ++i) e.numerical += std::to_string(static_cast<int>(nn[i])) + ",";
  }
  return e;
}

struct Shape {
  int64_t c, hw, m;
};
const Shape kShapes[4] = {{64, 56, 256}, {128, 28, 512}, {256, 14, 1024}, {512, 7, 2048}};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Finalizes the first runtime-compiled mode-A plan of shape `s` on a handle of its own.
double CompileFirstRuntime(int64_t n, const Shape& s) {
  cudnnHandle_t handle;
  CHECK(cudnnCreate(&handle));
  auto g = Graph(handle, n, s.c, s.hw, s.m, false);
  double took = -1;
  for (auto cfg : Configs(g)) {
    if (!Info(cfg).runtime) continue;
    auto plan = Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    CHECK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    CHECK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    double t0 = Now();
    cudnnStatus_t st = cudnnBackendFinalize(plan);
    took = Now() - t0;
    std::printf("  shape c%lld hw%lld m%lld: engine %lld finalize %s in %.3f s\n", (long long)s.c, (long long)s.hw,
                (long long)s.m, (long long)Info(cfg).index, cudnnGetErrorString(st), took);
    break;
  }
  return took;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "list";
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 64;
  cudaFree(nullptr);
  if (what == "list") {
    cudnnHandle_t handle;
    CHECK(cudnnCreate(&handle));
    for (bool z_first : {false, true}) {
      for (const Shape& s : kShapes) {
        auto g = Graph(handle, n, s.c, s.hw, s.m, z_first);
        std::printf("%s c%lld hw%lld m%lld:", z_first ? "z,bias" : "bias,z", (long long)s.c, (long long)s.hw,
                    (long long)s.m);
        int shown = 0;
        for (auto cfg : Configs(g)) {
          EngineInfo e = Info(cfg);
          std::printf(" %lld%s[%s]", (long long)e.index, e.runtime ? "rt" : "", e.numerical.c_str());
          if (++shown == 12) break;
        }
        std::printf("\n");
      }
    }
    return 0;
  }
  double t0 = Now();
  if (what == "serial") {
    for (const Shape& s : kShapes) CompileFirstRuntime(n, s);
  } else {
    std::vector<std::thread> threads;
    for (const Shape& s : kShapes) threads.emplace_back([n, s] { CompileFirstRuntime(n, s); });
    for (auto& t : threads) t.join();
  }
  std::printf("%s: %.3f s for the four\n", what.c_str(), Now() - t0);
  return 0;
}
