// Uses tenex built through add_subdirectory: a single-precision contraction
// over two indices with a permuted result, checked against plain loops.
#include <cmath>
#include <cstddef>
#include <cstdio>

#include <tenex/tenex.hpp>

int main() {
  try {
    constexpr std::size_t ni = 3, nj = 4, nk = 5, nl = 2;
    tenex::Tensor<float> a({ni, nk, nl}), b({nl, nk, nj});
    tenex::fill_random(a, 7);
    tenex::fill_random(b, 8);

    tenex::Tensor<float> c;
    c("j,i") = a("i,k,l") * b("l,k,j");  // sum over k and l; stored transposed

    int failures = 0;
    if (!(c.shape() == tenex::Shape{nj, ni})) {
      std::printf("wrong shape: rank %zu\n", c.rank());
      return 1;
    }
    for (std::size_t i = 0; i < ni; ++i) {
      for (std::size_t j = 0; j < nj; ++j) {
        double expected = 0;
        for (std::size_t k = 0; k < nk; ++k) {
          for (std::size_t l = 0; l < nl; ++l) expected += double(a.at(i, k, l)) * b.at(l, k, j);
        }
        if (std::abs(c.at(j, i) - expected) > 1e-5 * (1 + std::abs(expected))) {
          std::printf("c(%zu,%zu) = %g, expected %g\n", j, i, c.at(j, i), expected);
          ++failures;
        }
      }
    }
    if (failures != 0) return 1;
    std::printf("add_subdirectory consumer: c(0,0) = %g: ok\n", c.at(0, 0));
    return 0;
  } catch (const tenex::Error& e) {
    std::printf("tenex::Error: %s\n", e.what());
    return 1;
  }
}
