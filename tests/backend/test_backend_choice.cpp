// Choosing the backend: what config.hpp says was built agrees with what the library does,
// and TENEX_BACKEND names a backend or fails the first set with a message saying which
// values it takes.
#include <doctest/doctest.h>

#include <cstdlib>

#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"

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
                       doctest::Contains("tenex: TENEX_BACKEND=gpu names no backend; use TENEX_BACKEND=cpu, "
                                         "TENEX_BACKEND=cuda or TENEX_BACKEND=auto (or leave it unset)"),
                       tenex::BackendError);
  // ... and says where it looked for a plugin of that name.
  ::setenv("TENEX_BACKEND", "gpu", 1);
  Tensor<double> g;
  g("i") = 2.0 * a("i");
  ::unsetenv("TENEX_BACKEND");
  CHECK_THROWS_WITH_AS(g.wait(), doctest::Contains("libtenex_backend_gpu.so"), tenex::BackendError);
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

// The pipeline reads TENEX_BACKEND and TENEX_MEMORY_LIMIT once per set, when the set runs (not
// once per expression made): a change between two sets of the same shape, the second of which
// finds the first's plan in the plan cache, is honoured, and so is one made after the
// statement was written but before its set runs.
TEST_CASE("backend choice: TENEX_BACKEND and TENEX_MEMORY_LIMIT changed between sets of one shape are honoured") {
  Tensor<double> a(Shape{2}, {1, 2});
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    Tensor<double> before;
    before("i") = 2.0 * a("i");
    CHECK(before.at(1) == 4.0);
    Tensor<double> bad;
    {
      const EnvironmentScope scope("TENEX_BACKEND", "gpu");
      bad("i") = 2.0 * a("i");
    }
    CHECK_THROWS_WITH_AS(bad.wait(), doctest::Contains("TENEX_BACKEND=gpu names no backend"), tenex::BackendError);
    Tensor<double> late;
    {
      auto ai = a("i");  // the set stays open until ai goes: the variable is read then
      late("i") = 3.0 * ai;
      ::setenv("TENEX_BACKEND", "bogus", 1);
    }
    ::unsetenv("TENEX_BACKEND");
    CHECK_THROWS_WITH_AS(late.wait(), doctest::Contains("TENEX_BACKEND=bogus names no backend"), tenex::BackendError);
    Tensor<double> after;
    after("i") = 2.0 * a("i");
    CHECK(after.at(1) == 4.0);
  }
  // A product whose result takes 6400 bytes: within 6400, not within 6399.
  Tensor<double> b(Shape{20, 30}), d(Shape{30, 40});
  tenex::fill_random(b, 1);
  tenex::fill_random(d, 2);
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    Tensor<double> free, over, fits;
    free("i,j") = b("i,k") * d("k,j");
    CHECK_NOTHROW(free.wait());
    {
      const EnvironmentScope scope("TENEX_MEMORY_LIMIT", "6399");
      over("i,j") = b("i,k") * d("k,j");
      CHECK_THROWS_WITH_AS(over.wait(), doctest::Contains("memory limit"), tenex::BackendError);
      const EnvironmentScope enough("TENEX_MEMORY_LIMIT", "6400");
      fits("i,j") = b("i,k") * d("k,j");
      CHECK(tenex::allclose(fits, free));
    }
  }
}
