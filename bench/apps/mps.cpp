// Application benchmark (c): a tensor-network step on a matrix product state (real-valued):
// the update of a left environment and a two-site update with a gate, as in TEBD or a
// two-site DMRG step.
//
//   app_mps [--bond 256] [--physical 4] [--iterations 10]
//
//   M(a',b')     = sum_abs L(a,b) A(a,s,a') A(b,s,b')          (environment update)
//   L(a,b)       = M(a,b) / sqrt(sum M(a,b) M(a,b))            (kept normalized)
//   theta(a,s,t,c) = sum_b A(a,s,b) B(b,t,c)                   (two sites)
//   phi(a,u,v,c) = sum_st G(u,v,s,t) theta(a,s,t,c)            (the two-site gate)
//   psi(x,u,v,y) = sum_ac L(x,a) phi(a,u,v,c) R(c,y)           (the environments)
//   n            = sum psi(x,u,v,y) psi(x,u,v,y)
//
// Each iteration carries L over from the last one. The checksum is n after the last
// iteration; bench/apps/mps.py is the numpy twin.
#include <cmath>
#include <cstddef>
#include <cstdio>

#include <tenex/tenex.hpp>

#include "app_common.hpp"

int main(int argc, char** argv) {
  apps::Options options("app_mps", {{"bond", 256}, {"physical", 4}, {"iterations", 10}});
  if (!options.parse(argc, argv)) return 2;
  const std::size_t chi = options["bond"], d = options["physical"];
  try {
    using tenex::Tensor;
    const double c = double(chi), p = double(d);
    Tensor<double> A = apps::pattern({chi, d, chi}, 1.0, 1.0 / std::sqrt(c * p));
    Tensor<double> B = apps::pattern({chi, d, chi}, 2.0, 1.0 / std::sqrt(c * p));
    Tensor<double> G = apps::pattern({d, d, d, d}, 3.0, 1.0 / p);
    Tensor<double> R = apps::pattern({chi, chi}, 4.0, 1.0 / std::sqrt(c));
    Tensor<double> L = apps::pattern({chi, chi}, 5.0, 1.0 / c);

    const double flops = 4.0 * c * c * c * p            // M: (L A) then A
                         + 3.0 * c * c                  // the norm and the scaling of L
                         + 2.0 * c * c * c * p * p      // theta
                         + 2.0 * c * c * p * p * p * p  // phi
                         + 4.0 * c * c * c * p * p      // psi: (L phi) then R
                         + 2.0 * c * c * p * p;         // n
    double norm = 0.0;
    auto iteration = [&] {
      Tensor<double> M, M2, theta, phi, psi, n;
      M("x,y") = L("a,b") * A("a,s,x") * A("b,s,y");
      M2("") = M("a,b") * M("a,b");
      L("a,b") = (1.0 / std::sqrt(M2.at())) * M("a,b");
      theta("a,s,t,c") = A("a,s,b") * B("b,t,c");
      phi("a,u,v,c") = G("u,v,s,t") * theta("a,s,t,c");
      psi("x,u,v,y") = L("x,a") * phi("a,u,v,c") * R("c,y");
      n("") = psi("x,u,v,y") * psi("x,u,v,y");
      norm = n.at();
    };
    apps::run_and_report("mps", options, flops, iteration, [&] { return norm; });
    return 0;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "app_mps: %s\n", e.what());
    return 1;
  }
}
