/* A fake libcublasLt with a chosen cublasLtGetVersion. */
#include <stddef.h>
size_t cublasLtGetVersion(void) { return FAKE_LT_VERSION; }
