/* A fake libcudnn: the version API with chosen values, and a legacy API
   small enough for the live check's 3x3 convolution (host memory).
   FAKE_MODE: 0 works, 1 crashes in cudnnCreate, 2 hangs in cudnnCreate,
   3 cudnnCreate returns CUDNN_STATUS_NOT_INITIALIZED, 4 crashes when loaded.
   At run time, FAKE_CUDNN_FAIL="fn=status[,fn=status...]" makes each named
   function return that status, e.g. "cudnnConvolutionForward=5000".
   Like the real library's API log, CUDNN_LOGDEST_DBG=stdout makes it print
   to stdout when loaded and in cudnnGetVersion.
   FAKE_DELEGATE_GRAPH: cudnnGetVersion answers through libcudnn_graph.so.9,
   loaded by name (so the loader's search order decides which one), when
   that library exports cudnnGetVersion; the real libcudnn.so.9 is a shim
   that loads its sub-libraries by name in the same way. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FAKE_MODE
#define FAKE_MODE 0
#endif

#if FAKE_MODE == 4
__attribute__((constructor)) static void CrashOnLoad(void) { raise(SIGSEGV); }
#endif

static int LogToStdout(void) {
  const char* dest = getenv("CUDNN_LOGDEST_DBG");
  return dest != NULL && strcmp(dest, "stdout") == 0;
}

__attribute__((constructor)) static void LogOnLoad(void) {
  if (LogToStdout()) {
    printf("I! CuDNN (v%d) function cudnnCreate() called: fake log line on load\n", FAKE_CUDNN_VERSION);
    fflush(stdout);
  }
}

size_t cudnnGetVersion(void) {
  if (LogToStdout()) {
    printf("I! CuDNN (v%d) function cudnnGetVersion() called\n", FAKE_CUDNN_VERSION);
    fflush(stdout);
  }
#ifdef FAKE_DELEGATE_GRAPH
  void* graph = dlopen("libcudnn_graph.so.9", RTLD_NOW | RTLD_LOCAL);
  if (graph != NULL) {
    size_t (*get)(void) = (size_t (*)(void))dlsym(graph, "cudnnGetVersion");
    if (get != NULL) return get();
  }
#endif
  return FAKE_CUDNN_VERSION;
}
size_t cudnnGetCudartVersion(void) { return FAKE_CUDART_VERSION; }
#ifdef FAKE_MAX_DEVICE
size_t cudnnGetMaxDeviceVersion(void) { return FAKE_MAX_DEVICE; }
#endif

const char* cudnnGetErrorString(int s) {
  switch (s) {
    case 0: return "CUDNN_STATUS_SUCCESS";
    case 1001: return "CUDNN_STATUS_NOT_INITIALIZED";
    case 1002: return "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH";
    case 3009: return "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE";
    default: return "CUDNN_STATUS_UNKNOWN";
  }
}
void cudnnGetLastErrorString(char* m, size_t n) { strncpy(m, "fake: last error", n); }

/* The status FAKE_CUDNN_FAIL forces on `fn`, or 0. */
static int Forced(const char* fn) {
  const char* p = getenv("FAKE_CUDNN_FAIL");
  size_t n = strlen(fn);
  while (p != NULL && *p != '\0') {
    const char* end = strchr(p, ',');
    if (end == NULL) end = p + strlen(p);
    if ((size_t)(end - p) > n && strncmp(p, fn, n) == 0 && p[n] == '=') return atoi(p + n + 1);
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}
#define FORCED(fn) \
  do { \
    int forced_ = Forced(fn); \
    if (forced_ != 0) return forced_; \
  } while (0)

int cudnnCreate(void** h) {
  FORCED("cudnnCreate");
  if (FAKE_MODE == 1) *(volatile int*)0 = 1;
  if (FAKE_MODE == 2) for (;;) pause();
  if (FAKE_MODE == 3) return 1001;
  *h = malloc(1);
  return 0;
}
int cudnnDestroy(void* h) { free(h); return 0; }

static int JitOnly(void) {
  const char* c = getenv("CUDNN_LIB_CONFIG");
  return c != NULL && strcmp(c, "GRAPH_JIT_ONLY") == 0;
}
int cudnnCreateTensorDescriptor(void** d) { FORCED("cudnnCreateTensorDescriptor"); if (JitOnly()) return 3009; *d = malloc(1); return 0; }
int cudnnSetTensor4dDescriptor(void* d, int f, int t, int n, int c, int h, int w) { FORCED("cudnnSetTensor4dDescriptor"); return 0; }
int cudnnCreateFilterDescriptor(void** d) { FORCED("cudnnCreateFilterDescriptor"); *d = malloc(1); return 0; }
int cudnnSetFilter4dDescriptor(void* d, int t, int f, int k, int c, int h, int w) { FORCED("cudnnSetFilter4dDescriptor"); return 0; }
int cudnnCreateConvolutionDescriptor(void** d) { FORCED("cudnnCreateConvolutionDescriptor"); *d = malloc(1); return 0; }
int cudnnSetConvolution2dDescriptor(void* d, int ph, int pw, int u, int v, int dh, int dw, int m, int t) {
  FORCED("cudnnSetConvolution2dDescriptor");
  return 0;
}

/* 3x3 input, 3x3 filter, padding 1, stride 1: cross-correlation. */
int cudnnConvolutionForward(void* h, const void* alpha, void* xd, const void* x, void* wd, const void* w, void* cd,
                            int algo, void* ws, size_t wss, const void* beta, void* yd, void* y) {
  FORCED("cudnnConvolutionForward");
  const float* in = x;
  const float* k = w;
  float* out = y;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      float s = 0;
      for (int a = -1; a <= 1; ++a)
        for (int b = -1; b <= 1; ++b)
          if (i + a >= 0 && i + a < 3 && j + b >= 0 && j + b < 3) s += in[(i + a) * 3 + j + b] * k[(a + 1) * 3 + b + 1];
      out[i * 3 + j] = s * *(const float*)alpha;
    }
  return 0;
}
