# The distributed backend (src/tenex/backend/dist/, include/tenex/dist/): ScaLAPACK over MPI.
#
#   -DTENEX_DIST=AUTO   on when MPI and ScaLAPACK (Debian: libscalapack-openmpi-dev) are found
#   -DTENEX_DIST=ON     the same, and an error when either is missing
#   -DTENEX_DIST=OFF    not built; TENEX_HAS_DIST is 0
#
# Sets TENEX_HAS_DIST (0 or 1) for config.hpp; the plugin library is made in cmake/TenexPlugins.cmake.
set(TENEX_DIST AUTO CACHE STRING "Distributed backend on ScaLAPACK and MPI: AUTO (when both are found), ON or OFF")
set_property(CACHE TENEX_DIST PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${TENEX_DIST}" _tenex_dist)
if(_tenex_dist MATCHES "^(1|YES|TRUE|Y)$")
  set(_tenex_dist ON)
elseif(_tenex_dist MATCHES "^(0|NO|FALSE|N)$")
  set(_tenex_dist OFF)
endif()
if(NOT _tenex_dist MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "tenex: TENEX_DIST=${TENEX_DIST} is not one of AUTO, ON, OFF")
endif()

set(TENEX_HAS_DIST 0)
if(NOT _tenex_dist STREQUAL "OFF")
  # The C API through the C++ compiler (the project enables no C); no MPI-2 C++ bindings.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  find_library(TENEX_SCALAPACK_LIBRARY NAMES scalapack-openmpi scalapack)
  if(MPI_CXX_FOUND AND TENEX_SCALAPACK_LIBRARY)
    set(TENEX_HAS_DIST 1)
    # FindMPI's launcher (/usr/bin/mpiexec): OpenMPI takes its install prefix from the path it
    # is started by, and /bin/mpirun (merged /usr) gives the prefix "/", which it refuses.
    set(TENEX_MPIEXEC "${MPIEXEC_EXECUTABLE}")
    if(TENEX_MPIEXEC MATCHES "^/bin/(.*)$" AND EXISTS "/usr/bin/${CMAKE_MATCH_1}")
      set(TENEX_MPIEXEC "/usr/bin/${CMAKE_MATCH_1}")
    endif()
    message(STATUS "tenex: distributed backend on (ScaLAPACK ${TENEX_SCALAPACK_LIBRARY}, MPI ${MPI_CXX_VERSION})")
  elseif(_tenex_dist STREQUAL "ON")
    message(FATAL_ERROR "tenex: TENEX_DIST=ON but MPI (found: ${MPI_CXX_FOUND}) or ScaLAPACK "
      "(${TENEX_SCALAPACK_LIBRARY}) is missing; install libscalapack-openmpi-dev openmpi-bin "
      "libopenmpi-dev (./scripts/install-deps) or configure with -DTENEX_DIST=OFF")
  else()
    message(STATUS "tenex: distributed backend off (MPI or ScaLAPACK not found; TENEX_DIST=AUTO)")
  endif()
endif()
