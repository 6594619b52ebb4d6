// Application benchmark (a): the MP2 stage of the demo (examples/mp2_energy.cpp, run by
// ./scripts/demo), the same four statements at the same default sizes, repeated.
//
//   app_mp2 [--nocc 20] [--nvirt 120] [--naux 400] [--iterations 5]
//
//   D(i,a,j,b) = e_i - e_a + e_j - e_b
//   V(i,a,j,b) = sum_Q B(Q,i,a) B(Q,j,b)
//   T(i,a,j,b) = V(i,a,j,b) / D(i,a,j,b)
//   E          = sum T(i,a,j,b) (2 V(i,a,j,b) - V(i,b,j,a))
//
// Each iteration runs them as the demo does (D one set, V, T and E one linked set) into new
// result tensors and reads E. The factors B and the orbital energies are the deterministic
// patterns of app_common.hpp; bench/apps/mp2.py is the numpy twin, and the checksum is E.
#include <cmath>
#include <cstddef>
#include <cstdio>

#include <tenex/tenex.hpp>

#include "app_common.hpp"

int main(int argc, char** argv) {
  apps::Options options("app_mp2", {{"nocc", 20}, {"nvirt", 120}, {"naux", 400}, {"iterations", 5}});
  if (!options.parse(argc, argv)) return 2;
  const std::size_t o = options["nocc"], v = options["nvirt"], q = options["naux"];
  try {
    using tenex::Tensor;
    // Occupied energies in [-1.25, -0.75], virtual ones in [0.5, 1]: the denominators stay
    // below -2.5.
    Tensor<double> B = apps::pattern({q, o, v}, 1.0, 0.3 / std::sqrt(double(q)));
    Tensor<double> eo = apps::pattern({o}, 2.0, 0.25), ev = apps::pattern({v}, 3.0, 0.25);
    for (std::size_t i = 0; i < o; ++i) eo.at(i) -= 1.0;
    for (std::size_t a = 0; a < v; ++a) ev.at(a) += 0.75;

    const double ov = double(o) * double(v);
    // V: 2 Q (ov)^2; D: 3 (ov)^2; T: (ov)^2; 2V - V': 2 (ov)^2; the product and sum of E: 2 (ov)^2.
    const double flops = 2.0 * double(q) * ov * ov + 8.0 * ov * ov;
    double energy = 0.0;
    auto iteration = [&] {
      Tensor<double> V, D, T, E;
      D("i,a,j,b") = eo("i") - ev("a") + eo("j") - ev("b");
      {
        auto integrals = B("Q,i,a") * B("Q,j,b");
        V("i,a,j,b") = integrals;
        T("i,a,j,b") = V("i,a,j,b") / D("i,a,j,b");
        E("") = T("i,a,j,b") * (2.0 * V("i,a,j,b") - V("i,b,j,a"));
      }
      energy = E.at();
    };
    apps::run_and_report("mp2", options, flops, iteration, [&] { return energy; });
    return 0;
  } catch (const tenex::Error& e) {
    std::fprintf(stderr, "app_mp2: %s\n", e.what());
    return 1;
  }
}
