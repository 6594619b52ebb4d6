#pragma once

#include "tenex/backend/backend.hpp"

#include <cstddef>
#include <string>

namespace tenex::detail {
void set_last_run_stats(const RunStats& stats);
/// The cap on intermediates of a set: set_memory_limit's, else TENEX_MEMORY_LIMIT's, else 0
/// (none). Throws BackendError when TENEX_MEMORY_LIMIT is malformed.
std::size_t memory_limit();
/// The same with TENEX_MEMORY_LIMIT's value given (null: unset), for a pipeline that reads
/// the environment once per set.
std::size_t memory_limit(const char* value_of_variable);
}  // namespace tenex::detail
