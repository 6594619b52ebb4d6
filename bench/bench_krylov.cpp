// Benchmark: the Krylov solvers and grouped decompositions on a DMRG step's shapes
// (docs/krylov.md). One two-site effective Hamiltonian of bond D (MPO bond 5, spin 1/2):
//
//   matvec   y(a,s,t,b) = L(a,w,c) W(w,v,s,u) W(v,z,t,r) x(c,u,r,d) R(b,z,d), run alone N times
//   eigsh    its ground state from a random start: products, time per product (against alone)
//   svd      svd(theta("a,s,t,b"), "a,s") against the matrix svd of the same values as (D*2) x (2*D)
//
//   bench_krylov [--bond 128] [--repeat 20]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bond = 128, repeat = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--bond") bond = std::stoul(argv[i + 1]);
    else if (arg == "--repeat") repeat = std::stoul(argv[i + 1]);
  }
  Tensor<double> left(Shape({bond, 5, bond})), right(Shape({bond, 5, bond})), w(Shape({5, 5, 2, 2}));
  tenex::fill_random(left, 1);
  tenex::fill_random(w, 3);
  // A Hermitian operator: L and R symmetric in their outer modes, W in (s, u).
  Tensor<double> l2, r2, w2, x(Shape({bond, 2, 2, bond})), y;
  l2("a,w,c") = left("a,w,c") + left("c,w,a");
  r2("a,w,c") = l2("a,w,c");
  w2("w,v,s,u") = w("w,v,s,u") + w("w,v,u,s");
  tenex::fill_random(x, 4);
  std::size_t products = 0;
  auto h_eff = [&](const Tensor<double>& in, Tensor<double>& out) {
    ++products;
    out("a,s,t,b") = l2("a,w,c") * w2("w,v,s,u") * w2("v,z,t,r") * in("c,u,r,d") * r2("b,z,d");
  };

  std::vector<double> alone;
  for (std::size_t k = 0; k < repeat; ++k) {
    const auto start = Clock::now();
    h_eff(x, y);
    (void)y.data();
    alone.push_back(seconds_since(start));
  }
  products = 0;
  auto start = Clock::now();
  const auto [values, vectors] = tenex::eigsh(h_eff, x, {.k = 1, .tol = 1e-10});
  const double eigsh_seconds = seconds_since(start);
  std::printf("bond %zu: matvec alone %.3f ms (median of %zu)\n", bond, 1e3 * median(alone), repeat);
  std::printf("eigsh: %zu products in %.3f s: %.3f ms per product (%.2fx the matvec alone), E = %.10f\n", products,
              eigsh_seconds, 1e3 * eigsh_seconds / static_cast<double>(products),
              eigsh_seconds / static_cast<double>(products) / median(alone), values[0]);

  std::vector<double> grouped, matrix;
  Tensor<double> theta = vectors[0], flat(Shape({2 * bond, 2 * bond}), vectors[0].to_vector());
  for (std::size_t k = 0; k < std::max<std::size_t>(3, repeat / 4); ++k) {
    Tensor<double> u, s, vt;
    start = Clock::now();
    tenex::tie(u("a,s,k"), s("k"), vt("k,t,b")) = tenex::svd(theta("a,s,t,b"), "a,s");
    grouped.push_back(seconds_since(start));
    start = Clock::now();
    tenex::tie(u("i,k"), s("k"), vt("k,j")) = tenex::svd(flat("i,j"));
    matrix.push_back(seconds_since(start));
  }
  std::printf("svd of %zux2x2x%zu over (a,s): %.3f ms; the reshaped matrix's: %.3f ms (%.2fx)\n", bond, bond,
              1e3 * median(grouped), 1e3 * median(matrix), median(grouped) / median(matrix));
  return 0;
}
