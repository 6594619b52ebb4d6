#pragma once

#include "tenex/backend/backend.hpp"

namespace tenex::detail {
void set_last_run_stats(const RunStats& stats);
}
