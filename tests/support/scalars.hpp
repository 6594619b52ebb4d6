// The scalar types the tests run over, from the library's own lists
// (TENEX_FOR_EACH_REAL_SCALAR, TENEX_FOR_EACH_COMPLEX_SCALAR), as std::tuples for
// TEST_CASE_TEMPLATE_APPLY: Scalars (float, double), ComplexScalars and AllScalars.
#pragma once

#include <complex>
#include <tuple>

#include <tenex/scalar.hpp>

namespace tenex_test {

#define TENEX_TEST_APPEND_TYPE(T) , T
template <class Void, class... T>
struct DropFirst {
  using type = std::tuple<T...>;
};
using Scalars = DropFirst<void TENEX_FOR_EACH_REAL_SCALAR(TENEX_TEST_APPEND_TYPE)>::type;
using ComplexScalars = DropFirst<void TENEX_FOR_EACH_COMPLEX_SCALAR(TENEX_TEST_APPEND_TYPE)>::type;
using AllScalars = DropFirst<void TENEX_FOR_EACH_SCALAR(TENEX_TEST_APPEND_TYPE)>::type;
#undef TENEX_TEST_APPEND_TYPE

}  // namespace tenex_test
