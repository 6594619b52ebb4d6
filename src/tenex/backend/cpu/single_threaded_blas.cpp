#include "tenex/backend/cpu/single_threaded_blas.hpp"

#include <mutex>

// OpenBLAS's thread controls, declared weak so that the library still links (and simply
// does not use them) against another BLAS.
extern "C" {
__attribute__((weak)) int openblas_get_parallel(void);
__attribute__((weak)) int openblas_get_num_threads(void);
__attribute__((weak)) void openblas_set_num_threads(int);
}

namespace tenex::detail::cpu {
namespace {

// openblas_get_parallel: 0 sequential, 1 pthreads, 2 OpenMP (which already runs one
// thread per call inside a parallel region, and whose setter would change ours).
bool controllable() {
  static const bool yes = openblas_get_parallel != nullptr && openblas_get_num_threads != nullptr &&
                          openblas_set_num_threads != nullptr && openblas_get_parallel() == 1;
  return yes;
}
std::mutex& mutex() {
  static std::mutex m;
  return m;
}
int& holders() {
  static int n = 0;
  return n;
}
int& saved() {
  static int n = 1;
  return n;
}

}  // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  if (!controllable()) return;
  std::lock_guard lock(mutex());
  if (holders()++ == 0) {
    saved() = openblas_get_num_threads();
    if (saved() > 1) openblas_set_num_threads(1);
  }
  active_ = true;
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (!active_) return;
  std::lock_guard lock(mutex());
  if (--holders() == 0 && saved() > 1) openblas_set_num_threads(saved());
}

}  // namespace tenex::detail::cpu
