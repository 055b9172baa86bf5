/* A fake cuDNN sub-library. With FAKE_CHECK_FN it exports that
   version-check function, returning FAKE_CHECK_STATUS. */
#ifdef FAKE_CHECK_FN
int FAKE_CHECK_FN(void) { return FAKE_CHECK_STATUS; }
#endif
int fake_cudnn_sub_marker = 1;
