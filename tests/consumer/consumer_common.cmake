# What the consumer scripts share (run_consumer.cmake, run_backend_plugin.cmake): run(), which
# stops the script at a failing command, and the arguments that configure a consumer project
# in WORK_DIR/build with this build's compiler and flags (configure_args, config_args). The
# caller sets SOURCE_DIR, WORK_DIR and GENERATOR first; WORK_DIR is emptied.
function(run)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "$ ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${shown}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(build_dir "${WORK_DIR}/build")
set(configure_args -S "${SOURCE_DIR}" -B "${build_dir}" -G "${GENERATOR}")
set(config_args "")
if(NOT "${CONFIG}" STREQUAL "")
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${CONFIG}")
  set(config_args --config "${CONFIG}")
endif()
foreach(pair IN ITEMS MAKE_PROGRAM:CMAKE_MAKE_PROGRAM CXX_COMPILER:CMAKE_CXX_COMPILER
                      CXX_COMPILER_LAUNCHER:CMAKE_CXX_COMPILER_LAUNCHER CXX_FLAGS:CMAKE_CXX_FLAGS
                      EXE_LINKER_FLAGS:CMAKE_EXE_LINKER_FLAGS SHARED_LINKER_FLAGS:CMAKE_SHARED_LINKER_FLAGS)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 ours)
  list(GET pair 1 theirs)
  if(NOT "${${ours}}" STREQUAL "")
    list(APPEND configure_args "-D${theirs}=${${ours}}")
  endif()
endforeach()
