#include <tenex/tenex.hpp>

#include <iostream>

int main() {
  tenex::Tensor<double> a({20, 30, 40}), b({40, 30, 50}), c, d;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);

  c("i,j") = a("i,k,l") * b("l,k,j");  // one statement, one set: runs at the ';'
  {
    auto aikl = a("i,k,l");  // a named intermediate links statements
    c("i,j") = aikl * b("l,k,j");
    d("i,k,l") = 2.0 * aikl;  // same node, read once
  }                           // <- both statements are evaluated here
  std::cout << "c(0,0) = " << c.at(0, 0) << ", d(0,0,0) = " << d.at(0, 0, 0) << "\n";
}
