/* A fake cuDNN sub-library. With FAKE_CHECK_FN it exports that
   version-check function, returning FAKE_CHECK_STATUS; with FAKE_SUB_VERSION
   it exports cudnnGetVersion returning it (as libcudnn_graph does). */
#include <stddef.h>
#ifdef FAKE_SUB_VERSION
size_t cudnnGetVersion(void) { return FAKE_SUB_VERSION; }
#endif
#ifdef FAKE_CHECK_FN
int FAKE_CHECK_FN(void) { return FAKE_CHECK_STATUS; }
#endif
int fake_cudnn_sub_marker = 1;
