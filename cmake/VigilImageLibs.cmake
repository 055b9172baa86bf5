# The image libraries behind ImageDecoder (src/backends/cpu/image/), linked
# statically so that libvigil.so and the vigil command need none of them at
# run time (DESIGN.md, "Portable binaries"; docs/runtime.md, ImageDecoder).
#
# Debian's and Ubuntu's static archives (libtiff.a, libjpeg.a, ...) are
# position-independent executable code: they reach glibc's stderr and stdout
# PC-relatively, which a shared object cannot do. Each archive is therefore
# copied into the build tree with those two references renamed to hidden
# variables of ours (image_stdio.c). libLerc.a (used by libtiff only for
# LERC-compressed TIFF) refers to libstdc++'s type information the same way
# and is replaced by stand-ins that fail (image_lerc_absent.c).
#
# VIGIL_IMAGE_DECODER: AUTO (default: build ImageDecoder when every library
# is found), ON (their absence is an error), OFF. Sets VIGIL_BUILD_IMAGE_DECODER
# and, when on, the targets vigil_image_archives (the renamed copies) and the
# list VIGIL_IMAGE_ARCHIVES / VIGIL_IMAGE_SYSTEM_LIBS / VIGIL_IMAGE_INCLUDE_DIRS.
set(VIGIL_IMAGE_DECODER AUTO CACHE STRING "Build ImageDecoder with static image libraries (AUTO, ON, OFF)")
set(VIGIL_BUILD_IMAGE_DECODER OFF)
set(VIGIL_IMAGE_LINK_NAMES "" CACHE INTERNAL "")
if(VIGIL_IMAGE_DECODER STREQUAL "OFF")
  return()
endif()

set(_why "")
find_package(PkgConfig QUIET)
find_program(VIGIL_OBJCOPY NAMES objcopy ${CMAKE_OBJCOPY})
if(NOT PKG_CONFIG_FOUND)
  set(_why "pkg-config not found")
elseif(NOT VIGIL_OBJCOPY)
  set(_why "objcopy not found")
else()
  pkg_check_modules(VIGIL_IMG QUIET libtiff-4 libpng16 libwebp libopenjp2 libjpeg)
  if(NOT VIGIL_IMG_FOUND)
    set(_why "pkg-config does not find all of libtiff-4 libpng16 libwebp libopenjp2 libjpeg")
  endif()
endif()

set(VIGIL_IMAGE_ARCHIVES "")
set(VIGIL_IMAGE_SYSTEM_LIBS "")
set(VIGIL_IMAGE_NEEDS_LERC_STANDIN OFF)
if(NOT _why)
  # Link order: each library after every library that uses it; pkg-config's
  # flattened --static list does that when only the last mention is kept.
  set(_names ${VIGIL_IMG_STATIC_LIBRARIES})
  list(REVERSE _names)
  list(REMOVE_DUPLICATES _names)
  list(REVERSE _names)
  set(_dir ${PROJECT_BINARY_DIR}/image_archives)
  foreach(name ${_names})
    if(name MATCHES "^(m|pthread|dl|rt|c|stdc\\+\\+|gcc|gcc_s)$")
      list(APPEND VIGIL_IMAGE_SYSTEM_LIBS ${name})
      continue()
    endif()
    if(name STREQUAL "Lerc")
      set(VIGIL_IMAGE_NEEDS_LERC_STANDIN ON)
      continue()
    endif()
    find_library(VIGIL_IMAGE_ARCHIVE_${name} NAMES lib${name}.a HINTS ${VIGIL_IMG_STATIC_LIBRARY_DIRS})
    if(NOT VIGIL_IMAGE_ARCHIVE_${name})
      set(_why "the static archive lib${name}.a is missing")
      break()
    endif()
    set(_copy ${_dir}/lib${name}.a)
    add_custom_command(OUTPUT ${_copy}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_dir}
      COMMAND ${VIGIL_OBJCOPY} --redefine-sym stderr=vigil_image_stderr --redefine-sym stdout=vigil_image_stdout
              ${VIGIL_IMAGE_ARCHIVE_${name}} ${_copy}
      DEPENDS ${VIGIL_IMAGE_ARCHIVE_${name}}
      COMMENT "Copying lib${name}.a for libvigil.so (stderr/stdout references renamed)" VERBATIM)
    list(APPEND VIGIL_IMAGE_ARCHIVES ${_copy})
  endforeach()
endif()
if(NOT _why AND VIGIL_IMAGE_NEEDS_LERC_STANDIN)
  find_path(VIGIL_LERC_INCLUDE_DIR Lerc_c_api.h)
  if(NOT VIGIL_LERC_INCLUDE_DIR)
    set(_why "libtiff needs libLerc but Lerc_c_api.h (liblerc-dev) is missing")
  endif()
endif()

if(_why)
  if(VIGIL_IMAGE_DECODER STREQUAL "ON")
    message(FATAL_ERROR "VIGIL_IMAGE_DECODER=ON but ${_why} (scripts/setup.sh installs the packages)")
  endif()
  message(STATUS "vigil: ${_why}; ImageDecoder is not built (the op is then unsupported on the CPU)")
  return()
endif()
add_custom_target(vigil_image_archives DEPENDS ${VIGIL_IMAGE_ARCHIVES})
set(VIGIL_IMAGE_INCLUDE_DIRS ${VIGIL_IMG_STATIC_INCLUDE_DIRS} ${VIGIL_LERC_INCLUDE_DIR})
set(VIGIL_BUILD_IMAGE_DECODER ON)
# For libvigil.a's installed link interface (VigilInstall.cmake): its users
# link the distribution's libraries by name.
set(VIGIL_IMAGE_LINK_NAMES ${_names} CACHE INTERNAL "")
string(REPLACE ";" " " _list "${_names}")
message(STATUS "vigil: ImageDecoder built, linking statically: ${_list}")
