# Builds and runs one consumer project as a single ctest test (see
# consumer_tests.cmake). Run as a script:
#
#   cmake -DMODE=find_package|pkg_config|add_subdirectory -DSOURCE_DIR=<consumer project>
#         -DWORK_DIR=<scratch dir> -DGENERATOR=<generator> [-DCONFIG=<build type>]
#         [-DMAKE_PROGRAM=...] [-DCXX_COMPILER=...] [-DCXX_FLAGS=...]
#         [-DEXE_LINKER_FLAGS=...] [-DSHARED_LINKER_FLAGS=...] [-DJOBS=N]
#         find_package, pkg_config: -DTENEX_BUILD_DIR=<built tenex> -DTENEX_SONAME=<libtenex.so.X.Y>
#         pkg_config only: -DPKG_CONFIG=<pkg-config program>
#         -P run_consumer.cmake
#
# find_package: installs TENEX_BUILD_DIR into WORK_DIR/prefix, checks what was
# installed, then configures the consumer with CMAKE_PREFIX_PATH=prefix.
# pkg_config: installs and checks the same way, then compiles SOURCE_DIR/main.cpp with the
# compiler alone and `pkg-config --cflags --libs tenex` (PKG_CONFIG_PATH=the prefix's).
# add_subdirectory: configures the consumer, which builds tenex from source.
# Either way the consumer is built with this build's compiler and flags (a
# sanitized tenex needs sanitized consumers) and its `app` must exit with 0.
cmake_minimum_required(VERSION 3.21)

foreach(required IN ITEMS MODE SOURCE_DIR WORK_DIR GENERATOR)
  if(NOT DEFINED ${required})
    message(FATAL_ERROR "run_consumer.cmake: -D${required}=... is required")
  endif()
endforeach()

include("${CMAKE_CURRENT_LIST_DIR}/consumer_common.cmake")

