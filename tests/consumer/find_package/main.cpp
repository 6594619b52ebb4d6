// Uses an installed tenex through find_package(tenex): a small matrix product
// with exact integer results, checked element by element.
#include <cstdio>
#include <cstring>

#include <tenex/config.hpp>
#include <tenex/tenex.hpp>

int main() {
  try {
    tenex::Tensor<double> a({2, 3}, {1, 2, 3, 4, 5, 6});
    tenex::Tensor<double> b({3, 2}, {7, 8, 9, 10, 11, 12});
    tenex::Tensor<double> c;
    c("i,j") = a("i,k") * b("k,j");

    const double expected[2][2] = {{58, 64}, {139, 154}};
    int failures = 0;
    if (!(c.shape() == tenex::Shape{2, 2})) {
      std::printf("wrong shape: rank %zu\n", c.rank());
      return 1;
    }
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        if (c.at(i, j) != expected[i][j]) {
          std::printf("c(%d,%d) = %g, expected %g\n", i, j, c.at(i, j), expected[i][j]);
          ++failures;
        }
      }
    }
    if (std::strcmp(TENEX_VERSION_STRING, TENEX_EXPECTED_VERSION) != 0) {
      std::printf("config.hpp says %s, the package %s\n", TENEX_VERSION_STRING, TENEX_EXPECTED_VERSION);
      ++failures;
    }
    if (failures != 0) return 1;
    std::printf("find_package consumer: tenex %s, c(1,1) = %g: ok\n", TENEX_VERSION_STRING, c.at(1, 1));
    return 0;
  } catch (const tenex::Error& e) {
    std::printf("tenex::Error: %s\n", e.what());
    return 1;
  }
}
