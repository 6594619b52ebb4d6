// tenex/backend/backend.hpp — choosing the backend (tenex/backend_kind.hpp) and reading what
// it did.
//
//   tenex::set_default_backend(tenex::BackendKind::cpu);   // or TENEX_BACKEND=cpu
//   c("i,j") = a("i,k") * b("k,j");
//   tenex::RunStats s = tenex::last_run_stats();            // s.flops == 2*m*n*k
#pragma once

#include <cstddef>

#include "tenex/backend_kind.hpp"  // BackendKind, set_default_backend, default_backend
#include "tenex/export.hpp"
#include "tenex/tensor/memory.hpp"

namespace tenex {

/// True when a CUDA device exists at run time (always false without the CUDA backend).
TENEX_API bool cuda_available();

/// What the last set evaluated on this thread did.
struct RunStats {
  std::size_t graph_nodes = 0;  // after optimization
  std::size_t kernels = 0;      // kernel launches and library calls
  double flops = 0;             // floating-point operations counted
  std::size_t peak_bytes = 0;   // peak of intermediates held
  double seconds = 0;           // wall time of the evaluation (graph building included)
  bool plan_reused = false;     // the optimized graph came from the plan cache (a set of the
                                // same structure and extents ran before; TENEX_PLAN_CACHE=0: never)
  // A device backend (CUDA):
  std::size_t device_peak_bytes = 0;     // peak of the device memory the process's sets held
  std::size_t host_to_device_bytes = 0;  // copied to the device by this set (its inputs)
  std::size_t device_to_host_bytes = 0;  // copied back during this set (nodes run on the CPU);
                                         // results are copied when the host first reads them
  std::size_t host_nodes = 0;            // nodes the device backend declined, run on the CPU
};
TENEX_API RunStats last_run_stats();

/// Caps the bytes of intermediates a set may hold at once (what RunStats::peak_bytes
/// measures), for sets run from now on (all threads); 0: no cap of the program's, and then
/// TENEX_MEMORY_LIMIT decides (bytes, or with a K, M or G suffix: 512M; unset or 0: none).
/// The ordering of products prefers orders whose intermediates fit; a set that would
/// still exceed the cap fails before anything runs, with a tenex::BackendError in its
/// results naming the node, the bytes it needs, the bytes held and the limit.
TENEX_API void set_memory_limit(std::size_t bytes);

}  // namespace tenex
