// Complex sets on the distributed backend: it has no complex kernels, so a complex set that
// asks for it runs on the CPU backend (of each rank) and gets the CPU's result, bit for bit.
#include <doctest/doctest.h>
#include <mpi.h>

#include <complex>
#include <cstddef>
#include <vector>

#include "tenex/tenex.hpp"

namespace {

using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;
using tenex::dist::Context;

template <class T>
std::vector<Tensor<T>> complex_statements(const Tensor<T>& a_in, const Tensor<T>& b_in) {
  using C = std::complex<double>;
  Tensor<T> a = a_in, b = b_in;
  std::vector<Tensor<T>> r(4);
  r[0]("i,j") = tenex::conj(a("i,k")) * b("k,j");
  r[1]("j,i") = a("i,k") * tenex::conj(b("k,j")) + C(0, 1) * a("i,k") * b("k,j");
  r[2]("i") = tenex::exp(a("i,k")) * tenex::conj(a("i,k"));
  r[3]("k,i") = a("i,k") / (2.0 + tenex::conj(a("i,k")));
  for (auto& t : r) t.wait();
  return r;
}

}  // namespace

TEST_CASE_TEMPLATE("dist: a complex set asking for the distributed backend gets the CPU's result", T,
                   std::complex<float>, std::complex<double>) {
  Tensor<T> a({6, 5}), b({5, 7});
  tenex::fill_random(a, 41);
  tenex::fill_random(b, 42);
  tenex::set_default_backend(BackendKind::cpu);
  const std::vector<Tensor<T>> on_cpu = complex_statements(a, b);
  std::vector<Tensor<T>> asked_distributed;
  {
    Context ctx(MPI_COMM_WORLD, {0, 0, 2});
    tenex::set_default_backend(BackendKind::distributed);
    asked_distributed = complex_statements(a, b);
    tenex::set_default_backend(BackendKind::cpu);
  }
  REQUIRE(asked_distributed.size() == on_cpu.size());
  for (std::size_t n = 0; n < on_cpu.size(); ++n) {
    CAPTURE(n);
    CHECK(asked_distributed[n].to_vector() == on_cpu[n].to_vector());
  }
  // And the CPU's result is right: r[0] = a^H b by loops.
  for (std::size_t i = 0; i < 6; ++i) {
    for (std::size_t j = 0; j < 7; ++j) {
      std::complex<double> sum = 0;
      for (std::size_t k = 0; k < 5; ++k) {
        sum += std::conj(std::complex<double>(a.at(i, k))) * std::complex<double>(b.at(k, j));
      }
      CHECK(std::abs(std::complex<double>(on_cpu[0].at(i, j)) - sum) <= 1e-5 * (1 + std::abs(sum)));
    }
  }
}
