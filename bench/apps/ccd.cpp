// Application benchmark (b): iterations of coupled-cluster doubles (CCD), the amplitude
// update of the doubles residual as a quantum chemist writes it.
//
//   app_ccd [--nocc 20] [--nvirt 100] [--iterations 10]
//
//   X(i,j,a,b) = sum_kc T(i,k,a,c) Vovvo(k,b,c,j)                          (ring)
//   R(i,j,a,b) = Voovv(i,j,a,b)
//              + 1/2 sum_cd Vvvvv(a,b,c,d) T(i,j,c,d)                       (particle-particle ladder)
//              + 1/2 sum_kl Woooo(k,l,i,j) T(k,l,a,b)                       (hole-hole ladder)
//              + X(i,j,a,b) - X(j,i,a,b) - X(i,j,b,a) + X(j,i,b,a)          (ring, P(ij) P(ab))
//              + q sum_klcd Voovv(k,l,c,d) T(i,j,c,d) T(k,l,a,b)            (quadratic, ladder)
//              + q sum_klcd T(i,k,a,c) Voovv(k,l,c,d) T(l,j,d,b)            (quadratic, ring)
//   T(i,j,a,b) = R(i,j,a,b) / D(i,j,a,b),  D = e_i + e_j - e_a - e_b
//   E          = sum T(i,j,a,b) (2 Voovv(i,j,a,b) - Voovv(i,j,b,a))
//
// The integrals are the deterministic patterns of app_common.hpp, scaled so that each term
// weighs one to twenty percent of Voovv at every size (each integral by one over the square
// root of the number of terms its contraction sums, q = 1 / (o v)): the iteration stays bounded, and settles
// within the ten iterations at the default and at the test sizes, though convergence is not
// the point. The checksum, E after the last iteration, is compared with bench/apps/ccd.py.
// The ring and quadratic terms stand for the family of such terms in a full CCD residual.
#include <cmath>
#include <cstddef>
#include <cstdio>

#include <tenex/tenex.hpp>

#include "app_common.hpp"

int main(int argc, char** argv) {
  apps::Options options("app_ccd", {{"nocc", 20}, {"nvirt", 100}, {"iterations", 10}});
  if (!options.parse(argc, argv)) return 2;
  const std::size_t o = options["nocc"], v = options["nvirt"];
  try {
    using tenex::Tensor;
    const double od = double(o), vd = double(v);
    Tensor<double> Voovv = apps::pattern({o, o, v, v}, 1.0, 0.5);
    Tensor<double> Vvvvv = apps::pattern({v, v, v, v}, 2.0, 1.0 / vd);
    Tensor<double> Woooo = apps::pattern({o, o, o, o}, 3.0, 1.0 / od);
    Tensor<double> Vovvo = apps::pattern({o, v, v, o}, 4.0, 0.5 / std::sqrt(od * vd));
    // Occupied energies in [-1.25, -0.75], virtual ones in [0.5, 1]: |D| >= 2.5.
    Tensor<double> eo = apps::pattern({o}, 5.0, 0.25), ev = apps::pattern({v}, 6.0, 0.25);
    for (std::size_t i = 0; i < o; ++i) eo.at(i) -= 1.0;
    for (std::size_t a = 0; a < v; ++a) ev.at(a) += 0.75;
    Tensor<double> D, T;
    D("i,j,a,b") = eo("i") + eo("j") - ev("a") - ev("b");
    T("i,j,a,b") = Voovv("i,j,a,b") / D("i,j,a,b");  // the MP2 amplitudes start the iteration
    const double quadratic = 1.0 / (od * vd);

    const double oo = od * od, vv = vd * vd;
    const double flops = 2.0 * oo * vv * vv         // particle-particle ladder
                         + 2.0 * oo * oo * vv       // hole-hole ladder
                         + 2.0 * oo * od * vv * vd  // ring X
                         + 4.0 * oo * oo * vv       // quadratic ladder: (Voovv T) then T
                         + 4.0 * oo * od * vv * vd  // quadratic ring: (T Voovv) then T
                         + 14.0 * oo * vv           // R's additions and scales, T's division
                         + 4.0 * oo * vv;           // E
    double energy = 0.0;
    auto iteration = [&] {
      Tensor<double> X, R, E;
      X("i,j,a,b") = T("i,k,a,c") * Vovvo("k,b,c,j");
      R("i,j,a,b") = Voovv("i,j,a,b") + 0.5 * Vvvvv("a,b,c,d") * T("i,j,c,d") + 0.5 * Woooo("k,l,i,j") * T("k,l,a,b") +
                     X("i,j,a,b") - X("j,i,a,b") - X("i,j,b,a") + X("j,i,b,a") +
                     quadratic * Voovv("k,l,c,d") * T("i,j,c,d") * T("k,l,a,b") +
                     quadratic * T("i,k,a,c") * Voovv("k,l,c,d") * T("l,j,d,b");
      T("i,j,a,b") = R("i,j,a,b") / D("i,j,a,b");
      E("") = T("i,j,a,b") * (2.0 * Voovv("i,j,a,b") - Voovv("i,j,b,a"));
      energy = E.at();
    };
    apps::run_and_report("ccd", options, flops, iteration, [&] { return energy; });
    return 0;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "app_ccd: %s\n", e.what());
    return 1;
  }
}
