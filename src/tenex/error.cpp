#include "tenex/error.hpp"

#include "tenex/callable_exception.hpp"

namespace tenex {

Error::Error(const std::string& message) : std::runtime_error(message) {}
Error::~Error() = default;
ShapeError::~ShapeError() = default;
NumericalError::~NumericalError() = default;
BackendError::~BackendError() = default;
InternalError::~InternalError() = default;

namespace detail {
void throw_from_callable() { throw CallableException{std::current_exception()}; }
}  // namespace detail

}  // namespace tenex
