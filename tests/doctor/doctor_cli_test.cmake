# Runs the built `vigil doctor` against fake stacks and checks exit codes and
# --json validity. Invoked by ctest with -DVIGIL=<vigil> -DFAKES=<fakes dir>.
function(expect_exit code)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "expected exit ${code}, got ${rc}: ${ARGN}\n${out}\n${err}")
  endif()
  set(LAST_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

set(stack ${CMAKE_CURRENT_BINARY_DIR}/vigil-doctor-cli-stack)
file(REMOVE_RECURSE ${stack})
file(MAKE_DIRECTORY ${stack})
foreach(fake fake_cuda_h100 fake_cudart_13 fake_cudnn_9_14 fake_cublaslt_13 fake_cudnn_graph_9_14
        fake_cudnn_engines_precompiled_9_14 fake_cudnn_engines_runtime_compiled_9_14 fake_cudnn_heuristic_9_14
        fake_cudnn_ops_9_14 fake_cudnn_cnn_9_14 fake_cudnn_adv_9_14)
  file(GLOB files ${FAKES}/${fake}/*)
  file(COPY ${files} DESTINATION ${stack} FOLLOW_SYMLINK_CHAIN)
endforeach()

# Healthy fake stack (live check included: vigil re-executes itself): exit 0.
expect_exit(0 ${VIGIL} doctor --lib-dir ${stack})
# (Copies found elsewhere on this machine may add warnings, never errors.)
if(NOT LAST_OUTPUT MATCHES "convolution: ok")
  message(FATAL_ERROR "healthy stack report:\n${LAST_OUTPUT}")
endif()
expect_exit(0 ${VIGIL} doctor --json --lib-dir ${stack})
string(JSON healthy GET "${LAST_OUTPUT}" healthy)
string(JSON live GET "${LAST_OUTPUT}" live_check)
if(NOT healthy OR NOT live MATCHES "ok")
  message(FATAL_ERROR "healthy JSON wrong: healthy=${healthy} live=${live}")
endif()

# Without the driver: exit 1, and the JSON says driver.missing.
file(GLOB driver ${stack}/libcuda.so*)
file(REMOVE ${driver})
expect_exit(1 ${VIGIL} doctor --json --lib-dir ${stack})
string(JSON id GET "${LAST_OUTPUT}" findings 0 id)
string(JSON severity GET "${LAST_OUTPUT}" findings 0 severity)
if(NOT id STREQUAL "driver.missing" OR NOT severity STREQUAL "error")
  message(FATAL_ERROR "expected driver.missing first, got ${id} ${severity}")
endif()
expect_exit(1 ${VIGIL} doctor --lib-dir ${stack})

# Usage error and help.
expect_exit(2 ${VIGIL} doctor --no-such-flag)
expect_exit(0 ${VIGIL} doctor --help)
if(NOT LAST_OUTPUT MATCHES "Exit codes" OR LAST_OUTPUT MATCHES "child-probe")
  message(FATAL_ERROR "help text:\n${LAST_OUTPUT}")
endif()
file(REMOVE_RECURSE ${stack})
