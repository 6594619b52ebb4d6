// Choosing the backend: what config.hpp says was built agrees with what the library does,
// and TENEX_BACKEND names a backend or fails the first set with a message saying which
// values it takes.
#include <doctest/doctest.h>

#include <cstdlib>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;

}  // namespace

// TENEX_HAS_CUDA said 1 when the library was configured with -DTENEX_ENABLE_CUDA=ON on a
// machine with the CUDA toolkit, although no CUDA code was compiled into it. config.hpp must
// describe what was built: 1 only with the CUDA backend (TENEX_CUDA=AUTO with the toolkit,
// or ON), and what the build says agrees with what the library does.
TEST_CASE("backend choice: config.hpp says TENEX_HAS_CUDA 1 only when the CUDA backend is built") {
  CHECK((TENEX_HAS_CUDA == 0 || TENEX_HAS_CUDA == 1));
  if (TENEX_HAS_CUDA == 0 || !tenex::cuda_available()) {
    CHECK_FALSE(tenex::cuda_available());
    CHECK_THROWS_AS(tenex::set_default_backend(tenex::BackendKind::cuda), tenex::BackendError);
  }
}

TEST_CASE("backend choice: an unknown TENEX_BACKEND is an error of the first set") {
  Tensor<double> a(Shape{2}, {1, 2}), c;
  ::setenv("TENEX_BACKEND", "gpu", 1);
  c("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK_THROWS_WITH_AS(c.wait(),
                       "tenex: TENEX_BACKEND=gpu names no backend; use TENEX_BACKEND=cpu, TENEX_BACKEND=cuda or "
                       "TENEX_BACKEND=auto (or leave it unset)",
                       tenex::BackendError);
  ::setenv("TENEX_BACKEND", "CUDA", 1);
  Tensor<double> d;
  d("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK_THROWS_WITH_AS(d.wait(), doctest::Contains("TENEX_BACKEND=CUDA names no backend"), tenex::BackendError);
  ::setenv("TENEX_BACKEND", "auto", 1);
  Tensor<double> e;
  e("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK(e.at(1) == 4.0);
}
