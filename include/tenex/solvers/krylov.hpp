// tenex/solvers/krylov.hpp — Krylov solvers on operators written as tenex statements (docs/krylov.md).
//
// The operator is a callable op(x, y) that writes y = A x with tenex statements; it is called
// with the same two tensors every time, so its statements run through the plan cache and a
// solver plans the matvec once. x has the shape of the starting vector; so must y.
//
//   auto matvec = [&](const tenex::Tensor<double>& x, tenex::Tensor<double>& y) {
//     y("a,s,t,b") = L("a,p,c") * W1("p,q,s,u") * W2("q,r,t,v") * x("c,u,v,d") * R("b,r,d");
//   };
//   auto [energies, states] = tenex::eigsh(matvec, theta, {.k = 1, .which = tenex::EigshOptions::smallest});
//   tenex::Tensor<std::complex<double>> later = tenex::expm_multiply(h, psi, std::complex<double>(0, -dt));
#pragma once

#include <complex>
#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/scalar.hpp"
#include "tenex/tensor/tensor.hpp"

namespace tenex {

/// What eigsh computes and when it stops.
struct EigshOptions {
  std::size_t k = 1;                            // how many eigenpairs
  enum { smallest, largest } which = smallest;  // the algebraically smallest or largest
  double tol = 1e-10;                           // a pair is converged when |A x - w x| <= tol * max(1, |w|)
  std::size_t max_iter = 300;                   // the most restarts
  std::size_t krylov_dim = 30;                  // the Krylov basis size (capped by the dimension)
};

namespace detail {
template <class T>
using MatVec = std::function<void(const Tensor<T>&, Tensor<T>&)>;

template <class T>
TENEX_API std::pair<std::vector<double>, std::vector<Tensor<T>>> eigsh(const MatVec<T>& op, const Tensor<T>& x0,
                                                                       const EigshOptions& options);
template <class T>
TENEX_API Tensor<T> expm_multiply(const MatVec<T>& op, const Tensor<T>& x, T t, double tol);

#define TENEX_DECLARE_KRYLOV(T)                                                              \
  extern template TENEX_API std::pair<std::vector<double>, std::vector<Tensor<T>>> eigsh<T>( \
      const MatVec<T>&, const Tensor<T>&, const EigshOptions&);                              \
  extern template TENEX_API Tensor<T> expm_multiply<T>(const MatVec<T>&, const Tensor<T>&, T, double);
TENEX_FOR_EACH_SCALAR(TENEX_DECLARE_KRYLOV)
#undef TENEX_DECLARE_KRYLOV
}  // namespace detail

/// The k eigenpairs of the Hermitian (real: symmetric) operator `op` at the end of the spectrum
/// that options.which names, by thick-restart Lanczos with full reorthogonalization from x0
/// (any shape, not zero). Values best first (smallest: ascending; largest: descending), real;
/// vectors normalized, of x0's shape. Throws tenex::Error for k = 0, k beyond the dimension, a
/// zero x0, a y of another shape than x, or no convergence in options.max_iter restarts; what
/// op throws passes through. docs/krylov.md.
template <class T, class Op>
std::pair<std::vector<double>, std::vector<Tensor<T>>> eigsh(Op op, const Tensor<T>& x0, EigshOptions options = {}) {
  return detail::eigsh<T>(detail::MatVec<T>(std::move(op)), x0, options);
}

/// exp(t A) x for the operator `op` (any square A: Arnoldi), by Krylov projection with
/// time steps chosen so that the estimated error stays below tol * |x|. A complex t (a complex
/// T) evolves in real time: expm_multiply(h, psi, std::complex<double>(0, -dt)). docs/krylov.md.
template <class T, class Op>
Tensor<T> expm_multiply(Op op, const Tensor<T>& x, T t, double tol = 1e-12) {
  return detail::expm_multiply<T>(detail::MatVec<T>(std::move(op)), x, t, tol);
}

}  // namespace tenex
