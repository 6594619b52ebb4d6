// tenex/expression/indexed.hpp — an object with labelled modes: the way into
// and out of the expression layer.
//
// As an operand, `a("i,j")` reads the value a has now (a later write to a
// does not change it), and holds that value: it may outlive a. As a target it
// writes to a, which must still exist: assigning through an Indexed whose
// tensor was destroyed (one returned from a function, or kept in `auto` past
// the tensor's scope) throws tenex::Error and writes nothing. (An Indexed of a
// Shape is not checked: keep the Shape alive while its Indexed is assigned to.)
// As a target, assigning to it records a statement:
//
//   c("i,j") = a("i,k") * b("k,j");     // evaluated at the ';'
//   c("i,j") += c("j,i");               // the right side sees the old c
//   t("") = a("i,i");                   // a repeated label takes the diagonal
#pragma once

#include <memory>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/cholesky.hpp"
#include "tenex/expression/eigen_solve.hpp"
#include "tenex/expression/expression.hpp"

namespace tenex {

namespace detail {
struct TargetRecord;
}

template <class T>
class TENEX_API Indexed : public Expression<T> {
 public:
  /// Labels `object`'s modes. Throws ShapeError for malformed labels.
  Indexed(T& object, std::string_view labels);
  /// Labels a const object's modes: an operand only; assigning to it throws tenex::Error.
  Indexed(const T& object, std::string_view labels);
  Indexed(const Indexed& other);
  Indexed(Indexed&& other) noexcept;
  ~Indexed() override;

  /// Records `target = rhs` (the right side as if computed first).
  Indexed& operator=(const Indexed& rhs);
  Indexed& operator=(const Expression<T>& rhs);
  /// Records `target = target + rhs` / `target = target - rhs`.
  Indexed& operator+=(const Expression<T>& rhs);
  Indexed& operator-=(const Expression<T>& rhs);
  /// Records `target = target * rhs` (an Einstein product: labels shared with the target
  /// multiply element by element) / `target = target / rhs` (element-wise, by label).
  Indexed& operator*=(const Expression<T>& rhs);
  Indexed& operator/=(const Expression<T>& rhs);
  /// Scalars: `a("i,j") *= 2.0` is `a("i,j") = 2.0 * a("i,j")`; /= 0.0 throws tenex::Error.
  Indexed& operator*=(double factor);
  Indexed& operator/=(double divisor);
  Indexed& operator+=(double value);
  Indexed& operator-=(double value);

  std::string_view name() const override { return "Indexed"; }
  /// Lowers its own node (and, through it, its operands) into `graph`.
  NodeId add_to_graph(OpGraph& graph) const override { return this->lower_own_node(graph); }
  /// The labels as written ("i,i" keeps both); empty for a moved-from Indexed.
  const std::vector<std::string>& written_labels() const;

  // Matrix functions, the member forms of the seed design: the same as the free functions
  // tenex::eigen_solve(*this), tenex::eigen_solve(*this, b) and tenex::cholesky(*this).
  //   std::make_pair(v("i,j"), w("j")) = a("i,j").eigen_solve();
  //   L("i,j") = a("i,j").cholesky();
  std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve() const;
  std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve(const Expression<T>& b) const;
  CholeskyVectors<T> cholesky() const;

 private:
  // The target object, checked against its lifetime token before every write.
  T& target() const;

  friend struct detail::Access;

  T* object_;
  bool read_only_ = false;           // made from a const object: never a target
  std::weak_ptr<const void> alive_;  // expires with the Tensor (empty for a Shape)
  // What this target object (copies have their own) remembers of its last assignment, so a
  // failed multi-target statement can undo the targets it already assigned
  // (detail::Access::target_record). Made by the first assignment to this object.
  mutable std::shared_ptr<detail::TargetRecord> record_;
};

namespace detail {
template <class T>
inline constexpr bool is_indexed_v = false;
template <class T>
inline constexpr bool is_indexed_v<Indexed<T>> = true;
}  // namespace detail

/// Several targets at once: `tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j"));`. The
/// targets may be of different object types where the right side's are (the real singular
/// values of a complex svd: `tenex::tie(U("i,k"), S("k"), Vt("k,j")) = tenex::svd(z("i,j"));`).
template <class T, class... Rest>
std::tuple<Indexed<T>, Rest...> tie(Indexed<T> first, Rest... rest) {
  static_assert((detail::is_indexed_v<Rest> && ...), "tenex::tie takes Indexed targets: tie(q(\"i,k\"), r(\"k,j\"))");
  return std::tuple<Indexed<T>, Rest...>(std::move(first), std::move(rest)...);
}

#define TENEX_DECLARE_INDEXED(T) extern template class Indexed<T>;
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_INDEXED)
#undef TENEX_DECLARE_INDEXED

}  // namespace tenex
