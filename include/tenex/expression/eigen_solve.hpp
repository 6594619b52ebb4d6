// tenex/expression/eigen_solve.hpp — symmetric (Hermitian) and generalized eigenproblems.
//
// Eigenvalues ascending, eigenvectors as columns: for a("i,j") the vectors are
// labelled (i,j) and the values (j). Both factors of one call share one
// decomposition, computed once per set. The eigenvalues of a Hermitian matrix are real:
// for a complex T they are an expression over the real tensor type (real_object_t<T>).
//
//   std::make_pair(v("i,j"), w("j")) = tenex::eigen_solve(a("i,j"));
//   auto [C, eps] = tenex::eigen_solve(F("m,n"), S("m,n"));   // F C = S C eps
//   std::make_pair(V("i,k"), e("k")) = tenex::eigen_solve(H("i,j"));   // V complex, e real
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"
#include "tenex/truncation.hpp"

namespace tenex {

template <class T>
class TENEX_API EigenVectors : public Nary<1, T> {
 public:
  std::string_view name() const override { return "EigenVectors"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit EigenVectors(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

template <class T>
class TENEX_API EigenValues : public Nary<1, T> {
 public:
  std::string_view name() const override { return "EigenValues"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit EigenValues(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// Symmetric (complex T: Hermitian) a (square, rank 2): a v = w v. The eigenvalues of a complex
/// a are over real_object_t<T> (Tensor<double> for Tensor<std::complex<double>>).
template <class T>
std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve(const Expression<T>& a);
/// a v = w b v with b symmetric (Hermitian) positive definite, of a's shape; vectors satisfy
/// V^T b V = I (V^H b V = I).
template <class T>
std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve(const Expression<T>& a, const Expression<T>& b);

#define TENEX_DECLARE_EIGEN_SOLVE(T)                                                                  \
  extern template class EigenVectors<T>;                                                              \
  extern template class EigenValues<T>;                                                               \
  extern template TENEX_API std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve<T>( \
      const Expression<T>&);                                                                          \
  extern template TENEX_API std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve<T>( \
      const Expression<T>&, const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_EIGEN_SOLVE)
#undef TENEX_DECLARE_EIGEN_SOLVE

// ---- Truncated eigen_solve: the same result classes as eigen_solve(a).

/// The result of eigen_solve(a) for an Expression<T> a (and of the truncated eigen_solve).
template <class T>
using EigenSolveResult = decltype(eigen_solve(std::declval<const Expression<T>&>()));

/// The symmetric (complex: Hermitian) standard problem truncated as `truncation` says
/// (tenex/truncation.hpp; docs/linear-algebra.md, "Truncated decompositions"): the eigenpairs
/// of largest |w| are kept, weighed by w^2, in descending order of |w|. The mode of the pairs
/// is a new one, named by the targets like svd's: its extent is the kept rank, decided when
/// the set runs (until then the upper bound min(max_rank, n); the same set sees the dropped
/// pairs as zeros). tenex::last_truncation() then says what was kept and dropped. For a
/// complex operand w is real: its own set (where it is assigned) takes the kept rank too.
///
///   std::make_pair(V("i,k"), w("k")) = tenex::eigen_solve(rho("i,j"), tenex::Truncation{.max_rank = 32});
template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, const Truncation& truncation);

/// The generalized problem a v = w b v (a symmetric, b symmetric positive definite; complex:
/// Hermitian) truncated as `truncation` says, like the standard one: the eigenpairs of largest
/// |w|, descending, weighed by w^2; the vectors b-orthonormal (V^H b V = I), as the untruncated
/// eigen_solve(a, b) gives them.
///
///   std::make_pair(V("i,k"), w("k")) = tenex::eigen_solve(h("i,j"), s("i,j"), tenex::Truncation{.max_rank = 8});
template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, const Expression<T>& b, const Truncation& truncation);

/// The Hermitian (real: symmetric) eigenproblem of `a` (any rank) seen as a square matrix whose
/// rows are the modes `rows` names ("a,b") and whose columns are the rest, in a's order (their
/// extents' products must be equal): the vectors have the row modes then a new mode of the
/// eigenpairs, the values that new mode, named by the targets as svd's inner mode is
/// (docs/linear-algebra.md, "Decompositions over label groups").
///
///   std::make_pair(V("a,b,k"), w("k")) = tenex::eigen_solve(H("a,b,c,d"), "a,b");
template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, std::string_view rows);
/// The same, truncated as `truncation` says (as eigen_solve(a, truncation) for a matrix).
template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, std::string_view rows, const Truncation& truncation);

#define TENEX_DECLARE_TRUNCATED_EIGEN_SOLVE(T)                                                             \
  extern template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, std::string_view);    \
  extern template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, std::string_view,     \
                                                               const Truncation&);                         \
  extern template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, const Truncation&);   \
  extern template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, const Expression<T>&, \
                                                               const Truncation&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_TRUNCATED_EIGEN_SOLVE)
#undef TENEX_DECLARE_TRUNCATED_EIGEN_SOLVE

}  // namespace tenex
