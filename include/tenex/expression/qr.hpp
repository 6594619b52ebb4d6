// tenex/expression/qr.hpp — reduced QR factorization.
//
// For a("i,j") of m x n and k = min(m, n): Q is (i,new) m x k with orthonormal
// columns and R is (new,j) k x n upper triangular; the new mode is named by the
// target it is assigned to, and Q * R contracts over it.
//
//   tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j"));
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API QRFactor : public Nary<1, T> {
 public:
  std::string_view name() const override { return "QRFactor"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit QRFactor(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

template <class T>
std::pair<QRFactor<T>, QRFactor<T>> qr(const Expression<T>& a);

/// The reduced QR of `a` (any rank) seen as a matrix whose rows are the modes `rows` names
/// ("a,s") and whose columns are the rest, in a's order: Q has the row modes then the new one,
/// R the new one then the column modes (docs/linear-algebra.md, "Decompositions over label
/// groups"). No copy when a's modes already start with the row group.
///
///   tenex::tie(Q("a,s,k"), R("k,t,b")) = tenex::qr(theta("a,s,t,b"), "a,s");
template <class T>
std::pair<QRFactor<T>, QRFactor<T>> qr(const Expression<T>& a, std::string_view rows);

#define TENEX_DECLARE_QR(T)                                                                  \
  extern template class QRFactor<T>;                                                         \
  extern template TENEX_API std::pair<QRFactor<T>, QRFactor<T>> qr<T>(const Expression<T>&); \
  extern template TENEX_API std::pair<QRFactor<T>, QRFactor<T>> qr<T>(const Expression<T>&, std::string_view);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_QR)
#undef TENEX_DECLARE_QR

}  // namespace tenex
