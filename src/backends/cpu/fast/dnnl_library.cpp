#include "backends/cpu/fast/dnnl_library.h"

#include <fmt/format.h>

#if defined(VIGIL_HAVE_DNNL_HEADERS)
#include <dlfcn.h>

#include <mutex>
#endif

namespace vigil::cpu::fast {

#if defined(VIGIL_HAVE_DNNL_HEADERS)
namespace {

constexpr const char* kSoname = "libdnnl.so.2";

struct Loaded {
  DnnlApi api;
  bool ok = false;
  std::string description;
};

// Each step says what it did or why it stopped (as ggml's backend loader).
Loaded Load() {
  Loaded l;
  void* handle = dlopen(kSoname, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    l.description = fmt::format("{} not loaded ({}): CPU convolutions run on the reference kernels; install "
                                "oneDNN 2.x (Debian/Ubuntu: libdnnl2) for the faster path",
                                kSoname, e ? e : "no reason given");
    return l;
  }
#define VIGIL_DNNL_RESOLVE(name)                                                                          \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(handle, #name));                              \
  if (!l.api.name) {                                                                                       \
    l.description = fmt::format("{} lacks {}: not the oneDNN 2.x vigil was built for; CPU convolutions run " \
                                "on the reference kernels",                                                \
                                kSoname, #name);                                                           \
    return l;                                                                                              \
  }
  VIGIL_DNNL_CALLS(VIGIL_DNNL_RESOLVE)
#undef VIGIL_DNNL_RESOLVE
  l.api.omp_set_num_threads = reinterpret_cast<void (*)(int)>(dlsym(handle, "omp_set_num_threads"));
  l.api.gomp_parallel =
      reinterpret_cast<void (*)(void (*)(void*), void*, unsigned, unsigned)>(dlsym(handle, "GOMP_parallel"));
  l.api.omp_get_thread_num = reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_thread_num"));
  l.api.omp_get_num_threads = reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_num_threads"));
  if (!l.api.gomp_parallel || !l.api.omp_get_thread_num || !l.api.omp_get_num_threads) {
    l.api.gomp_parallel = nullptr;  // all three or none
  }
  const dnnl_version_t* v = l.api.dnnl_version();
  if (!v || v->major != 2) {
    l.description = fmt::format("{} reports oneDNN {}.x, not 2.x: CPU convolutions run on the reference kernels",
                                kSoname, v ? v->major : -1);
    return l;
  }
  if (v->cpu_runtime == DNNL_RUNTIME_OMP && !l.api.omp_set_num_threads) {
    l.description = fmt::format("{} is an OpenMP build but omp_set_num_threads is not found: CPU convolutions "
                                "run on the reference kernels",
                                kSoname);
    return l;
  }
  dnnl_status_t s = l.api.dnnl_engine_create(&l.api.engine, dnnl_cpu, 0);
  if (s != dnnl_success) {
    l.description = fmt::format("oneDNN {}.{}.{}: creating its CPU engine failed ({}): CPU convolutions run on "
                                "the reference kernels",
                                v->major, v->minor, v->patch, DnnlStatusName(s));
    return l;
  }
  // The handle stays open for the process: primitives made from it may live
  // in any session's cache until exit.
  l.ok = true;
  l.description = fmt::format("oneDNN {}.{}.{} ({}): float32 CPU convolutions use it", v->major, v->minor, v->patch,
                              kSoname);
  return l;
}

const Loaded& State() {
  static const Loaded loaded = Load();  // thread-safe initialisation
  return loaded;
}

}  // namespace

const DnnlApi* Dnnl() {
  const Loaded& l = State();
  return l.ok ? &l.api : nullptr;
}

const char* DnnlStatusName(dnnl_status_t s) {
  switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out_of_memory";
    case dnnl_invalid_arguments: return "invalid_arguments";
    case dnnl_unimplemented: return "unimplemented";
    case dnnl_iterator_ends: return "iterator_ends";
    case dnnl_runtime_error: return "runtime_error";
    case dnnl_not_required: return "not_required";
  }
  return "unknown status";
}

std::string DnnlDescription() { return State().description; }
bool DnnlLoaded() { return Dnnl() != nullptr; }

#else

bool DnnlLoaded() { return false; }
std::string DnnlDescription() {
  return "built without oneDNN's headers (libdnnl-dev): CPU convolutions run on the reference kernels";
}

#endif

}  // namespace vigil::cpu::fast
