// Which OpenBLAS libtenex runs on. Where the build found Debian's OpenMP variant of OpenBLAS
// (TENEX_BLAS_OPENMP, CMakeLists.txt), libtenex carries its directory in its run path, so that
// libopenblas.so.0 resolves to it whatever the system's alternative says: BLAS then runs on
// the same OpenMP threads as tenex's own kernels instead of a second, pthread pool that
// competes with them for the cores (docs/performance.md).
#include <dlfcn.h>

#include <string>

#include <doctest/doctest.h>
#include <tenex/tenex.hpp>

#if TENEX_TEST_OPENBLAS_OPENMP

TEST_CASE("blas runtime: libtenex runs OpenBLAS's OpenMP variant where the build found it") {
  tenex::Tensor<double> a({64, 64}), b({64, 64}), c;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  c("i,j") = a("i,k") * b("k,j");
  CHECK(c.shape() == tenex::Shape{64, 64});

  // openblas_get_parallel: 0 sequential, 1 pthreads, 2 OpenMP.
  void* symbol = dlsym(RTLD_DEFAULT, "openblas_get_parallel");
  REQUIRE(symbol != nullptr);
  const auto get_parallel = reinterpret_cast<int (*)()>(symbol);
  CHECK(get_parallel() == 2);
  Dl_info info{};
  REQUIRE(dladdr(symbol, &info) != 0);
  REQUIRE(info.dli_fname != nullptr);
  INFO("libopenblas loaded from " << info.dli_fname);
  CHECK(std::string(info.dli_fname).find(TENEX_TEST_OPENBLAS_OPENMP_DIR) == 0);
}

#endif
