// tenex/plans.hpp — contraction plans kept across runs (FFTW's wisdom).
//
//   tenex::load_plans("plans.txt");   // plans measured by an earlier run: used at once
//   ...                               // contractions run (TENEX_PLAN_SEARCH=amortized|measure
//   tenex::save_plans("plans.txt");   //   measure alternatives; the fastest are kept)
//
// TENEX_PLAN_FILE=path does both: the file is loaded when the first contraction is planned and
// written (atomically) when the process ends normally. A file is only used on the CPU model,
// instruction set, thread count and tenex version that wrote it; each plan is checked against
// the plans this build enumerates for its shape, and dropped when it does not match.
#pragma once

#include <cstddef>
#include <string>

#include "tenex/export.hpp"

namespace tenex {

/// Writes the plans measured or loaded so far in this process, and the GEMM rates probed, to
/// `path`: a temporary file in the same folder, then renamed over `path`, so that a reader
/// never sees half a file. Throws tenex::Error when the file cannot be written (`path` is
/// left as it was).
///
///   tenex::save_plans("/var/tmp/tenex-plans.txt");
TENEX_API void save_plans(const std::string& path);

/// Reads the plans in `path` into this process's planner; contractions of their shapes run the
/// loaded plan from their next call, with no search. Returns how many plans were taken. A
/// missing, unreadable, corrupt or foreign file (another CPU model, instruction set, thread
/// count or tenex version) is not an error: nothing is taken, 0 is returned and
/// plan_file_status() says why.
///
///   if (tenex::load_plans("plans.txt") == 0) std::cout << tenex::plan_file_status();
TENEX_API std::size_t load_plans(const std::string& path);

/// What the planner does and what became of the last plan file read (by load_plans or
/// TENEX_PLAN_FILE): a line for the search mode (TENEX_PLAN_SEARCH, and whether its value named
/// no mode), a line for the file: "loaded N plans", "missing", "unreadable", "corrupt at line
/// L" or "foreign" with the reason.
///
///   std::cout << tenex::plan_file_status();
TENEX_API std::string plan_file_status();

}  // namespace tenex
