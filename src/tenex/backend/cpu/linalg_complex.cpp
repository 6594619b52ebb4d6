// Linear algebra on complex matrices (LAPACKE's c and z routines): not yet written; every
// entry refuses with a tenex::Error naming the operation.
#include <complex>
#include <string>
#include <string_view>

#include "tenex/backend/cpu/linalg.hpp"
#include "tenex/error.hpp"

namespace tenex::detail::cpu {

namespace {

[[noreturn]] void refuse(const char* operation) {
  throw Error(std::string("tenex: ") + operation + " of a complex matrix is not supported yet");
}

}  // namespace

#define TENEX_DEFINE_LINALG_COMPLEX(T)                                                                    \
  template <>                                                                                             \
  KernelCount cholesky<T>(const T*, std::size_t, T*) {                                                    \
    refuse("cholesky");                                                                                   \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount eigen_symmetric<T>(const T*, std::size_t, T*, T*) {                                         \
    refuse("eigen_solve");                                                                                \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount eigen_generalized<T>(const T*, const T*, std::size_t, T*, T*) {                             \
    refuse("eigen_solve");                                                                                \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount qr<T>(const T*, std::size_t, std::size_t, T*, T*) {                                         \
    refuse("qr");                                                                                         \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount svd<T>(const T*, std::size_t, std::size_t, T*, T*, T*) {                                    \
    refuse("svd");                                                                                        \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount matrix_power<T>(const T*, std::size_t, unsigned, T*) {                                      \
    refuse("pow");                                                                                        \
  }                                                                                                       \
  template <>                                                                                             \
  double symmetry_tolerance<T>(std::size_t) {                                                             \
    refuse("a symmetry check");                                                                           \
  }                                                                                                       \
  template <>                                                                                             \
  void require_symmetric<T>(const T*, std::size_t, double, const char*, std::string_view) {               \
    refuse("a symmetry check");                                                                           \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount inverse<T>(const T*, std::size_t, T*, std::string_view) {                                   \
    refuse("inverse");                                                                                    \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount solve<T>(const T*, std::size_t, const T*, std::size_t, std::size_t, T*, std::string_view) { \
    refuse("solve");                                                                                      \
  }                                                                                                       \
  template <>                                                                                             \
  KernelCount spd_power<T>(const T*, std::size_t, double, T*, std::string_view) {                         \
    refuse("pow");                                                                                        \
  }
TENEX_FOR_EACH_COMPLEX_SCALAR(TENEX_DEFINE_LINALG_COMPLEX)
#undef TENEX_DEFINE_LINALG_COMPLEX

}  // namespace tenex::detail::cpu
