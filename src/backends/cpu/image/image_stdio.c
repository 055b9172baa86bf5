/* The static image libraries of Debian and Ubuntu are built as position-
 * independent executables' code, not as shared-library code: they reach
 * glibc's `stderr` and `stdout` through PC-relative relocations, which the
 * linker refuses in a shared object (libvigil.so). Our build copies the
 * archives with those two references renamed (objcopy --redefine-sym, see
 * src/backends/cpu/CMakeLists.txt) to these hidden variables, which point at
 * the real streams. The libraries' default handlers that print are
 * replaced by ours anyway; this only lets them link. */
#include <stdio.h>

__attribute__((visibility("hidden"))) FILE* vigil_image_stderr;
__attribute__((visibility("hidden"))) FILE* vigil_image_stdout;

__attribute__((constructor)) static void vigil_image_stdio_init(void) {
  vigil_image_stderr = stderr;
  vigil_image_stdout = stdout;
}
