// The live check's child side. Everything goes through dlsym; signatures and
// enum values are from cudnn_graph.h / cudnn_ops.h / cudnn_cnn.h and
// cuda_runtime_api.h / driver_types.h.
#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "doctor/crash/crash_handler.h"
#include "doctor/live/live_check.h"
#include "doctor/probe/forked_child.h"

namespace vigil::doctor {
namespace {

int g_fd = -1;

// --- the check ----------------------------------------------------------

void Emit(const std::string& line) { WriteAll(g_fd, line + "\n"); }

using Status = int;  // cudnnStatus_t
using Handle = void*;

struct Cudnn {
  void* h = nullptr;
  template <typename F>
  F Get(const char* name) const { return reinterpret_cast<F>(dlsym(h, name)); }
};

// Reports a failed call with its status name and cuDNN's last error text.
bool Check(const Cudnn& dnn, const char* call, Status status) {
  if (status == 0) return true;
  auto error_string = dnn.Get<const char* (*)(Status)>("cudnnGetErrorString");
  const char* name = error_string ? error_string(status) : nullptr;
  Emit(std::string("status ") + call + " " + std::to_string(status) + " " + (name ? name : "?"));
  if (auto last = dnn.Get<void (*)(char*, size_t)>("cudnnGetLastErrorString")) {
    char message[1024] = {};
    last(message, sizeof message - 1);
    if (message[0] != '\0') Emit(std::string("lasterror ") + message);
  }
  return false;
}

// Each step is spelled out so the stage line names the call that failed.
int RunConvolution(const Cudnn& dnn, void* cudart) {
  auto cuda_malloc = reinterpret_cast<int (*)(void**, size_t)>(dlsym(cudart, "cudaMalloc"));
  auto cuda_memcpy = reinterpret_cast<int (*)(void*, const void*, size_t, int)>(dlsym(cudart, "cudaMemcpy"));
  auto cuda_free = reinterpret_cast<int (*)(void*)>(dlsym(cudart, "cudaFree"));
  if (!cuda_malloc || !cuda_memcpy || !cuda_free) {
    Emit("missing cudaMalloc/cudaMemcpy/cudaFree");
    return 1;
  }
  Handle handle = nullptr;
  Emit("stage cudnnCreate");
  auto create = dnn.Get<Status (*)(Handle*)>("cudnnCreate");
  if (!create) return Emit("missing cudnnCreate"), 1;
  if (!Check(dnn, "cudnnCreate", create(&handle))) return 1;
  Emit("created");

  void *x_desc = nullptr, *y_desc = nullptr, *w_desc = nullptr, *conv_desc = nullptr;
  Emit("stage cudnnCreateTensorDescriptor");
  auto create_tensor = dnn.Get<Status (*)(void**)>("cudnnCreateTensorDescriptor");
  auto set_tensor = dnn.Get<Status (*)(void*, int, int, int, int, int, int)>("cudnnSetTensor4dDescriptor");
  auto create_filter = dnn.Get<Status (*)(void**)>("cudnnCreateFilterDescriptor");
  auto set_filter = dnn.Get<Status (*)(void*, int, int, int, int, int, int)>("cudnnSetFilter4dDescriptor");
  auto create_conv = dnn.Get<Status (*)(void**)>("cudnnCreateConvolutionDescriptor");
  auto set_conv = dnn.Get<Status (*)(void*, int, int, int, int, int, int, int, int)>("cudnnSetConvolution2dDescriptor");
  auto forward = dnn.Get<Status (*)(Handle, const void*, void*, const void*, void*, const void*, void*, int, void*,
                                    size_t, const void*, void*, void*)>("cudnnConvolutionForward");
  if (!create_tensor || !set_tensor || !create_filter || !set_filter || !create_conv || !set_conv || !forward) {
    return Emit("missing legacy convolution API"), 1;
  }
  constexpr int kNchw = 0, kFloat = 0, kCrossCorrelation = 1, kImplicitGemm = 0;
  if (!Check(dnn, "cudnnCreateTensorDescriptor", create_tensor(&x_desc))) return 1;
  if (!Check(dnn, "cudnnSetTensor4dDescriptor", set_tensor(x_desc, kNchw, kFloat, 1, 1, 3, 3))) return 1;
  if (!Check(dnn, "cudnnCreateTensorDescriptor", create_tensor(&y_desc))) return 1;
  if (!Check(dnn, "cudnnSetTensor4dDescriptor", set_tensor(y_desc, kNchw, kFloat, 1, 1, 3, 3))) return 1;
  if (!Check(dnn, "cudnnCreateFilterDescriptor", create_filter(&w_desc))) return 1;
  if (!Check(dnn, "cudnnSetFilter4dDescriptor", set_filter(w_desc, kFloat, kNchw, 1, 1, 3, 3))) return 1;
  if (!Check(dnn, "cudnnCreateConvolutionDescriptor", create_conv(&conv_desc))) return 1;
  if (!Check(dnn, "cudnnSetConvolution2dDescriptor",
             set_conv(conv_desc, 1, 1, 1, 1, 1, 1, kCrossCorrelation, kFloat))) {
    return 1;
  }
  // Input 1..9, filter all ones, padding 1: the centre output is the sum 45.
  float x[9], w[9], y[9] = {};
  for (int i = 0; i < 9; ++i) x[i] = static_cast<float>(i + 1), w[i] = 1.0f;
  void *dx = nullptr, *dw = nullptr, *dy = nullptr;
  Emit("stage cudaMalloc");
  if (cuda_malloc(&dx, sizeof x) || cuda_malloc(&dw, sizeof w) || cuda_malloc(&dy, sizeof y)) {
    return Emit("cuda cudaMalloc failed"), 1;
  }
  if (cuda_memcpy(dx, x, sizeof x, 1) || cuda_memcpy(dw, w, sizeof w, 1)) return Emit("cuda cudaMemcpy failed"), 1;
  float alpha = 1.0f, beta = 0.0f;
  Emit("stage cudnnConvolutionForward");
  if (!Check(dnn, "cudnnConvolutionForward", forward(handle, &alpha, x_desc, dx, w_desc, dw, conv_desc, kImplicitGemm,
                                                     nullptr, 0, &beta, y_desc, dy))) {
    return 1;
  }
  if (cuda_memcpy(y, dy, sizeof y, 2)) return Emit("cuda cudaMemcpy failed"), 1;
  Emit("result " + std::to_string(y[4]));
  if (std::fabs(y[4] - 45.0f) > 1e-3f) return Emit("wrong centre value"), 1;
  cuda_free(dx), cuda_free(dw), cuda_free(dy);
  if (auto destroy = dnn.Get<Status (*)(Handle)>("cudnnDestroy")) Check(dnn, "cudnnDestroy", destroy(handle));
  Emit("ok");
  return 0;
}

}  // namespace

int RunLiveCheckChild(const LiveCheckChildArgs& args) {
  g_fd = args.result_fd;
  InstallCrashHandler(nullptr, g_fd);
  Emit("stage loading " + args.cudart_path);
  void* cudart = dlopen(args.cudart_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (cudart == nullptr) return Emit(std::string("loadfail ") + dlerror()), 1;
  Emit("stage loading " + args.cudnn_path);
  Cudnn dnn{dlopen(args.cudnn_path.c_str(), RTLD_NOW | RTLD_LOCAL)};
  if (dnn.h == nullptr) return Emit(std::string("loadfail ") + dlerror()), 1;
  return RunConvolution(dnn, cudart);
}

}  // namespace vigil::doctor
