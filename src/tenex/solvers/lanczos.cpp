// tenex::eigsh: thick-restart Lanczos (Wu and Simon, SIAM J. Matrix Anal. Appl. 22, 2000) with
// full reorthogonalization. The projected matrix is real symmetric for a Hermitian operator
// (tridiagonal, then an arrow after each restart); its eigenpairs come from LAPACK's dsyev.
#include <lapacke.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "tenex/solvers/krylov_basis.hpp"

namespace tenex::detail {

namespace {

using krylov::Vector;
using krylov::Wide;

/// Eigenpairs of the symmetric m x m matrix `a` (row-major): values ascending, vectors[i * m + j]
/// the i-th component of the j-th vector.
void symmetric_eigen(std::vector<double> a, std::size_t m, std::vector<double>& values, std::vector<double>& vectors) {
  values.assign(m, 0.0);
  const auto n = static_cast<lapack_int>(m);
  if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', n, a.data(), n, values.data()) != 0) {
    throw Error("tenex::eigsh: the projected eigenproblem failed to converge (LAPACK dsyev)");
  }
  vectors = std::move(a);
}

void check_options(const EigshOptions& o, std::size_t n) {
  if (o.k == 0) throw Error("tenex::eigsh: k = 0; ask for at least one eigenpair");
  if (o.k > n) {
    throw Error("tenex::eigsh: k = " + std::to_string(o.k) + " eigenpairs of an operator of dimension " +
                std::to_string(n));
  }
  if (!(o.tol >= 0.0)) throw Error("tenex::eigsh: the tolerance must be a number >= 0");
  if (o.max_iter == 0) throw Error("tenex::eigsh: max_iter = 0 allows no iteration");
  if (o.which != EigshOptions::smallest && o.which != EigshOptions::largest) {
    throw Error("tenex::eigsh: which must be EigshOptions::smallest or EigshOptions::largest");
  }
}

/// The state of one thick-restart Lanczos run.
template <class T>
struct Lanczos {
  krylov::Operator<T>& op;
  std::size_t m;                         // the basis size
  std::vector<Vector<T>> basis;          // orthonormal
  std::vector<double> projected;         // m x m, row-major: basis^H A basis
  double beta = 0;                       // the norm of the residual after the last vector
  Vector<T> residual;                    // normalized (when beta > 0)
  std::mt19937_64 random{0x7e4e5eedULL};  // fresh directions after an invariant subspace

  double& at(std::size_t i, std::size_t j) { return projected[i * m + j]; }

  /// A unit vector orthogonal to the basis (after an invariant subspace was found).
  Vector<T> fresh_direction() {
    std::normal_distribution<double> normal;
    Vector<T> w(op.size());
    for (T& v : w) v = static_cast<T>(normal(random));
    krylov::orthogonalize(w, basis, basis.size());
    krylov::scale(w, 1.0 / krylov::norm(w.data(), w.size()));
    return w;
  }

  /// Extends the basis to m vectors; the projected entries of the first basis.size() - 1 are known.
  void extend() {
    for (std::size_t j = basis.size() - 1; j < m; ++j) {
      const T* y = op.apply(basis[j]);
      Vector<T> w(y, y + op.size());
      const double applied = krylov::norm(w.data(), w.size());
      const std::vector<Wide<T>> c = krylov::orthogonalize(w, basis, j + 1);
      at(j, j) = std::real(c[j]);
      const double b = krylov::norm(w.data(), w.size());
      const bool invariant = b <= 64 * std::numeric_limits<real_type_t<T>>::epsilon() * applied;
      if (j + 1 == m) {
        beta = invariant ? 0.0 : b;
        if (!invariant) krylov::scale(w, 1.0 / b);
        residual = std::move(w);
        return;
      }
      if (invariant) {
        at(j + 1, j) = at(j, j + 1) = 0.0;
        basis.push_back(fresh_direction());
      } else {
        at(j + 1, j) = at(j, j + 1) = b;
        krylov::scale(w, 1.0 / b);
        basis.push_back(std::move(w));
      }
    }
  }

  /// sum_j basis[j] * vectors[j * m + column].
  Vector<T> ritz_vector(const std::vector<double>& vectors, std::size_t column) const {
    Vector<T> v(op.size(), T{});
    for (std::size_t j = 0; j < m; ++j) krylov::axpy(v, Wide<T>(vectors[j * m + column]), basis[j]);
    return v;
  }

