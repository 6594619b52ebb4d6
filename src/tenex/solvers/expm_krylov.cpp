// tenex::expm_multiply: exp(t A) x by Arnoldi projection (Saad, SIAM J. Numer. Anal. 29, 1992;
// the step control of Sidje's Expokit, ACM TOMS 24, 1998, simplified). Each step builds a
// basis of at most 30 vectors from the current vector w and stops as soon as the a posteriori
// error estimate beta h_{m+1,m} |tau| |e_m^T phi_1(tau H_m) e_1| meets tol |x| per unit of
// the step's share of t; a step that does not meet it is halved on the same basis.
#include <cmath>
#include <complex>
#include <limits>
#include <sstream>

#include "tenex/solvers/krylov_basis.hpp"

namespace tenex::detail {

namespace {

using Complex = std::complex<double>;
using krylov::Basis;
using krylov::Vector;

/// A small dense complex matrix, row-major.
struct Small {
  std::size_t n = 0;
  std::vector<Complex> a;
  explicit Small(std::size_t size) : n(size), a(size * size) {}
  Complex& operator()(std::size_t i, std::size_t j) { return a[i * n + j]; }
  Complex operator()(std::size_t i, std::size_t j) const { return a[i * n + j]; }
};

Small product(const Small& x, const Small& y) {
  Small z(x.n);
  for (std::size_t i = 0; i < x.n; ++i) {
    for (std::size_t k = 0; k < x.n; ++k) {
      const Complex xik = x(i, k);
      if (xik == Complex{}) continue;
      for (std::size_t j = 0; j < x.n; ++j) z(i, j) += xik * y(k, j);
    }
  }
  return z;
}

/// exp(a) by scaling and squaring: a / 2^s of norm at most 1/2, then its Taylor series to 1e-20.
Small exponential(Small a) {
  double norm1 = 0;
  for (std::size_t j = 0; j < a.n; ++j) {
    double column = 0;
    for (std::size_t i = 0; i < a.n; ++i) column += std::abs(a(i, j));
    norm1 = std::max(norm1, column);
  }
  int squarings = 0;
  if (norm1 > 0.5) squarings = static_cast<int>(std::ceil(std::log2(norm1 / 0.5)));
  const double factor = std::ldexp(1.0, -squarings);
  for (Complex& v : a.a) v *= factor;
  Small result(a.n), term(a.n);
  for (std::size_t i = 0; i < a.n; ++i) result(i, i) = term(i, i) = 1.0;
  for (int k = 1; k <= 24; ++k) {
    term = product(term, a);
    for (Complex& v : term.a) v /= static_cast<double>(k);
    double size = 0;
    for (std::size_t i = 0; i < a.a.size(); ++i) {
      result.a[i] += term.a[i];
      size = std::max(size, std::abs(term.a[i]));
    }
    if (size < 1e-20) break;
  }
  for (int s = 0; s < squarings; ++s) result = product(result, result);
  return result;
}

/// One Arnoldi basis from w: vectors and the Hessenberg matrix (h(i, j), i <= j + 1).
template <class T>
struct Arnoldi {
  Basis<T> basis;
  std::vector<std::vector<Complex>> h;  // h[j]: column j, j + 2 entries
  bool invariant = false;               // the last column closes an invariant subspace

  std::size_t size() const { return h.size(); }
  double last() const { return invariant ? 0.0 : std::abs(h.back().back()); }

  /// Adds column basis.size() - 1: one product with the operator.
  void extend(krylov::Operator<T>& op) {
    const std::size_t j = basis.size() - 1;
    const T* y = op.apply(basis.vector(j));
    Vector<T> w(y, y + op.size());
    const double applied = krylov::norm(w.data(), w.size());
    const std::vector<T> c = basis.orthogonalize(w, j + 1);
    std::vector<Complex> column;
    for (const T& v : c) column.emplace_back(static_cast<double>(std::real(v)), static_cast<double>(std::imag(v)));
    const double b = krylov::norm(w.data(), w.size());
    invariant = b <= 64 * std::numeric_limits<real_type_t<T>>::epsilon() * applied || basis.size() == op.size();
    column.push_back(b);
    h.push_back(std::move(column));
    if (!invariant) {
      krylov::scale(w, 1.0 / b);
      basis.push(w);
    }
  }

