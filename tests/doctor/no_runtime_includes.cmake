# The doctor's build boundary: nothing under src/doctor may include the runtime
# (src/runtime) or crash isolation (src/isolation), the layers above it. A
# crash-guarded session run belongs to src/isolation, not to the doctor.
#   cmake -DDOCTOR_DIR=<src/doctor> -P no_runtime_includes.cmake
if(NOT DOCTOR_DIR OR NOT IS_DIRECTORY "${DOCTOR_DIR}")
  message(FATAL_ERROR "DOCTOR_DIR='${DOCTOR_DIR}' is not a folder")
endif()
file(GLOB_RECURSE sources LIST_DIRECTORIES false
     "${DOCTOR_DIR}/*.h" "${DOCTOR_DIR}/*.hpp" "${DOCTOR_DIR}/*.c" "${DOCTOR_DIR}/*.cc"
     "${DOCTOR_DIR}/*.cpp" "${DOCTOR_DIR}/*.cu" "${DOCTOR_DIR}/*.cuh" "${DOCTOR_DIR}/*.inc")
list(LENGTH sources count)
if(count EQUAL 0)
  message(FATAL_ERROR "no sources found under ${DOCTOR_DIR}")
endif()
set(violations "")
foreach(src ${sources})
  file(STRINGS "${src}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<](runtime|isolation)/")
  foreach(line ${lines})
    file(RELATIVE_PATH rel "${DOCTOR_DIR}" "${src}")
    string(STRIP "${line}" line)
    string(APPEND violations "  src/doctor/${rel}: ${line}\n")
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "src/doctor must not include src/runtime or src/isolation "
                      "(DESIGN.md, Architecture; crash isolation lives in src/isolation):\n${violations}")
endif()
message(STATUS "src/doctor: ${count} files, none includes runtime/ or isolation/")