  /// Keeps the Ritz pairs `kept` (columns of `vectors`) and the residual: the basis then holds
  /// them, the projected matrix their values and their coupling to the residual (an arrow).
  void restart(const std::vector<std::size_t>& kept, const std::vector<double>& values,
               const std::vector<double>& vectors) {
    std::vector<Vector<T>> next;
    for (std::size_t c : kept) next.push_back(ritz_vector(vectors, c));
    std::fill(projected.begin(), projected.end(), 0.0);
    const std::size_t p = kept.size();
    for (std::size_t i = 0; i < p; ++i) {
      at(i, i) = values[kept[i]];
      at(p, i) = at(i, p) = beta * vectors[(m - 1) * m + kept[i]];
    }
    basis = std::move(next);
    basis.push_back(beta > 0 ? std::move(residual) : fresh_direction());
  }
};

/// The order in which Ritz values are wanted: smallest first, or largest first.
std::vector<std::size_t> wanted_order(std::size_t m, bool smallest) {
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!smallest) std::reverse(order.begin(), order.end());
  return order;
}

}  // namespace

template <class T>
std::pair<std::vector<double>, std::vector<Tensor<T>>> eigsh(const MatVec<T>& op, const Tensor<T>& x0,
                                                             const EigshOptions& options) {
  const std::size_t n = x0.size();
  check_options(options, n);
  Vector<T> start = krylov::values_of(x0);
  const double start_norm = krylov::norm(start.data(), n);
  if (!(start_norm > 0) || !std::isfinite(start_norm)) {
    throw Error("tenex::eigsh: the starting vector x0 is zero or not finite; start from a vector with some weight");
  }
  krylov::scale(start, 1.0 / start_norm);
  krylov::Operator<T> a(op, x0.shape(), "eigsh");
  const std::size_t m = std::min(n, std::max(options.krylov_dim, 2 * options.k + 1));
  Lanczos<T> lanczos{a, m, {std::move(start)}, std::vector<double>(m * m, 0.0), 0.0, {}, {}};
  const double tol = std::max(options.tol, 64 * static_cast<double>(std::numeric_limits<real_type_t<T>>::epsilon()));
  const bool smallest = options.which == EigshOptions::smallest;
  std::vector<double> values, vectors;
  for (std::size_t iteration = 0;; ++iteration) {
    lanczos.extend();
    symmetric_eigen(lanczos.projected, m, values, vectors);
    const std::vector<std::size_t> order = wanted_order(m, smallest);
    double worst = 0;
    bool converged = true;
    for (std::size_t i = 0; i < options.k; ++i) {
      const double r = lanczos.beta * std::abs(vectors[(m - 1) * m + order[i]]);
      worst = std::max(worst, r);
      converged = converged && r <= tol * std::max(1.0, std::abs(values[order[i]]));
    }
    if (converged) {
      std::pair<std::vector<double>, std::vector<Tensor<T>>> result;
      for (std::size_t i = 0; i < options.k; ++i) {
        result.first.push_back(values[order[i]]);
        result.second.emplace_back(x0.shape(), lanczos.ritz_vector(vectors, order[i]));
      }
      return result;
    }
    if (iteration + 1 >= options.max_iter) {
      std::ostringstream text;
      text << "tenex::eigsh: no convergence in " << options.max_iter << " restarts (" << a.calls()
           << " products with the operator): the largest residual of the wanted pairs is " << worst
           << ", the tolerance " << tol << "; raise max_iter or krylov_dim, or loosen tol";
      throw Error(text.str());
    }
    const std::size_t keep = std::min(m - 1, options.k + (m - options.k) / 2);
    lanczos.restart({order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep)}, values, vectors);
  }
}

#define TENEX_INSTANTIATE_EIGSH(T)                                                                               \
  template TENEX_API std::pair<std::vector<double>, std::vector<Tensor<T>>> eigsh<T>(const MatVec<T>&,           \
                                                                                     const Tensor<T>&, const EigshOptions&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_EIGSH)
#undef TENEX_INSTANTIATE_EIGSH

}  // namespace tenex::detail
