// The plan cache: a set whose statements have the same structure and extents as one run
// before (a loop body) reuses that set's optimized graph and schedule instead of building
// and optimizing its graph again.
//
// The key is the set's structural signature, read from its recorded statements without
// building anything: per expression node its class and typed data (factor, bounds,
// power...), labels and extents, and which nodes it shares; per statement the target's
// labels; which operands and targets are the same storage (a("i,j") = a("j,i") differs
// from c("i,j") = a("j,i")); the sparse maps by the identity of their entries (shared by copies, copied on change); the
// element type, the backend asked for and the settings the passes read. Everything the lowering and the passes look at
// is in it, so a hit gives the graph a fresh build would. Tensor values are not in it: the cached graph holds no
// storage, and each run binds the set's own storages to its inputs and outputs by slot (the order in which the
// signature met them).
//
// Each node class writes its own data (ExprNode::write_signature), after the class itself.
// Sets the signature cannot describe are not cached (they run as before): a node whose class
// does not write a signature (the default: a user class's own lowering, a class added
// without one), a tenex::map callable, a cancelled statement, and sets of more than
// `max_signature_nodes` expression nodes. Anything else compile() comes to read (an option,
// a memory limit, the backend chosen) must join the `settings` given to make_set_key.
//
// Bounded (least recently used, plan_cache_capacity entries), shared by all threads under one
// mutex. TENEX_PLAN_CACHE=0 turns it off (read by every set).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/expression/detail/linked_state.hpp"
#include "tenex/graph/op_graph.hpp"
#include "tenex/runtime/executor.hpp"

namespace tenex::detail {

/// A set's structural signature (see above) and the storages it met, by slot.
struct SetKey {
  std::string bytes;
  std::uint64_t hash = 0;
  std::vector<std::shared_ptr<void>> storages;  // not part of the key: what a run binds
};

/// An optimized graph ready to run again with other storages.
struct CachedPlan {
  OpGraph graph;                          // optimized; its inputs and outputs hold no storage
  Schedule schedule;                      // schedule.slot binds them to a SetKey's storages
  double written_contraction_flops = -1;  // for explain(): see keep_last_plan
  std::string sparse_note;                // compile()'s decisions for the backend it was made for
  std::string placement_notes;
};

inline constexpr std::size_t max_signature_nodes = 4096;

/// The signature of `set` with `settings` (the values of whatever else the passes read),
/// or false when the set cannot be cached.
bool make_set_key(const SetRecord& set, std::string_view settings, SetKey& key);

/// Makes `graph` (the optimized graph of the set `key` describes) a cached plan: its
/// storages are replaced by slots of key.storages. Null when an input or output reads a
/// storage the signature did not meet (the set is then run from `graph`, untouched).
std::shared_ptr<const CachedPlan> make_cached_plan(const SetKey& key, OpGraph& graph,
                                                   double written_contraction_flops = -1, std::string sparse_note = {},
                                                   std::string placement_notes = {});

inline constexpr std::size_t plan_cache_capacity = 256;

/// The plan cached for `key`, or null; a hit becomes the most recently used.
std::shared_ptr<const CachedPlan> find_plan(const SetKey& key);
/// Caches `plan` for `key`, dropping the least recently used past plan_cache_capacity.
void remember_plan(const SetKey& key, std::shared_ptr<const CachedPlan> plan);

}  // namespace tenex::detail
