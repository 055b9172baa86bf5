/* A fake libcudart: version, and "device" memory that is host memory so the
   live check's convolution can run without a GPU. */
#include <stdlib.h>
#include <string.h>

int cudaRuntimeGetVersion(int* v) { *v = FAKE_RUNTIME_VERSION; return 0; }
int cudaMalloc(void** p, size_t n) { *p = malloc(n); return *p ? 0 : 2; }
int cudaFree(void* p) { free(p); return 0; }
int cudaMemcpy(void* d, const void* s, size_t n, int kind) { (void)kind; memcpy(d, s, n); return 0; }
