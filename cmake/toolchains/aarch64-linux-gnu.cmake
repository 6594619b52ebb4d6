# Cross-compiling tenex for 64-bit ARM Linux on a Debian x86-64 machine (scripts/cross-aarch64):
# Debian's cross compiler (g++-aarch64-linux-gnu), the arm64 libraries of multiarch
# (libopenblas-dev:arm64, liblapacke-dev:arm64, libhwy-dev:arm64, libgomp1:arm64 in
# /usr/lib/aarch64-linux-gnu)
# and qemu-user to run the test programs (ctest runs them through CMAKE_CROSSCOMPILING_EMULATOR).
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The cross compiler's own sysroot (libc, libstdc++) and the multiarch tree: the arm64
# libraries live in /usr/lib/aarch64-linux-gnu, the architecture-independent headers (Boost,
# doctest, Highway, cblas/lapacke) in /usr/include.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (Highway's libhwy.pc) from the arm64 tree only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)

# Test programs run under qemu-user (ctest, and doctest's test discovery at build time, run them
# through CMAKE_CROSSCOMPILING_EMULATOR) with the multiarch loader and libraries (libc6:arm64,
# libgomp1:arm64, /lib/ld-linux-aarch64.so.1). Not `-L /usr/aarch64-linux-gnu`: that sysroot's
# loader (libc6-arm64-cross) paired with the multiarch libc (a newer Debian revision) hangs in
# the first pthread_create, so every OpenMP and OpenBLAS thread pool would hang.
find_program(TENEX_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(TENEX_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TENEX_QEMU_AARCH64})
endif()
