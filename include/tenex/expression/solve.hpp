// tenex/expression/solve.hpp — x with a x = b, for a square matrix a.
//
//   x("j")   = tenex::solve(a("i,j"), b("i"));       // a("i,j") * x("j") is b("i")
//   X("j,k") = tenex::solve(a("i,j"), B("i,k"));     // every k is a right-hand side
//   y("i")   = tenex::solve(a("i,j"), c("j"));       // = inverse(a("i,j")) * c("j")
//
// Labels: b's mode that carries one of a's labels is solved, and x takes a's other label
// there; b's other modes are right-hand sides and keep their labels. Numerically x = A^-1 b
// along that mode, A being a in the order its labels are written. So
// a("i,j") * solve(a("i,j"), b("i")) is b("i") and solve(a("i,j"), c("j")) is
// inverse(a("i,j")) * c("j"). When b carries both of a's labels, the mode labelled like a's
// first is solved and x keeps b's labels: X("i,j") = solve(A("i,j"), B("i,j")) is A^-1 B.
//
// Symmetric positive definite a goes through Cholesky (potrf, potrs), any other through LU
// (getrf, getrs). A singular a is an evaluation error (NumericalError naming solve and a's
// labels and extents, rethrown by every read).
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Solve : public Nary<2, T> {
 public:
  std::string_view name() const override { return "Solve"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }

 private:
  friend struct detail::Access;
  explicit Solve(detail::Handle handle) : Nary<2, T>(std::move(handle)) {}
};

/// Throws ShapeError unless `a` is a square matrix and b shares one of a's labels, with
/// a's extent.
template <class T>
Solve<T> solve(const Expression<T>& a, const Expression<T>& b);

#define TENEX_DECLARE_SOLVE(T)    \
  extern template class Solve<T>; \
  extern template TENEX_API Solve<T> solve<T>(const Expression<T>&, const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_SOLVE)
#undef TENEX_DECLARE_SOLVE

}  // namespace tenex
