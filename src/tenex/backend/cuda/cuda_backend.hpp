// The CUDA backend: cuBLAS for contractions, cuSOLVER for decompositions, own kernels
// (NVRTC, codegen.hpp) for everything else, device memory from the process's caching
// allocator (allocator.hpp). What supports() declines (tenex::map's callables, the matrix
// functions inverse, solve and spd_pow) the executor runs on the CPU backend, its data moved.
// docs/cuda.md describes the design.
#pragma once

namespace tenex::detail {

struct BackendEntry;
/// The registry entry of the CUDA backend: available() is true where a device exists.
BackendEntry cuda_backend_entry();

}  // namespace tenex::detail
