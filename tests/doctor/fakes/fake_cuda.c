/* A fake libcuda.so.1: the driver API calls the doctor makes, answering with
   the values given as compile definitions. Honours CUDA_VISIBLE_DEVICES=""
   and "-1" like the real driver (no device visible). */
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_INIT_RESULT
#define FAKE_INIT_RESULT 0
#endif

static int Visible(void) {
  const char* v = getenv("CUDA_VISIBLE_DEVICES");
  if (v != NULL && (v[0] == '\0' || strcmp(v, "-1") == 0)) return 0;
  return FAKE_DEVICE_COUNT;
}

int cuInit(unsigned flags) { (void)flags; return FAKE_INIT_RESULT; }
int cuDriverGetVersion(int* v) { *v = FAKE_DRIVER_VERSION; return 0; }
int cuDeviceGetCount(int* n) { *n = Visible(); return 0; }
int cuDeviceGet(int* d, int i) { *d = i; return i < Visible() ? 0 : 101; }
int cuDeviceGetName(char* name, int len, int d) { (void)d; strncpy(name, FAKE_NAME, (size_t)len); return 0; }
int cuDeviceGetAttribute(int* v, int attr, int d) {
  (void)d;
  *v = attr == 75 ? FAKE_CC_MAJOR : attr == 76 ? FAKE_CC_MINOR : 0;
  return 0;
}
int cuDeviceTotalMem_v2(size_t* b, int d) { (void)d; *b = (size_t)16 << 30; return 0; }
int cuDevicePrimaryCtxRetain(void** ctx, int d) { (void)d; *ctx = (void*)0x1; return 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { (void)d; return 0; }
int cuCtxSetCurrent(void* ctx) { (void)ctx; return 0; }
int cuMemGetInfo_v2(size_t* f, size_t* t) { *f = (size_t)15 << 30; *t = (size_t)16 << 30; return 0; }
int cuGetErrorName(int r, const char** s) { *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }
