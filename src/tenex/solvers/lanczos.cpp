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

using krylov::Basis;
using krylov::Vector;

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

/// The Ritz pairs of a projected matrix's leading `size` x `size` block, and how far the wanted
/// ones are from converged.
struct Ritz {
  std::size_t size = 0;
  std::vector<double> values, vectors;  // ascending; vectors[i * size + j]: component i of pair j
  std::vector<std::size_t> order;       // pairs best first
  double worst = 0;                     // the largest residual norm of the wanted pairs
};

Ritz ritz_pairs(const std::vector<double>& projected, std::size_t m, std::size_t size, bool smallest) {
  std::vector<double> block(size * size);
  for (std::size_t i = 0; i < size; ++i) {
    for (std::size_t j = 0; j < size; ++j) block[i * size + j] = projected[i * m + j];
  }
  Ritz r;
  r.size = size;
  symmetric_eigen(std::move(block), size, r.values, r.vectors);
  r.order.resize(size);
  std::iota(r.order.begin(), r.order.end(), std::size_t{0});
  if (!smallest) std::reverse(r.order.begin(), r.order.end());
  return r;
}

/// Whether the first k pairs of `r` have residuals beta |y_last| <= tol max(1, |w|); sets r.worst.
bool converged(Ritz& r, double beta, std::size_t k, double tol) {
  bool all = true;
  r.worst = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double residual = beta * std::abs(r.vectors[(r.size - 1) * r.size + r.order[i]]);
    r.worst = std::max(r.worst, residual);
    all = all && residual <= tol * std::max(1.0, std::abs(r.values[r.order[i]]));
  }
  return all;
}

/// The state of one thick-restart Lanczos run.
template <class T>
struct Lanczos {
  krylov::Operator<T>& op;
  std::size_t m;                          // the largest basis
  Basis<T> basis;                         // orthonormal
  std::vector<double> projected;          // m x m, row-major: basis^H A basis
  double beta = 0;                        // the norm of the residual after the last vector
  Vector<T> residual;                     // normalized (when beta > 0)
  std::mt19937_64 random{0x7e4e5eedULL};  // fresh directions after an invariant subspace

  double& at(std::size_t i, std::size_t j) { return projected[i * m + j]; }

  /// A unit vector orthogonal to the basis (after an invariant subspace was found).
  Vector<T> fresh_direction() {
    std::normal_distribution<double> normal;
    Vector<T> w(op.size());
    for (T& v : w) v = static_cast<T>(normal(random));
    basis.orthogonalize(w, basis.size());
    krylov::scale(w, 1.0 / krylov::norm(w.data(), w.size()));
    return w;
  }

  /// Extends the basis (the projected entries of all but its last vector are known) until the
  /// wanted pairs converge or it holds m vectors: the Ritz pairs of what it holds then, and
  /// whether they converged. Once an invariant subspace was met in this cycle only the full
  /// basis is tested (a subspace may lack the wanted vectors).
  std::pair<Ritz, bool> extend(std::size_t k, double tol, bool smallest) {
    bool met_invariant = false;
    for (std::size_t j = basis.size() - 1;; ++j) {
      const T* y = op.apply(basis.vector(j));
      Vector<T> w(y, y + op.size());
      const double applied = krylov::norm(w.data(), w.size());
      // The three-term recurrence's local step, then the full reorthogonalization, which then
      // removes only what rounding left (usually in one pass).
      T local = basis.project_out(w, j);
      if (j > 0) basis.project_out(w, j - 1);
      const std::vector<T> c = basis.orthogonalize(w, j + 1);
      at(j, j) = static_cast<double>(std::real(local + c[j]));
      const double b = krylov::norm(w.data(), w.size());
      const bool invariant = b <= 64 * std::numeric_limits<real_type_t<T>>::epsilon() * applied;
      const bool full = j + 1 == m;
      if ((full || (!met_invariant && !invariant)) && j + 1 >= k) {
        Ritz r = ritz_pairs(projected, m, j + 1, smallest);
        const bool done = converged(r, invariant ? 0.0 : b, k, tol);
        if (done || full) {
          beta = invariant ? 0.0 : b;
          if (!invariant) krylov::scale(w, 1.0 / b);
          residual = std::move(w);
          return {std::move(r), done};
        }
      }
      met_invariant = met_invariant || invariant;
      if (invariant) {
        at(j + 1, j) = at(j, j + 1) = 0.0;
        basis.push(fresh_direction());
      } else {
        at(j + 1, j) = at(j, j + 1) = b;
        krylov::scale(w, 1.0 / b);
        basis.push(w);
      }
    }
  }

  /// sum_j basis[j] * r.vectors[j * r.size + column].
  Vector<T> ritz_vector(const Ritz& r, std::size_t column) const {
    std::vector<T> coefficients(r.size);
    for (std::size_t j = 0; j < r.size; ++j) coefficients[j] = static_cast<T>(r.vectors[j * r.size + column]);
    return basis.combine(coefficients);
  }

  /// Keeps the best `keep` Ritz pairs of the full basis and the residual: the basis then holds
  /// them, the projected matrix their values and their coupling to the residual (an arrow).
  void restart(const Ritz& r, std::size_t keep) {
    Basis<T> next(op.size(), m + 1);
    for (std::size_t i = 0; i < keep; ++i) next.push(ritz_vector(r, r.order[i]));
    std::fill(projected.begin(), projected.end(), 0.0);
    for (std::size_t i = 0; i < keep; ++i) {
      at(i, i) = r.values[r.order[i]];
      at(keep, i) = at(i, keep) = beta * r.vectors[(r.size - 1) * r.size + r.order[i]];
    }
    basis = std::move(next);
    basis.push(beta > 0 ? residual : fresh_direction());
  }
};

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
  Lanczos<T> lanczos{a, m, Basis<T>(n, m + 1), std::vector<double>(m * m, 0.0), 0.0, {}, {}};
  lanczos.basis.push(start);
  const double tol = std::max(options.tol, 64 * static_cast<double>(std::numeric_limits<real_type_t<T>>::epsilon()));
  const bool smallest = options.which == EigshOptions::smallest;
  for (std::size_t iteration = 0;; ++iteration) {
    const auto [r, done] = lanczos.extend(options.k, tol, smallest);
    if (done) {
      std::pair<std::vector<double>, std::vector<Tensor<T>>> result;
      for (std::size_t i = 0; i < options.k; ++i) {
        result.first.push_back(r.values[r.order[i]]);
        result.second.emplace_back(x0.shape(), lanczos.ritz_vector(r, r.order[i]));
      }
      return result;
    }
    if (iteration + 1 >= options.max_iter) {
      std::ostringstream text;
      text << "tenex::eigsh: no convergence in " << options.max_iter << " restarts (" << a.calls()
           << " products with the operator): the largest residual of the wanted pairs is " << r.worst
           << ", the tolerance " << tol << "; raise max_iter or krylov_dim, or loosen tol";
      throw Error(text.str());
    }
    lanczos.restart(r, std::min(m - 1, options.k + (m - options.k) / 2));
  }
}

#define TENEX_INSTANTIATE_EIGSH(T)                                                    \
  template TENEX_API std::pair<std::vector<double>, std::vector<Tensor<T>>> eigsh<T>( \
      const MatVec<T>&, const Tensor<T>&, const EigshOptions&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_EIGSH)
#undef TENEX_INSTANTIATE_EIGSH

}  // namespace tenex::detail
