// The sparse backend's vector loops (sparse_contract.cpp, compact_layout.cpp), over Highway's
// portable vectors: compiled for each SIMD target and run on the one simd.hpp picks.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tenex::detail::cpu {

// c[y] += a * b[index[y]] for y < n: the row of b gathered a vector at a time.
void gather_axpy_simd(float* c, float a, const float* b, const std::int32_t* index, std::size_t n);
void gather_axpy_simd(double* c, double a, const double* b, const std::int32_t* index, std::size_t n);

// Copies `bytes` to `to` (`from` null: zeros) with stores past the caches where the target
// has them: a dense result written once is not read back soon, so no line is read for
// ownership nor kept in the caches. Ends with a fence, so the bytes are in memory order.
void stream_bytes(char* to, const char* from, std::size_t bytes);

// Whether stream_bytes stores past the caches on the target that runs (else it copies).
bool streams_past_caches();

}  // namespace tenex::detail::cpu
