# `cmake --install`: what a user of the library gets (docs/install.md).
#
#   <prefix>/include/vigil/            vigil.h (the C API), vigil.hpp, float16.h
#   <prefix>/<libdir>/libvigil.so*     the shared library (SONAME libvigil.so.0)
#   <prefix>/<libdir>/libvigil.a       every layer in one archive
#   <prefix>/<libdir>/vigil/libvigil_cuda.so
#                                      the CUDA backend module, when it was built;
#                                      libvigil.so looks for it in ./vigil/ next
#                                      to itself, the vigil command in ../lib/vigil/
#   <prefix>/<libdir>/vigil/vigil-worker
#                                      the child process of isolated sessions,
#                                      found the same way
#   <prefix>/bin/vigil                 the command
#   <prefix>/<libdir>/cmake/vigil/     find_package(vigil): vigil::vigil (shared),
#                                      vigil::vigil_static
#   <prefix>/<libdir>/pkgconfig/vigil.pc
#
# Components: Runtime (libvigil.so.0, the CUDA module, vigil-worker, the command) and
# Development (headers, libvigil.a, the .so link, CMake and pkg-config files).

# A Python wheel (scikit-build-core; python/CMakeLists.txt) installs its own
# package folder, not the C/C++ development files.
if(SKBUILD)
  return()
endif()

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(VIGIL_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/vigil CACHE STRING
    "Where vigilConfig.cmake is installed, relative to the prefix")
set(VIGIL_INSTALL_MODULEDIR ${CMAKE_INSTALL_LIBDIR}/vigil)

# ---- Headers -----------------------------------------------------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vigil
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT Development
        FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# ---- Libraries, exported as vigil::vigil and vigil::vigil_static ------------
# libvigil.a holds the objects of every layer; what those need at link time
# beyond them is the C++ runtime, the math library, threads and dl (fmt and
# nlohmann-json are header-only and compiled in). Threads::Threads and
# ${CMAKE_DL_LIBS} are already on vigil_static; the C++ runtime and libm are
# added for the installed target only, so a consumer whose link language is
# C (a C program) links too.
set_property(TARGET vigil_static APPEND PROPERTY INTERFACE_LINK_LIBRARIES
             "$<INSTALL_INTERFACE:stdc++>" "$<INSTALL_INTERFACE:m>")
# With ImageDecoder, libvigil.a's users also link the distribution's image
# libraries (libtiff, libjpeg, ...), by name; libvigil.so has them inside.
foreach(lib ${VIGIL_IMAGE_LINK_NAMES})
  set_property(TARGET vigil_static APPEND PROPERTY INTERFACE_LINK_LIBRARIES "$<INSTALL_INTERFACE:${lib}>")
endforeach()

install(TARGETS vigil_shared vigil_static vigil_public_headers
        EXPORT vigilTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT Runtime
                NAMELINK_COMPONENT Development
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
                COMPONENT Development)
install(EXPORT vigilTargets
        NAMESPACE vigil::
        DESTINATION ${VIGIL_INSTALL_CMAKEDIR}
        COMPONENT Development)

# ---- The CUDA module and the command -------------------------------------
if(TARGET vigil_cuda)
  install(TARGETS vigil_cuda
          LIBRARY DESTINATION ${VIGIL_INSTALL_MODULEDIR} COMPONENT Runtime)
endif()
install(TARGETS vigil_worker RUNTIME DESTINATION ${VIGIL_INSTALL_MODULEDIR} COMPONENT Runtime)
install(TARGETS vigil RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)

# ---- find_package(vigil) -----------------------------------------------------
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/vigilConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/vigilConfig.cmake
  INSTALL_DESTINATION ${VIGIL_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR VIGIL_INSTALL_MODULEDIR)
# The ABI is that of the SONAME, libvigil.so.<major>.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/vigilConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/vigilConfig.cmake ${PROJECT_BINARY_DIR}/cmake/vigilConfigVersion.cmake
        DESTINATION ${VIGIL_INSTALL_CMAKEDIR}
        COMPONENT Development)

# ---- pkg-config ---------------------------------------------------------------
# Written at install time, so that the prefix in it is the one installed to
# (`cmake --install build --prefix DIR` included), not the configured one.
# libvigil.a's own link dependencies, for `pkg-config --static --libs vigil`.
set(VIGIL_PC_LIBS_PRIVATE "")
foreach(lib ${VIGIL_IMAGE_LINK_NAMES})
  string(APPEND VIGIL_PC_LIBS_PRIVATE "-l${lib} ")
endforeach()
string(APPEND VIGIL_PC_LIBS_PRIVATE "-lstdc++ -lm -pthread")
foreach(lib ${CMAKE_DL_LIBS})
  string(APPEND VIGIL_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
# A relative dir becomes ${prefix}/dir in the .pc file; an absolute one stays.
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(VIGIL_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(VIGIL_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(VIGIL_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
else()
  set(VIGIL_PC_DIR "\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig")
endif()
install(CODE "
  set(VIGIL_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(VIGIL_PC_LIBDIR [[${VIGIL_PC_LIBDIR}]])
  set(VIGIL_PC_INCLUDEDIR [[${VIGIL_PC_INCLUDEDIR}]])
  set(VIGIL_PC_VERSION [[${PROJECT_VERSION}]])
  set(VIGIL_PC_LIBS_PRIVATE [[${VIGIL_PC_LIBS_PRIVATE}]])
  set(vigil_pc \"\$ENV{DESTDIR}${VIGIL_PC_DIR}/vigil.pc\")
  message(STATUS \"Installing: \${vigil_pc}\")
  configure_file([[${CMAKE_CURRENT_LIST_DIR}/vigil.pc.in]] \"\${vigil_pc}\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${vigil_pc}\")
" COMPONENT Development)