  /// exp(tau H_m) e_1 (the first m entries) and the error estimate's |e_m^T phi_1(tau H_m) e_1|,
  /// from the exponential of the augmented matrix [[tau H_m, e_1], [0, 0]].
  std::pair<std::vector<Complex>, double> step(Complex tau) const {
    const std::size_t m = size();
    Small augmented(m + 1);
    for (std::size_t j = 0; j < m; ++j) {
      for (std::size_t i = 0; i <= j + 1 && i < m; ++i) augmented(i, j) = tau * h[j][i];
    }
    augmented(0, m) = 1.0;
    const Small e = exponential(augmented);
    std::vector<Complex> first(m);
    for (std::size_t i = 0; i < m; ++i) first[i] = e(i, 0);
    return {first, std::abs(e(m - 1, m))};
  }
};

constexpr std::size_t kMaxBasis = 30;

/// v as a T: its real part for a real T (exp(t A) x is real for real t, A and x).
template <class T>
T element(Complex v) {
  if constexpr (is_complex_v<T>) {
    return T(static_cast<real_type_t<T>>(v.real()), static_cast<real_type_t<T>>(v.imag()));
  } else {
    return static_cast<T>(v.real());
  }
}

}  // namespace

template <class T>
Tensor<T> expm_multiply(const MatVec<T>& op, const Tensor<T>& x, T t, double tol) {
  if (!(tol > 0)) throw Error("tenex::expm_multiply: the tolerance must be a number > 0");
  if (!std::isfinite(std::abs(Complex(t)))) throw Error("tenex::expm_multiply: t is not finite");
  Vector<T> w = krylov::values_of(x);
  const std::size_t n = w.size();
  const double scale = krylov::norm(w.data(), n);
  if (n == 0 || scale == 0 || Complex(t) == Complex{}) return Tensor<T>(x.shape(), std::move(w));
  krylov::Operator<T> a(op, x.shape(), "expm_multiply");
  const Complex total(t);
  double done = 0, share = 1;  // the fraction of t done, and the next step's try
  for (int steps = 0; done < 1; ++steps) {
    if (steps > 100000) throw Error("tenex::expm_multiply: more than 100000 steps; is the operator finite?");
    const double beta = krylov::norm(w.data(), n);
    if (beta == 0) break;
    Arnoldi<T> arnoldi{Basis<T>(n, kMaxBasis + 1), {}, false};
    krylov::scale(w, 1.0 / beta);
    arnoldi.basis.push(w);
    double s = std::min(share, 1 - done);
    std::pair<std::vector<Complex>, double> coefficients;
    auto error = [&](double fraction) {
      coefficients = arnoldi.step(fraction * total);
      return beta * arnoldi.last() * fraction * std::abs(total) * coefficients.second;
    };
    while (true) {
      arnoldi.extend(a);
      const bool last = arnoldi.invariant || arnoldi.size() == std::min(kMaxBasis, n);
      // The estimate costs an exponential of the projected matrix: every vector while the basis
      // is small, every third one later.
      const bool check = last || arnoldi.size() < 8 || arnoldi.size() % 3 == 0;
      if (check && error(s) <= tol * scale * s) break;
      if (!last) continue;
      while (error(s) > tol * scale * s && s > 1e-12) s /= 2;
      break;
    }
    if (!std::isfinite(coefficients.second)) throw Error("tenex::expm_multiply: the exponential overflowed");
    std::vector<T> combination;
    for (std::size_t i = 0; i < arnoldi.size(); ++i) combination.push_back(element<T>(beta * coefficients.first[i]));
    w = arnoldi.basis.combine(combination);
    done += s;
    share = std::min(1.0, 2 * s);
  }
  return Tensor<T>(x.shape(), std::move(w));
}

#define TENEX_INSTANTIATE_EXPM_MULTIPLY(T) \
  template TENEX_API Tensor<T> expm_multiply<T>(const MatVec<T>&, const Tensor<T>&, T, double);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_EXPM_MULTIPLY)
#undef TENEX_INSTANTIATE_EXPM_MULTIPLY

}  // namespace tenex::detail
