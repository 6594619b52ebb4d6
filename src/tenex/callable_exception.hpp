// What a tenex::map callable threw, on its way from the kernel that called it to the results
// of its set (runtime/pipeline.cpp), where every read rethrows the callable's own exception
// object, as std::future does. Wrapped so that it is told apart from an exception of the
// library's own, which becomes a tenex::Error. A set whose operand's set failed carries that
// stored error the same way (runtime/execute.cpp), so a later set's results rethrow the
// callable's exception too.
#pragma once

#include <exception>

#include "tenex/export.hpp"

namespace tenex::detail {

/// Thrown by throw_from_callable() (expression/elementwise.hpp); exported, so that the
/// backend plugins catch it too.
struct TENEX_API CallableException {
  std::exception_ptr error;
};

/// Throws CallableException with the exception being handled. Declared for users' code in
/// tenex/expression/elementwise.hpp, where tenex::map calls it; defined in error.cpp.
[[noreturn]] TENEX_API void throw_from_callable();

}  // namespace tenex::detail
