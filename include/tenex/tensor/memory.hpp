// tenex/tensor/memory.hpp — the host memory tensors and the CPU backend share.
//
//   tenex::release_cached_memory();        // give cached blocks back to the system
//   std::size_t kept = tenex::cached_memory_bytes();
#pragma once

#include <cstddef>

#include "tenex/export.hpp"

namespace tenex {

/// Large buffers freed by evaluated sets (and the CPU kernels' scratch) are kept (up to
/// 2 GiB) for reuse by later allocations of about the same size; this returns them to the
/// system.
TENEX_API void release_cached_memory();
/// Bytes currently kept for reuse.
TENEX_API std::size_t cached_memory_bytes();

}  // namespace tenex
