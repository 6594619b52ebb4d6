// The backend a set asks for, as the expression layer records it when a set is made.
#pragma once

#include <optional>

#include "tenex/backend_kind.hpp"

namespace tenex::detail {

/// set_default_backend's choice, or nullopt when TENEX_BACKEND decides: the pipeline reads
/// the variable once when the set runs (runtime/compile.hpp), not once per expression made.
std::optional<BackendKind> chosen_default_backend();

}  // namespace tenex::detail
