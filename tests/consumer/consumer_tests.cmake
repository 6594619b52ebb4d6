# Tests that build and run what users build and run. Included by
# tests/CMakeLists.txt.
#
# - consumer_find_package: installs this build into a prefix under the build
#   directory, then builds and runs find_package/ against it.
# - consumer_pkg_config: installs the same way, then compiles pkg_config/main.cpp with the
#   compiler and `pkg-config --cflags --libs tenex` from the prefix, and runs it.
# - consumer_add_subdirectory: builds and runs add_subdirectory/, which builds
#   tenex from this source tree.
# - example_mp2_check, example_quickstart: the examples, when they are built.
# - readme_quickstart_snippet: the README's first code snippet is
#   examples/quickstart.cpp.
#
# The consumer tests build whole projects (the second one all of tenex): they
# carry the label `consumer`, so `ctest -LE consumer` skips them.

set(_tenex_consumer_work "${CMAKE_CURRENT_BINARY_DIR}/consumer")
cmake_host_system_information(RESULT _tenex_consumer_jobs QUERY NUMBER_OF_LOGICAL_CORES)
# The consumers build with this build's toolchain and flags: a sanitized
# libtenex needs sanitized executables around it.
set(_tenex_consumer_common
  "-DCONFIG=$<CONFIG>"
  "-DGENERATOR=${CMAKE_GENERATOR}"
  "-DMAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}"
  "-DCXX_COMPILER=${CMAKE_CXX_COMPILER}"
  "-DCXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}"
  "-DCXX_FLAGS=${CMAKE_CXX_FLAGS}"
  "-DEXE_LINKER_FLAGS=${CMAKE_EXE_LINKER_FLAGS}"
  "-DSHARED_LINKER_FLAGS=${CMAKE_SHARED_LINKER_FLAGS}"
  "-DJOBS=${_tenex_consumer_jobs}")

add_test(NAME consumer_find_package
  COMMAND "${CMAKE_COMMAND}"
    -DMODE=find_package
    "-DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/find_package"
    "-DWORK_DIR=${_tenex_consumer_work}/find_package"
    "-DTENEX_BUILD_DIR=${tenex_BINARY_DIR}"
    "-DTENEX_SONAME=$<TARGET_SONAME_FILE_NAME:tenex>"
    ${_tenex_consumer_common}
    -P "${CMAKE_CURRENT_LIST_DIR}/run_consumer.cmake")
# Its own prefix: ctest may run it beside consumer_find_package.
add_test(NAME consumer_pkg_config
  COMMAND "${CMAKE_COMMAND}"
    -DMODE=pkg_config
    "-DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/pkg_config"
    "-DWORK_DIR=${_tenex_consumer_work}/pkg_config"
    "-DTENEX_BUILD_DIR=${tenex_BINARY_DIR}"
    "-DTENEX_SONAME=$<TARGET_SONAME_FILE_NAME:tenex>"
    "-DPKG_CONFIG=${PKG_CONFIG_EXECUTABLE}"
    ${_tenex_consumer_common}
    -P "${CMAKE_CURRENT_LIST_DIR}/run_consumer.cmake")
add_test(NAME consumer_add_subdirectory
  COMMAND "${CMAKE_COMMAND}"
    -DMODE=add_subdirectory
    "-DSOURCE_DIR=${CMAKE_CURRENT_LIST_DIR}/add_subdirectory"
    "-DWORK_DIR=${_tenex_consumer_work}/add_subdirectory"
    ${_tenex_consumer_common}
    -P "${CMAKE_CURRENT_LIST_DIR}/run_consumer.cmake")
# High cost: ctest starts these long ones first, next to the quick tests.
set_tests_properties(consumer_find_package consumer_add_subdirectory PROPERTIES
  LABELS consumer
  COST 1000
  TIMEOUT 1800)
set_tests_properties(consumer_pkg_config PROPERTIES LABELS consumer TIMEOUT 600)

if(TARGET mp2_energy)
  file(MAKE_DIRECTORY "${_tenex_consumer_work}/examples")
  add_test(NAME example_mp2_check
    COMMAND mp2_energy --nocc 4 --nvirt 10 --naux 30 --check --dot mp2_check.dot
    WORKING_DIRECTORY "${_tenex_consumer_work}/examples")
  set_tests_properties(example_mp2_check PROPERTIES LABELS example)
endif()
if(TARGET quickstart)
  add_test(NAME example_quickstart COMMAND quickstart)
  set_tests_properties(example_quickstart PROPERTIES LABELS example)
  # docs/extending.md's user classes: prints "2 4" then "1 5".
  add_test(NAME example_extending COMMAND extending)
  set_tests_properties(example_extending PROPERTIES LABELS example PASS_REGULAR_EXPRESSION "2 4\n1 5")
endif()
add_test(NAME readme_quickstart_snippet
  COMMAND "${CMAKE_COMMAND}"
    "-DREADME=${tenex_SOURCE_DIR}/README.md"
    "-DSNIPPET=${tenex_SOURCE_DIR}/examples/quickstart.cpp"
    -P "${CMAKE_CURRENT_LIST_DIR}/readme_snippet.cmake")
set_tests_properties(readme_quickstart_snippet PROPERTIES LABELS example)
# docs/extending.md's first ```cpp block is examples/extending.cpp, which the tests run.
add_test(NAME extending_doc_snippet
  COMMAND "${CMAKE_COMMAND}"
    "-DREADME=${tenex_SOURCE_DIR}/docs/extending.md"
    "-DSNIPPET=${tenex_SOURCE_DIR}/examples/extending.cpp"
    -P "${CMAKE_CURRENT_LIST_DIR}/readme_snippet.cmake")
set_tests_properties(extending_doc_snippet PROPERTIES LABELS example)

# examples/backend_plugin/, a backend plugin built outside tenex against this build installed
# into a prefix, checked against the CPU backend (naive_check) and then run through the whole
# conformance suite, loaded by TENEX_PLUGIN_PATH (tests/consumer/run_backend_plugin.cmake).
add_test(NAME backend_plugin_out_of_tree
  COMMAND "${CMAKE_COMMAND}"
    "-DSOURCE_DIR=${tenex_SOURCE_DIR}/examples/backend_plugin"
    "-DWORK_DIR=${_tenex_consumer_work}/backend_plugin"
    "-DTENEX_BUILD_DIR=${tenex_BINARY_DIR}"
    "-DTESTS=$<TARGET_FILE:tenex_tests>"
    ${_tenex_consumer_common}
    -P "${CMAKE_CURRENT_LIST_DIR}/run_backend_plugin.cmake")
set_tests_properties(backend_plugin_out_of_tree PROPERTIES LABELS consumer COST 500 TIMEOUT 1200)
