# The backend plugins: shared libraries beside libtenex.so that the registry loads with
# dlopen (src/tenex/backend/plugins.cpp) when a set asks for their backend, or when automatic
# choice finds a CUDA driver with a device. The core library links neither CUDA nor MPI, so a
# program that never asks for them never maps them (docs/architecture.md, "Plugins").
#
#   libtenex_cuda.so  (TENEX_HAS_CUDA)  cuBLAS, cuSOLVER, NVRTC      target tenex::cuda
#   libtenex_dist.so  (TENEX_HAS_DIST)  ScaLAPACK over OpenMPI       target tenex::dist
#
# Each exports one C function, tenex_backend_plugin(version), that hands the registry its
# backend entry. libtenex_dist.so is also a library users link (tenex::dist::Context,
# DistributedTensor): find_package(tenex COMPONENTS dist).
set(TENEX_PLUGIN_TARGETS)

function(tenex_add_plugin target component)
  add_library(${target} SHARED ${ARGN})
  add_library(tenex::${component} ALIAS ${target})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${target} PUBLIC tenex)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wswitch-enum $<$<BOOL:${TENEX_WARNINGS_AS_ERRORS}>:-Werror>>)
  if(NOT (CMAKE_CXX_COMPILER_ID MATCHES "Clang" AND CMAKE_CXX_FLAGS MATCHES "-fsanitize"))
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  set_target_properties(${target} PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    EXPORT_NAME ${component})
  set(TENEX_PLUGIN_TARGETS ${TENEX_PLUGIN_TARGETS} ${target} PARENT_SCOPE)
endfunction()

if(TENEX_HAS_CUDA)
  tenex_add_plugin(tenex_cuda cuda
    src/tenex/backend/cuda/check.cpp
    src/tenex/backend/cuda/allocator.cpp
    src/tenex/backend/cuda/codegen.cpp
    src/tenex/backend/cuda/contraction_layout.cpp
    src/tenex/backend/cuda/device.cpp
    src/tenex/backend/cuda/cuda_backend.cpp
    src/tenex/backend/cuda/cuda_linalg.cpp)
  target_link_libraries(tenex_cuda PRIVATE CUDA::cudart CUDA::cublas CUDA::cusolver CUDA::nvrtc)
  # FindCUDAToolkit's cuSOLVER target drags in the driver stub (stubs/libcuda.so). The plugin
  # calls the runtime API only, so the driver must not become a dependency: a machine without
  # one must load it. Debian's GCC links --as-needed, except under -fsanitize=*.
  target_link_options(tenex_cuda PRIVATE "LINKER:--as-needed")
endif()

if(TENEX_HAS_DIST)
  tenex_add_plugin(tenex_dist dist
    src/tenex/backend/dist/dist_context.cpp
    src/tenex/backend/dist/dist_matrix.cpp
    src/tenex/backend/dist/dist_backend.cpp
    src/tenex/backend/dist/dist_contract.cpp
    src/tenex/backend/dist/dist_elementwise.cpp
    src/tenex/backend/dist/dist_linalg.cpp
    src/tenex/backend/dist/distributed_tensor.cpp)
  target_link_libraries(tenex_dist PRIVATE MPI::MPI_CXX ${TENEX_SCALAPACK_LIBRARY})
endif()
