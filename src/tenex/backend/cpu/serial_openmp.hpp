// The four OpenMP queries the CPU kernels make, for a build without OpenMP
// (TENEX_OPENMP=OFF, as the ThreadSanitizer and fuzzing presets build: libgomp is not
// instrumented). One thread, never inside a parallel region; the `#pragma omp` lines are
// then ignored and every loop runs serially.
#pragma once

inline int omp_get_max_threads() { return 1; }
inline int omp_get_num_threads() { return 1; }
inline int omp_get_thread_num() { return 0; }
inline int omp_in_parallel() { return 0; }
