// GPUs through the CUDA driver API (cuda.h), reached through dlsym only.
// Runs inside the probe's child process: cuInit there cannot leave state in
// the caller's process (a process that forks after cuInit cannot use CUDA
// in the child).
#include <dlfcn.h>

#include <cstddef>

#include "doctor/probe/probe_internal.h"

namespace vigil::doctor {
namespace {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;

// From cuda.h: CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR/MINOR.
constexpr int kAttrCcMajor = 75;
constexpr int kAttrCcMinor = 76;

struct DriverApi {
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*device_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_name)(char*, int, CUdevice) = nullptr;
  CUresult (*attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*total_mem)(size_t*, CUdevice) = nullptr;           // cuDeviceTotalMem_v2
  CUresult (*retain)(CUcontext*, CUdevice) = nullptr;           // cuDevicePrimaryCtxRetain
  CUresult (*release)(CUdevice) = nullptr;                      // cuDevicePrimaryCtxRelease_v2
  CUresult (*set_current)(CUcontext) = nullptr;                 // cuCtxSetCurrent
  CUresult (*mem_info)(size_t*, size_t*) = nullptr;             // cuMemGetInfo_v2
  CUresult (*error_name)(CUresult, const char**) = nullptr;     // cuGetErrorName
};

template <typename F>
void Bind(void* handle, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(handle, name));
}

DriverApi BindDriver(void* h) {
  DriverApi api;
  Bind(h, api.init, "cuInit");
  Bind(h, api.device_count, "cuDeviceGetCount");
  Bind(h, api.device_get, "cuDeviceGet");
  Bind(h, api.device_name, "cuDeviceGetName");
  Bind(h, api.attribute, "cuDeviceGetAttribute");
  Bind(h, api.total_mem, "cuDeviceTotalMem_v2");
  Bind(h, api.retain, "cuDevicePrimaryCtxRetain");
  Bind(h, api.release, "cuDevicePrimaryCtxRelease_v2");
  Bind(h, api.set_current, "cuCtxSetCurrent");
  Bind(h, api.mem_info, "cuMemGetInfo_v2");
  Bind(h, api.error_name, "cuGetErrorName");
  return api;
}

std::string ErrorText(const DriverApi& api, const char* call, CUresult r) {
  const char* name = nullptr;
  if (api.error_name == nullptr || api.error_name(r, &name) != 0 || name == nullptr) name = "CUDA error";
  return std::string(call) + ": " + name + " (" + std::to_string(r) + ")";
}

// Free memory needs a context: the primary one, released again at once.
void ReadFreeMemory(const DriverApi& api, CUdevice device, Gpu& gpu) {
  if (!api.retain || !api.set_current || !api.mem_info || !api.release) return;
  CUcontext ctx = nullptr;
  CUresult r = api.retain(&ctx, device);
  if (r != 0) {
    gpu.error = ErrorText(api, "cuDevicePrimaryCtxRetain", r);
    return;
  }
  size_t free_bytes = 0, total_bytes = 0;
  if (api.set_current(ctx) == 0 && (r = api.mem_info(&free_bytes, &total_bytes)) == 0) {
    gpu.free_memory = static_cast<int64_t>(free_bytes);
  } else {
    gpu.error = ErrorText(api, "cuMemGetInfo", r);
  }
  api.set_current(nullptr);
  api.release(device);
}

}  // namespace

void ProbeGpus(void* handle, StackSnapshot& s) {
  DriverApi api = BindDriver(handle);
  if (!api.init || !api.device_count || !api.device_get) {
    s.gpu_query_error = "libcuda lacks cuInit/cuDeviceGetCount/cuDeviceGet";
    return;
  }
  s.gpu_query_ran = true;
  CUresult r = api.init(0);
  if (r != 0) {
    s.gpu_query_error = ErrorText(api, "cuInit", r);
    return;
  }
  int count = 0;
  if ((r = api.device_count(&count)) != 0) {
    s.gpu_query_error = ErrorText(api, "cuDeviceGetCount", r);
    return;
  }
  for (int i = 0; i < count; ++i) {
    Gpu gpu;
    gpu.index = i;
    CUdevice device = 0;
    if ((r = api.device_get(&device, i)) != 0) {
      gpu.error = ErrorText(api, "cuDeviceGet", r);
      s.gpus.push_back(gpu);
      continue;
    }
    char name[256] = {};
    if (api.device_name && api.device_name(name, sizeof name - 1, device) == 0) gpu.name = name;
    if (api.attribute) {
      api.attribute(&gpu.cc_major, kAttrCcMajor, device);
      api.attribute(&gpu.cc_minor, kAttrCcMinor, device);
    }
    size_t total = 0;
    if (api.total_mem && api.total_mem(&total, device) == 0) gpu.total_memory = static_cast<int64_t>(total);
    ReadFreeMemory(api, device, gpu);
    s.gpus.push_back(gpu);
  }
}

}  // namespace vigil::doctor
