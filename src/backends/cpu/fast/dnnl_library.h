// oneDNN, loaded at run time. vigil compiles against oneDNN 2.x's C header
// (Debian's libdnnl-dev) but does not link it: the first CPU convolution
// dlopen()s libdnnl.so.2 and resolves the calls listed in DnnlApi. Where the
// library is absent (a GPU machine without it, a wheel), nothing fails: the
// reference kernels run, and DnnlDescription() says why. The soname pins the
// 2.x ABI these declarations come from; oneDNN 3.x (libdnnl.so.3) changed the
// descriptor calls and is not loaded.
#pragma once

#include <string>

#if defined(VIGIL_HAVE_DNNL_HEADERS)
#include <oneapi/dnnl/dnnl.h>
#endif

namespace vigil::cpu::fast {

#if defined(VIGIL_HAVE_DNNL_HEADERS)
// The subset of oneDNN's C API that vigil calls, resolved from the library.
struct DnnlApi {
#define VIGIL_DNNL_CALLS(X)                     \
  X(dnnl_version)                               \
  X(dnnl_engine_create)                         \
  X(dnnl_stream_create)                         \
  X(dnnl_stream_destroy)                        \
  X(dnnl_memory_desc_init_by_tag)               \
  X(dnnl_memory_desc_init_by_strides)           \
  X(dnnl_memory_desc_equal)                     \
  X(dnnl_memory_desc_get_size)                  \
  X(dnnl_memory_create)                         \
  X(dnnl_memory_set_data_handle_v2)             \
  X(dnnl_memory_destroy)                        \
  X(dnnl_dilated_convolution_forward_desc_init) \
  X(dnnl_primitive_attr_create)                 \
  X(dnnl_primitive_attr_destroy)                \
  X(dnnl_primitive_attr_set_scratchpad_mode)    \
  X(dnnl_primitive_attr_set_post_ops)           \
  X(dnnl_post_ops_create)                       \
  X(dnnl_post_ops_destroy)                      \
  X(dnnl_post_ops_append_eltwise)               \
  X(dnnl_post_ops_append_binary)                \
  X(dnnl_primitive_desc_create)                 \
  X(dnnl_primitive_desc_query)                  \
  X(dnnl_primitive_desc_query_md)               \
  X(dnnl_primitive_desc_destroy)                \
  X(dnnl_reorder_primitive_desc_create)         \
  X(dnnl_primitive_create)                      \
  X(dnnl_primitive_destroy)                     \
  X(dnnl_primitive_execute)                     \
  X(dnnl_sgemm)
#define VIGIL_DNNL_POINTER(name) decltype(&::name) name = nullptr;
  VIGIL_DNNL_CALLS(VIGIL_DNNL_POINTER)
#undef VIGIL_DNNL_POINTER
  // libgomp's, which libdnnl.so.2 loads: oneDNN's OpenMP build takes its
  // thread count from the calling thread's OpenMP setting.
  void (*omp_set_num_threads)(int) = nullptr;
  // libgomp's team start (its GCC ABI entry point, what `#pragma omp
  // parallel` compiles to) and a member's number, for cpu/parallel.h's
  // ParallelFor: elementwise work on the same pool as oneDNN's threads.
  // Null where the build is not OpenMP (ParallelFor then stays serial).
  void (*gomp_parallel)(void (*)(void*), void*, unsigned, unsigned) = nullptr;
  int (*omp_get_thread_num)() = nullptr;
  int (*omp_get_num_threads)() = nullptr;
  dnnl_engine_t engine = nullptr;  // the CPU engine, made once
};

// The loaded library, or null (see DnnlDescription). Loads it on the first
// call; thread-safe.
const DnnlApi* Dnnl();
// dnnl_status_t as a word ("unimplemented", "out_of_memory", ...).
const char* DnnlStatusName(dnnl_status_t s);
#endif

// Whether libdnnl.so.2 is loaded and usable (loads it on the first call).
bool DnnlLoaded();

// One line for `vigil doctor` and the docs: "oneDNN 2.6.3 (libdnnl.so.2):
// CPU convolutions use it", or why not.
std::string DnnlDescription();

}  // namespace vigil::cpu::fast
