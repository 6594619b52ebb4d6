// tenex/expression/pow.hpp — integer power of a square matrix.
//
//   p("i,j") = tenex::pow(a("i,j"), 3);            // a a a; n = 0 gives the identity
#pragma once

#include <cstddef>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "tenex/expression/expression.hpp"

namespace tenex {

template <class T>
class TENEX_API Pow : public Nary<1, T> {
 public:
  explicit Pow(detail::Handle handle) : Nary<1, T>(std::move(handle)) {}
  std::string_view name() const override { return "Pow"; }
};

/// Throws ShapeError unless `a` is a square matrix.
template <class T> Pow<T> pow(const Expression<T>& a, unsigned n);

#define TENEX_DECLARE_POW(T) \
  extern template class Pow<T>; \
  extern template TENEX_API Pow<T> pow<T>(const Expression<T>&, unsigned);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_POW)
#undef TENEX_DECLARE_POW

}  // namespace tenex
