// Checks the naive backend plugin against the CPU backend, as a user of the plugin would:
// choose it by name, run statements of every kind it runs and some it declines, and compare.
// Exits 0 when every check holds, 1 naming the first that does not. TENEX_PLUGIN_PATH, when
// unset, is this build's plugin folder.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "naive_check: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

tenex::Tensor<double> filled(tenex::Shape shape, double seed) {
  tenex::Tensor<double> t(shape);
  std::vector<double> v(t.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(seed + 0.37 * static_cast<double>(i));
  t = tenex::Tensor<double>(shape, v);
  return t;
}

/// The statements, on whichever backend is the default now.
std::vector<std::vector<double>> run(const tenex::Tensor<double>& a, const tenex::Tensor<double>& b) {
  tenex::Tensor<double> c, d, e, f, g, eye(tenex::Shape{5, 5});
  for (std::size_t i = 0; i < 5; ++i) eye.at(i, i) = 1.0;
  c("i,j") = a("i,k,l") * b("l,k,j");                                  // contraction
  d("j,i") = 2.0 * c("i,j") - c("j,i") / (1.5 + c("i,j") * c("i,j"));  // element-wise, permuted
  e("i") = a("i,k,k");                                                 // diagonal and sum
  f("i,j") = tenex::cholesky(c("i,k") * c("j,k") + 5.0 * eye("i,j"));  // declined: runs on the CPU
  g("i,j") = c("i,j") + 0.5 * c("j,i");
  return {c.to_vector(), d.to_vector(), e.to_vector(), f.to_vector(), g.to_vector()};
}

}  // namespace

int main() {
  ::setenv("TENEX_PLUGIN_PATH", NAIVE_PLUGIN_FOLDER, 0);
  try {
    const auto a = filled(tenex::Shape{5, 4, 4}, 0.1), b = filled(tenex::Shape{4, 4, 5}, 0.7);
    tenex::set_default_backend(tenex::BackendKind::cpu);
    const auto want = run(a, b);
    tenex::set_default_backend("naive");
    check(tenex::default_backend_name() == "naive", "the default backend is named naive");
    const auto got = run(a, b);
    for (std::size_t s = 0; s < want.size(); ++s) {
      double worst = 0;
      for (std::size_t i = 0; i < want[s].size(); ++i) {
        worst = std::max(worst, std::abs(want[s][i] - got[s][i]) / (1 + std::abs(want[s][i])));
      }
      check(got[s].size() == want[s].size() && worst <= 1e-9,
            "statement " + std::to_string(s) + " differs by " + std::to_string(worst));
    }
    const std::string plan = tenex::explain();
    check(plan.find("naive loops") != std::string::npos, "explain() names the naive backend's kernels:\n" + plan);
    bool listed = false;
    for (const std::string& name : tenex::backend_names()) listed = listed || name == "naive";
    check(listed, "backend_names() lists naive");
    tenex::set_default_backend(tenex::BackendKind::automatic);
  } catch (const std::exception& e) {
    check(false, std::string("threw: ") + e.what());
  }
  if (failures == 0) std::printf("naive_check: the naive backend plugin agrees with the CPU backend\n");
  return failures == 0 ? 0 : 1;
}
