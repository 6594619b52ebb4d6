// The backend a set asks for, as the expression layer records it when a set is made.
#pragma once

#include <optional>

#include "tenex/backend_kind.hpp"

namespace tenex::detail {

struct BackendEntry;  // backend/registry.hpp

/// A backend asked for: a built-in kind, or a backend registered by name (a plugin's; `named`
/// is then its registry entry, which lives as long as the process).
struct BackendChoice {
  BackendKind kind = BackendKind::automatic;
  const BackendEntry* named = nullptr;
  bool operator==(const BackendChoice&) const = default;
};

/// set_default_backend's choice, or nullopt when TENEX_BACKEND decides: the pipeline reads
/// the variable once when the set runs (runtime/compile.hpp), not once per expression made.
std::optional<BackendChoice> chosen_default_backend();

}  // namespace tenex::detail
