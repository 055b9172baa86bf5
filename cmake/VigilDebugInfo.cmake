# How much debug information a RelWithDebInfo build carries.
#
# By default, line tables only (-g1): backtraces, sanitizer reports and
# addr2line still name the file and line. Full -g made each test program
# ~400 MB and a build tree with its ASan twin ~20 GB, more disk than CI had.
# -DVIGIL_FULL_DEBUG_INFO=ON keeps full -g, for gdb's locals and types.
#
# A macro, so that it sets the flags in the calling directory's scope; call it
# after each enable_language (CMAKE_CUDA_FLAGS_* exists only after that).
option(VIGIL_FULL_DEBUG_INFO "Full debug information (-g) instead of line tables (-g1) in RelWithDebInfo" OFF)

macro(vigil_debug_info)
  if(NOT VIGIL_FULL_DEBUG_INFO)
    foreach(_vigil_lang ${ARGN})
      if(_vigil_lang STREQUAL "CUDA")
        set(_vigil_g1 "-Xcompiler=-g1")  # nvcc's -g is the host compiler's -g
      else()
        set(_vigil_g1 "-g1")
      endif()
      string(REGEX REPLACE "(^| )-g( |$)" "\\1${_vigil_g1}\\2" CMAKE_${_vigil_lang}_FLAGS_RELWITHDEBINFO
             "${CMAKE_${_vigil_lang}_FLAGS_RELWITHDEBINFO}")
    endforeach()
  endif()
endmacro()
