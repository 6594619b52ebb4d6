// The BLAS's own threads while OpenMP threads call GEMMs.
//
// The GEMMs of a contraction run as tasks shared among OpenMP threads, each calling a
// single-threaded GEMM. OpenBLAS built on pthreads has no per-call thread count, so while
// such tasks run its global count is set to 1 (and restored after); with an OpenMP
// OpenBLAS (or another BLAS) a call made inside a parallel region is single-threaded anyway.
#pragma once

namespace tenex::detail::cpu {

// While alive, a pthreads OpenBLAS runs every call on the calling thread. Nested and
// concurrent holders share one saved thread count.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  bool active_ = false;
};

}  // namespace tenex::detail::cpu
