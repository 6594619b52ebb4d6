// Uses an installed tenex through pkg-config, built by run_consumer.cmake with
//   c++ -std=c++20 main.cpp $(pkg-config --cflags --libs tenex)
// a small contraction with exact integer results, and the headers' version against the
// version tenex.pc states (TENEX_EXPECTED_VERSION, from `pkg-config --modversion tenex`).
#include <cstdio>
#include <cstring>

#include <tenex/config.hpp>
#include <tenex/tenex.hpp>

int main() {
  try {
    tenex::Tensor<double> a({2, 3}, {1, 2, 3, 4, 5, 6});
    tenex::Tensor<double> x({3}, {1, 1, 1});
    tenex::Tensor<double> y;
    y("i") = a("i,k") * x("k");
    if (!(y.shape() == tenex::Shape{2}) || y.at(0) != 6 || y.at(1) != 15) {
      std::printf("wrong product: rank %zu\n", y.rank());
      return 1;
    }
    if (std::strcmp(TENEX_VERSION_STRING, TENEX_EXPECTED_VERSION) != 0) {
      std::printf("config.hpp says %s, tenex.pc %s\n", TENEX_VERSION_STRING, TENEX_EXPECTED_VERSION);
      return 1;
    }
    std::printf("pkg-config consumer: tenex %s, y = (%g, %g): ok\n", TENEX_VERSION_STRING, y.at(0), y.at(1));
    return 0;
  } catch (const tenex::Error& e) {
    std::printf("tenex::Error: %s\n", e.what());
    return 1;
  }
}
