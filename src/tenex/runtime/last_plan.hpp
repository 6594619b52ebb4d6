// What the pipeline keeps of the last set it ran on this thread, for tenex::explain().
#pragma once

namespace tenex::detail {

struct Plan;

/// Keeps `plan` (the plan of the set just run, compile.hpp) as this thread's last plan, its
/// graph without the tensors: every storage becomes a pointer that owns nothing, kept only to
/// tell tensors apart (a cached plan's graph holds none and is shared, not copied). No
/// strings are built here; explain() builds them when it is called. `completed`: the set ran
/// to its end (RunStats are its own).
void keep_last_plan(Plan&& plan, bool completed) noexcept;

}  // namespace tenex::detail
