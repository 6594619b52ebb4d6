# Builds examples/backend_plugin against an installed tenex and runs it (consumer_tests.cmake):
#
#   cmake -DSOURCE_DIR=<examples/backend_plugin> -DWORK_DIR=<scratch> -DTENEX_BUILD_DIR=<built tenex>
#         -DTESTS=<tenex_tests> -DGENERATOR=... [-DCONFIG=...] [-DCXX_COMPILER=...] [-DCXX_FLAGS=...] ...
#         -P run_backend_plugin.cmake
#
# 1. installs TENEX_BUILD_DIR into WORK_DIR/prefix; 2. configures and builds the plugin and its
# check with CMAKE_PREFIX_PATH=prefix (this build's compiler and flags); 3. runs naive_check,
# with the plugin on TENEX_PLUGIN_PATH and then copied into the install's plugin folder;
# 4. runs the conformance suite of TESTS with TENEX_PLUGIN_PATH at the plugin and
# TENEX_CONFORMANCE_BACKEND=naive, which fails when the plugin cannot be chosen.
cmake_minimum_required(VERSION 3.21)

foreach(required IN ITEMS SOURCE_DIR WORK_DIR TENEX_BUILD_DIR TESTS GENERATOR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "run_backend_plugin.cmake: -D${required}=... is required")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
include("${CMAKE_CURRENT_LIST_DIR}/consumer_common.cmake")
list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${prefix}")
if(SHARED_LINKER_FLAGS)
  list(APPEND configure_args "-DCMAKE_MODULE_LINKER_FLAGS=${SHARED_LINKER_FLAGS}")
endif()

run("${CMAKE_COMMAND}" --install "${TENEX_BUILD_DIR}" --prefix "${prefix}" ${config_args})
foreach(header IN ITEMS backend/plugin.hpp backend/backend_interface.hpp tensor/buffer.hpp backend/kernel_count.hpp)
  if(NOT EXISTS "${prefix}/include/tenex/${header}")
    message(FATAL_ERROR "the install lacks include/tenex/${header}, which a backend plugin needs")
  endif()
endforeach()
run("${CMAKE_COMMAND}" ${configure_args})
if(NOT DEFINED JOBS)
  set(JOBS 2)
endif()
run("${CMAKE_COMMAND}" --build "${build_dir}" ${config_args} --parallel ${JOBS})
file(GLOB plugin "${build_dir}/libtenex_backend_naive.so" "${build_dir}/*/libtenex_backend_naive.so")
if(NOT plugin)
  message(FATAL_ERROR "the build made no libtenex_backend_naive.so")
endif()
list(GET plugin 0 plugin)
get_filename_component(plugin_dir "${plugin}" DIRECTORY)
file(GLOB check "${build_dir}/naive_check" "${build_dir}/*/naive_check")
list(GET check 0 check)
run("${CMAKE_COMMAND}" -E env "TENEX_PLUGIN_PATH=${plugin_dir}" TENEX_BACKEND= "${check}")
# Put into the install's plugin folder, it is found there with no TENEX_PLUGIN_PATH.
file(GLOB plugin_folder "${prefix}/lib*/tenex/plugins" "${prefix}/lib/*/tenex/plugins")
if(NOT plugin_folder)
  message(FATAL_ERROR "the install lacks lib/tenex/plugins, the folder for backend plugins")
endif()
list(GET plugin_folder 0 plugin_folder)
file(COPY "${plugin}" DESTINATION "${plugin_folder}")
run("${CMAKE_COMMAND}" -E env "TENEX_PLUGIN_PATH=${WORK_DIR}/no-such-folder" TENEX_BACKEND= "${check}")
run("${CMAKE_COMMAND}" -E env "TENEX_PLUGIN_PATH=${plugin_dir}" TENEX_CONFORMANCE_BACKEND=naive TENEX_BACKEND=
    "${TESTS}" "--test-case=conformance: every op kind on every backend*")
