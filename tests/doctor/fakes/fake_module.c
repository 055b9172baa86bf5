/* Fake backend modules for the module loader's tests.
   FAKE_MODULE_KIND: 0 fine, 1 no entry symbol, 2 wrong ABI, 3 probe refuses.
   The good ABI version is vigil::doctor::kBackendAbiVersion (module_loader.h). */
#include <stddef.h>
#include <string.h>

struct VigilBackendEntry {
  int abi_version;
  const char* name;
  int (*probe)(char* message, size_t size);
  int backend_interface_version;
  int (*create)(const void* options, void** backend, void** status);
  void (*destroy)(void* backend);
  const char* (*describe)(int device);
};

#ifdef FAKE_NEEDS_CUDNN
size_t cudnnGetVersion(void);
size_t UseCudnn(void) { return cudnnGetVersion(); }
#endif

static int Probe(char* message, size_t size) {
#if FAKE_MODULE_KIND == 3
  strncpy(message, "no GPU with compute capability >= 7.5", size);
  return 1;
#else
  (void)message; (void)size;
  return 0;
#endif
}

#if FAKE_MODULE_KIND != 1
static const struct VigilBackendEntry kEntry = {FAKE_MODULE_KIND == 2 ? 99 : 7, "cuda", Probe, 0, NULL, NULL, NULL};
const struct VigilBackendEntry* vigil_backend_entry(void) { return &kEntry; }
#endif
