// The scalar types the tests run over, from the library's own list
// (TENEX_FOR_EACH_SCALAR), as a std::tuple for TEST_CASE_TEMPLATE_APPLY.
#pragma once

#include <tuple>

#include <tenex/scalar.hpp>

namespace tenex_test {

#define TENEX_TEST_APPEND_TYPE(T) , T
template <class Void, class... T>
struct DropFirst {
  using type = std::tuple<T...>;
};
using Scalars = DropFirst<void TENEX_FOR_EACH_SCALAR(TENEX_TEST_APPEND_TYPE)>::type;
#undef TENEX_TEST_APPEND_TYPE

}  // namespace tenex_test
