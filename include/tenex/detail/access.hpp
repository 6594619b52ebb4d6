// tenex/detail/access.hpp — the library's own way to the internals of the public classes.
//
// No public member a user calls names a detail:: type (docs/extending.md, "What is public").
// The library's layers, the backend plugins and the tests reach what they need of the public
// classes (an expression's handle, a tensor's storage, a target's record, the distributed
// context) through these static functions instead; the classes befriend Access. Everything
// here is inline, so a plugin needs no exported symbol for it. Not part of the API: it may
// change with any release.
//
//   const detail::Handle& h = detail::Access::handle(a("i,j"));
//   auto storage = detail::Access::storage(tensor);
//   Chip<T> c = detail::Access::make<Chip<T>>(std::move(handle));
#pragma once

#include <memory>
#include <utility>

namespace tenex {

template <class T>
class Expression;
template <class T>
class Tensor;
template <class T>
class Indexed;

namespace detail {

struct Handle;
struct TargetRecord;
template <class T>
class Storage;

/// The internals of the public classes, for the library's own code (never for users).
/// The functions are templates so that this header needs none of the classes it opens.
struct Access {
  /// The handle (node and linked set) of `e`.
  template <class T>
  static const Handle& handle(const Expression<T>& e) {
    return e.handle_;
  }
  /// An expression of class C (Chip<T>, Operand<T>, ...) over `handle`, through C's private
  /// constructor.
  template <class C, class H>
  static C make(H&& handle) {
    return C(std::forward<H>(handle));
  }
  /// The storage of `t`; taking it counts as sharing it (the next non-const data() copies).
  template <class T>
  static std::shared_ptr<Storage<T>> storage(const Tensor<T>& t) {
    return t.storage();
  }
  /// Replaces the value of `t` (a write: no other thread may use `t` meanwhile).
  template <class T>
  static void set_storage(Tensor<T>& t, std::shared_ptr<Storage<T>> storage) {
    t.set_storage(std::move(storage));
  }
  /// What the target object `target` remembers of its last assignment (null until it is
  /// first assigned to: most Indexed objects are operands).
  template <class T>
  static std::shared_ptr<TargetRecord>& target_record(const Indexed<T>& target) {
    return target.record_;
  }
  /// The state behind a tenex::dist::Context (C is that class; a template so that this header
  /// needs no distributed header).
  template <class C>
  static const auto& dist_context(const C& context) {
    return context.impl_;
  }
};

}  // namespace detail
}  // namespace tenex
