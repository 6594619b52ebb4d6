#include "tenex/error.hpp"

namespace tenex {

Error::Error(const std::string& message) : std::runtime_error(message) {}
Error::~Error() = default;
ShapeError::~ShapeError() = default;
NumericalError::~NumericalError() = default;
BackendError::~BackendError() = default;
InternalError::~InternalError() = default;

}  // namespace tenex
