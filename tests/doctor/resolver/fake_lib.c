/* A do-nothing shared library. The tests care only about its ELF dynamic
   section (SONAME, NEEDED, RPATH/RUNPATH) and build-id, set by CMake. */
int vigil_fake_function(void) { return 42; }
