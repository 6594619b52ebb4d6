// The setter behind tenex::last_truncation() (tenex/truncation.hpp), for the executor.
#pragma once

#include "tenex/truncation.hpp"

namespace tenex::detail {

/// Records what a truncated decomposition run on this thread kept.
void set_last_truncation(const TruncationResult& result) noexcept;

}  // namespace tenex::detail
