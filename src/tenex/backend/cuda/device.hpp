// The process-wide CUDA state: whether a device exists, its streams and library handles,
// the caching allocator, and the NVRTC programs compiled so far. Everything here is made
// once per process on first use and never destroyed (sets may run at exit, after static
// destructors), so handles and programs are reused by every set and every thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/backend/cuda/allocator.hpp"

namespace tenex::detail::cuda {

/// Whether a usable device exists (asked once; never throws).
bool device_available() noexcept;
/// Why not, when device_available() is false ("no CUDA device: cudaGetDeviceCount ...").
std::string unavailable_reason();

/// PTX (`cubin` false, `arch` a virtual architecture like "compute_90") or a cubin (`arch` a
/// real one like "sm_90") of `source`, compiled by NVRTC. Needs no device. Throws
/// BackendError with NVRTC's log when the source does not compile.
std::string compile(std::string_view source, std::string_view arch, bool cubin);
/// The NVRTC options of every compilation ("--std=c++17", ...), for the tests.
std::vector<std::string> nvrtc_options(std::string_view arch);

/// A kernel of a compiled program, as cudaLaunchKernel takes it.
using KernelHandle = const void*;
/// The entry point `entry` of `source`, compiled for the device on first use and cached
/// (per source text) for the process.
KernelHandle kernel(const std::string& source, const char* entry);

/// The process's caching allocator of device memory.
CachingAllocator& allocator();

/// Streams and the cuBLAS / cuSOLVER handles bound to them, lent to one backend at a time
/// (a backend belongs to one thread) and given back to the process when it is destroyed.
struct Lanes {
  std::vector<void*> streams;  // cudaStream_t
  std::vector<void*> blas;     // cublasHandle_t, one per stream
  std::vector<void*> solver;   // cusolverDnHandle_t, one per stream
};
/// Lanes for a backend: reused ones when a backend gave them back, else made now.
Lanes* borrow_lanes();
void return_lanes(Lanes* lanes) noexcept;
/// Number of streams of one backend: TENEX_CUDA_STREAMS (1 to 16), default 4.
std::size_t streams_per_backend();

/// Bytes copied between host and device since the process started (all threads).
struct Traffic {
  std::size_t to_device = 0;
  std::size_t to_host = 0;
};
Traffic traffic();
void count_to_device(std::size_t bytes);
void count_to_host(std::size_t bytes);

}  // namespace tenex::detail::cuda
