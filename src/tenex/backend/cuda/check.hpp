// The one checking wrapper of the CUDA backend: every CUDA runtime, cuBLAS, cuSOLVER and
// NVRTC status goes through check(), which names the call (its source text) when it fails.
//
//   TENEX_CUDA_CALL(runtime, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
//
// Statuses are passed as int so that this header needs no CUDA header (only the .cpp files
// of this folder include those).
#pragma once

#include <string>
#include <string_view>

namespace tenex::detail::cuda {

enum class Library { runtime, cublas, cusolver, nvrtc };

/// "cudaErrorMemoryAllocation: out of memory" and the like: the status's name and meaning.
std::string status_text(Library library, int status);
/// Whether `status` says the device ran out of memory.
bool out_of_memory(Library library, int status);
/// The message of a failed call: "tenex: CUDA: cudaMalloc(&p, 64) failed with
/// cudaErrorMemoryAllocation: out of memory".
std::string failure_message(Library library, int status, std::string_view call);
/// Throws tenex::BackendError (failure_message) unless `status` is success.
void check(Library library, int status, std::string_view call);

}  // namespace tenex::detail::cuda

#define TENEX_CUDA_CALL(library, call) \
  ::tenex::detail::cuda::check(::tenex::detail::cuda::Library::library, static_cast<int>(call), #call)
