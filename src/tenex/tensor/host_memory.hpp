// Host memory: the one allocator behind tensor elements and the CPU kernels' scratch.
#pragma once

#include <cstddef>

namespace tenex::detail {

/// 64-byte aligned, uninitialised blocks; thread-safe. Large blocks are rounded up to a size
/// class (at most an eighth more) and, once freed, kept for the next allocation of that
/// class, the most recently freed first, so that a result overwritten in a loop or a
/// kernel's scratch reuses its pages instead of faulting in fresh ones. When too much waits,
/// the blocks freed longest ago go first; release_cached_memory() returns them all to the
/// system. Blocks of at most 1 KiB are kept a few per size on the thread that frees them
/// (freed when the thread ends). free_block takes the `bytes` the block was allocated with.
void* allocate_block(std::size_t bytes);
void free_block(void* block, std::size_t bytes) noexcept;

}  // namespace tenex::detail