if(MODE STREQUAL "find_package" OR MODE STREQUAL "pkg_config")
  foreach(required IN ITEMS TENEX_BUILD_DIR TENEX_SONAME)
    if(NOT DEFINED ${required})
      message(FATAL_ERROR "run_consumer.cmake: ${MODE} mode needs -D${required}=...")
    endif()
  endforeach()
  set(prefix "${WORK_DIR}/prefix")
  if(NOT TENEX_SONAME MATCHES "^libtenex\\.so\\.[0-9]+")
    message(FATAL_ERROR "libtenex's SONAME '${TENEX_SONAME}' carries no version (set VERSION and SOVERSION)")
  endif()
  run("${CMAKE_COMMAND}" --install "${TENEX_BUILD_DIR}" --prefix "${prefix}" ${config_args})

  # What the package must hold: the generated headers, the package files, and
  # the library under its versioned SONAME.
  foreach(header IN ITEMS tenex.hpp config.hpp export.hpp)
    if(NOT EXISTS "${prefix}/include/tenex/${header}")
      message(FATAL_ERROR "the install lacks include/tenex/${header}")
    endif()
  endforeach()
  file(GLOB config_file "${prefix}/lib*/cmake/tenex/tenexConfig.cmake" "${prefix}/lib/*/cmake/tenex/tenexConfig.cmake")
  file(GLOB library "${prefix}/lib*/${TENEX_SONAME}" "${prefix}/lib/*/${TENEX_SONAME}")
  if(NOT config_file)
    message(FATAL_ERROR "the install lacks lib/cmake/tenex/tenexConfig.cmake")
  endif()
  if(NOT library)
    message(FATAL_ERROR "the install lacks ${TENEX_SONAME} (the versioned SONAME link)")
  endif()
  list(GET library 0 library)
  find_program(READELF readelf)
  if(READELF)
    execute_process(COMMAND "${READELF}" -d "${library}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE status)
    if(NOT status EQUAL 0 OR NOT dynamic MATCHES "SONAME\\)[^\n]*\\[${TENEX_SONAME}\\]")
      message(FATAL_ERROR "${library} does not carry SONAME ${TENEX_SONAME}:\n${dynamic}")
    endif()
  endif()
  # Public headers must compile without the private dependencies' headers.
  file(GLOB_RECURSE headers "${prefix}/include/tenex/*")
  foreach(header IN LISTS headers)
    file(STRINGS "${header}" private_includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"](boost/|cblas|lapacke|omp\\.h|cuda|cublas|cusolver)")
    if(private_includes)
      message(FATAL_ERROR "installed header ${header} includes a private dependency: ${private_includes}")
    endif()
    if(NOT header MATCHES "\\.hpp$")
      message(FATAL_ERROR "the install put a non-header file into include/: ${header}")
    endif()
  endforeach()

  if(MODE STREQUAL "pkg_config")
    # Builds with the compiler alone, the way a Makefile user does:
    #   c++ $(pkg-config --variable=cxx_std tenex) main.cpp $(pkg-config --cflags --libs tenex)
    # plus a run path to the prefix's lib (the prefix is not on the loader's path).
    if(NOT PKG_CONFIG)
      message(FATAL_ERROR "run_consumer.cmake: pkg_config mode needs -DPKG_CONFIG=<pkg-config> (./scripts/install-deps)")
    endif()
    file(GLOB pc_file "${prefix}/lib*/pkgconfig/tenex.pc" "${prefix}/lib/*/pkgconfig/tenex.pc")
    if(NOT pc_file)
      message(FATAL_ERROR "the install lacks lib/pkgconfig/tenex.pc")
    endif()
    list(GET pc_file 0 pc_file)
    get_filename_component(pc_dir "${pc_file}" DIRECTORY)
    set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
    function(pkg_config out_var)
      execute_process(COMMAND "${PKG_CONFIG}" --print-errors ${ARGN} tenex
        OUTPUT_VARIABLE out RESULT_VARIABLE status OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(NOT status EQUAL 0)
        message(FATAL_ERROR "failed (${status}): PKG_CONFIG_PATH=${pc_dir} ${PKG_CONFIG} ${ARGN} tenex")
      endif()
      string(REPLACE ";" " " shown "${ARGN}")
      message(STATUS "$ pkg-config ${shown} tenex: ${out}")
      set(${out_var} "${out}" PARENT_SCOPE)
    endfunction()
    # The file found must be the prefix's, and its directories the prefix's.
    pkg_config(found --variable=pcfiledir)
    pkg_config(version --modversion)
    pkg_config(cxx_std --variable=cxx_std)
    pkg_config(libdir --variable=libdir)
    pkg_config(includedir --variable=includedir)
    pkg_config(flags --cflags --libs)
    get_filename_component(found "${found}" REALPATH)
    get_filename_component(pc_real "${pc_dir}" REALPATH)
    if(NOT found STREQUAL pc_real)
      message(FATAL_ERROR "pkg-config found tenex.pc in '${found}', not the install in ${pc_dir}")
    endif()
    if(NOT EXISTS "${libdir}/${TENEX_SONAME}" OR NOT EXISTS "${includedir}/tenex/tenex.hpp")
      message(FATAL_ERROR "tenex.pc's libdir '${libdir}' or includedir '${includedir}' is not the install's")
    endif()

    separate_arguments(flags UNIX_COMMAND "${flags}")
    separate_arguments(cxx_flags UNIX_COMMAND "${CXX_FLAGS}")
    separate_arguments(exe_linker_flags UNIX_COMMAND "${EXE_LINKER_FLAGS}")
    file(MAKE_DIRECTORY "${build_dir}")
    set(app "${build_dir}/app")
    run(${CXX_COMPILER_LAUNCHER} "${CXX_COMPILER}" ${cxx_flags} ${cxx_std} "-DTENEX_EXPECTED_VERSION=\"${version}\""
      "${SOURCE_DIR}/main.cpp" -o "${app}" ${exe_linker_flags} ${flags} "-Wl,-rpath,${libdir}")
    run("${app}")
    return()
  endif()

  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  run("${CMAKE_COMMAND}" ${configure_args})
  # The package must come from the prefix, not from a build tree or the system.
  file(STRINGS "${build_dir}/CMakeCache.txt" found REGEX "^tenex_DIR:")
  string(FIND "${found}" "${prefix}/" at)
  if(NOT at GREATER_EQUAL 0)
    message(FATAL_ERROR "find_package(tenex) found '${found}', not the install in ${prefix}")
  endif()
elseif(MODE STREQUAL "add_subdirectory")
  # The project builds tenex from source as part of itself: what is checked is that it
  # configures, builds and links that way, not how fast the result runs, so the core is built
  # without the plugins and, outside the sanitizer builds (whose flags set -O1), unoptimized:
  # a third of the time of a RelWithDebInfo build on two cores; without debug information,
  # which costs about a quarter of the compile time and is not looked at here.
  list(APPEND configure_args -DTENEX_CUDA=OFF -DTENEX_DIST=OFF)
  if(NOT CXX_FLAGS MATCHES "-fsanitize")
    list(APPEND configure_args -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)
  endif()
  run("${CMAKE_COMMAND}" ${configure_args})
else()
  message(FATAL_ERROR "run_consumer.cmake: MODE must be find_package, pkg_config or add_subdirectory, not '${MODE}'")
endif()

set(build_args --build "${build_dir}" ${config_args})
if(JOBS)
  list(APPEND build_args --parallel "${JOBS}")
endif()
run("${CMAKE_COMMAND}" ${build_args})

set(app "")
foreach(candidate IN ITEMS "${build_dir}/app" "${build_dir}/${CONFIG}/app" "${build_dir}/app.exe"
                           "${build_dir}/${CONFIG}/app.exe")
  if(EXISTS "${candidate}" AND NOT app)
    set(app "${candidate}")
  endif()
endforeach()
if(NOT app)
  message(FATAL_ERROR "the consumer's app was not built in ${build_dir}")
endif()
run("${app}")
