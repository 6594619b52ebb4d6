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

}  // namespace tenex
