// tenex/expression/slice.hpp — a half-open block of any rank.
//
//   occ("m,i") = tenex::slice(C("m,p"), {0, 0}, {n, nocc});   // columns [0, nocc)
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Slice : public Nary<1, T> {
 public:
  std::string_view name() const override { return "Slice"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The half-open bounds of every mode of the operand.
  const std::vector<std::size_t>& lo() const;
  const std::vector<std::size_t>& hi() const;

 private:
  friend struct detail::Access;
  explicit Slice(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
};

/// lo and hi per mode, lo <= hi <= extent (ShapeError otherwise); labels are kept.
template <class T>
Slice<T> slice(const Expression<T>& a, std::vector<std::size_t> lo, std::vector<std::size_t> hi);

#define TENEX_DECLARE_SLICE(T)    \
  extern template class Slice<T>; \
  extern template TENEX_API Slice<T> slice<T>(const Expression<T>&, std::vector<std::size_t>, std::vector<std::size_t>);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_SLICE)
#undef TENEX_DECLARE_SLICE

}  // namespace tenex
