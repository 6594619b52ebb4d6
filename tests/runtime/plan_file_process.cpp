// A user program for the ctest plan_file_across_processes (tests/CMakeLists.txt): run once with
// TENEX_PLAN_FILE and TENEX_PLAN_SEARCH=measure it measures a plan, and the file is written when
// it ends; run again, it loads that plan at its first contraction and runs it at once. Each run
// checks its products against plain loops and prints plan_file_status() and explain().
#include <cmath>
#include <cstddef>
#include <iostream>

#include <tenex/tenex.hpp>

int main() {
  using tenex::Tensor;
  constexpr std::size_t m = 192, k = 256, n = 160;
  Tensor<double> a({m, k}), b({k, n}), c;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  std::size_t wrong = 0;
  for (int call = 0; call < 3; ++call) {
    c("i,j") = a("i,k") * b("k,j");
    for (std::size_t i = 0; i < m; i += 7) {
      for (std::size_t j = 0; j < n; j += 5) {
        double sum = 0, magnitude = 0;
        for (std::size_t p = 0; p < k; ++p) {
          sum += a.at(i, p) * b.at(p, j);
          magnitude += std::abs(a.at(i, p) * b.at(p, j));
        }
        if (!(std::abs(c.at(i, j) - sum) <= 1e-13 * (magnitude + 1e-300))) ++wrong;
      }
    }
  }
  std::cout << tenex::plan_file_status() << tenex::explain();
  if (wrong > 0) std::cout << wrong << " wrong elements\n";
  return wrong == 0 ? 0 : 1;
}
