/* Preloaded in front of the real cuDNN (LD_PRELOAD): its cudnnCreate is the
   one every caller binds to, and it stores through NULL, as a cuDNN that
   crashes in cudnnCreate does. The real library provides every other symbol.
   tools/device/diagnosis_check.sh runs `vigil run --isolate` with it. */
struct cudnnContext;
int cudnnCreate(struct cudnnContext** handle) {
  (void)handle;
  *(volatile int*)0 = 1;
  return 0;
}
