// tenex/expression/svd.hpp — thin singular value decomposition.
//
// For a("i,j") of m x n and k = min(m, n): U (i,new) m x k, S (new) descending
// and non-negative, Vt (new,j) k x n, with a = U diag(S) Vt. S is real: for a complex a
// it is an expression over the real tensor type (real_object_t<T>), U and Vt are complex.
//
//   auto [u, s, vt] = tenex::svd(a("i,j"));
//   U("i,k") = u;  S("k") = s;  Vt("k,j") = vt;   // a, U, Vt complex<double>: S a Tensor<double>
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
class TENEX_API SVDFactor : public Nary<1, T> {
 public:
  std::string_view name() const override { return "SVDFactor"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit SVDFactor(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// The thin SVD of a matrix (rank 2): U, the singular values (over real_object_t<T>), Vt.
template <class T>
std::tuple<SVDFactor<T>, SVDFactor<real_object_t<T>>, SVDFactor<T>> svd(const Expression<T>& a);

#define TENEX_DECLARE_SVD(T)                                                                            \
  extern template class SVDFactor<T>;                                                                   \
  extern template TENEX_API std::tuple<SVDFactor<T>, SVDFactor<real_object_t<T>>, SVDFactor<T>> svd<T>( \
      const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_SVD)
#undef TENEX_DECLARE_SVD

// ---- Truncated SVD: the same result classes as svd(a).

/// The result of svd(a) for an Expression<T> a (and of the truncated svd).
template <class T>
using SVDResult = decltype(svd(std::declval<const Expression<T>&>()));

/// The SVD truncated as `truncation` says (tenex/truncation.hpp; docs/linear-algebra.md,
/// "Truncated decompositions"): the kept singular triplets, S descending. The new mode's
/// extent is the kept rank, decided when the set runs; until then the results' shapes use the
/// upper bound min(max_rank, m, n), and statements of the same set see the dropped values and
/// vectors as zeros. tenex::last_truncation() then says what was kept and dropped. For a
/// complex operand S is real: its own set (where it is assigned) takes the kept rank too.
///
///   auto [u, s, vt] = tenex::svd(a("i,j"), tenex::Truncation{.max_rank = 64, .cutoff = 1e-10});
///   U("i,k") = u;  S("k") = s;  Vt("k,j") = vt;
template <class T>
SVDResult<T> svd(const Expression<T>& a, const Truncation& truncation);

// ---- Over label groups: a tensor of any rank.

/// The thin SVD of `a` (any rank) seen as a matrix whose rows are the modes `rows` names (the
/// labels of the first group, "a,s", in the order the rows take) and whose columns are the
/// other modes, in a's order: U has the row modes then the new one, S the new one, Vt the new
/// one then the column modes; the targets name the new mode as for a matrix. The operand is
/// read as it is when its modes already start with the row group (no copy), else permuted
/// once. docs/linear-algebra.md, "Decompositions over label groups".
///
///   tenex::tie(U("a,s,k"), S("k"), Vt("k,t,b")) = tenex::svd(theta("a,s,t,b"), "a,s");
template <class T>
SVDResult<T> svd(const Expression<T>& a, std::string_view rows);
/// The same, truncated as `truncation` says (as svd(a, truncation) for a matrix).
///
///   tenex::tie(U("a,s,k"), S("k"), Vt("k,t,b")) =
///       tenex::svd(theta("a,s,t,b"), "a,s", tenex::Truncation{.max_rank = 64, .cutoff = 1e-10});
template <class T>
SVDResult<T> svd(const Expression<T>& a, std::string_view rows, const Truncation& truncation);

#define TENEX_DECLARE_TRUNCATED_SVD(T)                                                    \
  extern template TENEX_API SVDResult<T> svd<T>(const Expression<T>&, const Truncation&); \
  extern template TENEX_API SVDResult<T> svd<T>(const Expression<T>&, std::string_view);  \
  extern template TENEX_API SVDResult<T> svd<T>(const Expression<T>&, std::string_view, const Truncation&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_TRUNCATED_SVD)
#undef TENEX_DECLARE_TRUNCATED_SVD

}  // namespace tenex
