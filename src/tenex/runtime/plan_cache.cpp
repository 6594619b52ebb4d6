#include "tenex/runtime/plan_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <typeinfo>
#include <unordered_map>
#include <utility>

#include "tenex/expression/detail/node.hpp"
#include "tenex/expression/detail/signature.hpp"
#include "tenex/sparse/sparse_map.hpp"

namespace tenex::detail {

namespace {

/// Appends the expression DAG under `root` in post-order, each node once (a shared node is
/// referred to by its number), iteratively: an expression may be thousands deep.
bool put_expression(const NodePtr& root, SignatureWriter& w, Numbering& nodes) {
  struct Frame {
    const ExprNode* node;
    bool expanded;
  };
  // The walk's stack, kept by the thread between sets (nothing the walk calls writes a key).
  thread_local std::vector<Frame> stack;
  stack.clear();
  stack.push_back({root.get(), false});
  while (!stack.empty()) {
    Frame& frame = stack.back();
    const ExprNode* node = frame.node;
    if (nodes.find(node) != Numbering::npos) {
      stack.pop_back();
      continue;
    }
    if (!frame.expanded) {
      frame.expanded = true;
      // Deeper than a cacheable set can be (each node has at most a few children here).
      if (stack.size() + node->children.size() > 2 * max_signature_nodes) return false;
      for (std::size_t i = node->children.size(); i-- > 0;) stack.push_back({node->children[i].get(), false});
      continue;
    }
    stack.pop_back();
    if (nodes.size() >= max_signature_nodes) return false;
    // The class, then its own data: the type_info's address is one per class in a process (a
    // class of another library may have a second one, which only misses the cache).
    w.put(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&typeid(*node))));
    if (!node->write_signature(w)) return false;
    w.put(static_cast<std::uint64_t>(node->dtype));
    // A product's labels and extents are its factors' union, written with them: a chain's
    // would be O(N^2) to write.
    if (!node_as<MultiplicationNode>(*node)) {
      w.put(node->labels);
      w.put(node->extents);
    }
    w.put(node->children.size());
    for (const NodePtr& child : node->children) w.put(nodes.find(child.get()));
    nodes.add(node);
  }
  w.put(nodes.find(root.get()));
  return true;
}

std::uint64_t hash_bytes(std::string_view bytes) {
  // FNV-1a over 8-byte words, then a final mix: fast, and equality is checked anyway.
  std::uint64_t h = 1469598103934665603ull;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * 1099511628211ull;
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

struct KeyView {
  std::uint64_t hash;
  std::string_view bytes;
  bool operator==(const KeyView& other) const { return hash == other.hash && bytes == other.bytes; }
};
struct KeyHash {
  std::size_t operator()(const KeyView& k) const { return static_cast<std::size_t>(k.hash); }
};

struct Cache {
  struct Entry {
    std::string bytes;
    std::uint64_t hash;
    std::shared_ptr<const CachedPlan> plan;
  };
  std::mutex mutex;
  std::list<Entry> entries;  // most recently used first; list nodes never move
  std::unordered_map<KeyView, std::list<Entry>::iterator, KeyHash> index;
};

Cache& cache() {
  static Cache* instance = new Cache;  // never destroyed: sets may run at exit
  return *instance;
}

}  // namespace

namespace {

bool write_set_key(const SetRecord& set, std::string_view settings, SetKey& key) {
  key.bytes.clear();
  key.storages.clear();
  key.storages.reserve(8);
  SignatureWriter w(key.bytes, key.storages);
  Numbering nodes;
  w.put(static_cast<std::uint64_t>(set.dtype));
  w.put(static_cast<std::uint64_t>(set.backend.kind));
  w.put(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(set.backend.named)));
  w.put(settings);
  // Targets first, in program order: an operand reading a result of the set meets its
  // slot (the lowering then reads it from the statement that writes it).
  // A cancelled statement (a failed multi-target assignment undone) is not lowered, yet an
  // operand reading its target still builds it: rare enough not to describe.
  std::size_t live = 0;
  for (const Assignment& a : set.assignments) {
    if (a.cancelled && *a.cancelled) return false;
    if (!a.target || w.find_storage(a.target.get()) != Numbering::npos) return false;
    w.bind(a.target);
    ++live;
  }
  w.put(live);
  for (const Assignment& a : set.assignments) {
    if (!put_expression(a.rhs, w, nodes)) return false;
    w.put(a.rhs_labels);
    w.put(a.target_labels);
  }
  w.put(set.sparse_maps.size());
  for (const RegisteredSparseMap& m : set.sparse_maps) {
    w.put(m.source);
    w.put(m.target);
    w.put(m.map->source_rank());
    w.put(m.map->target_rank());
    // The entries by identity: copies of a map share them until one changes, and the plan
    // this key finds holds them, so the address cannot name other entries while it is cached.
    w.put(static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(m.map->content_id())));
  }
  return true;
}

}  // namespace

bool make_set_key(const SetRecord& set, std::string_view settings, SetKey& key) {
  if (!write_set_key(set, settings, key)) return false;  // the writer has trimmed key.bytes
  key.hash = hash_bytes(key.bytes);
  return true;
}

std::shared_ptr<const CachedPlan> make_cached_plan(const SetKey& key, OpGraph& graph, double written_contraction_flops,
                                                   std::string sparse_note, std::string placement_notes) {
  Schedule schedule = schedule_of(graph);
  Numbering slots;  // the same numbering as the key's: key.storages is in slot order
  for (const auto& storage : key.storages) slots.add(storage.get());
  for (NodeId id = 0; id < graph.size(); ++id) {
    const std::shared_ptr<void>& value = graph.binding(id);
    if (!value) continue;
    const std::size_t slot = slots.find(value.get());
    if (slot == Numbering::npos) return nullptr;
    schedule.slot[id] = slot;
  }
  plan_buffer_hand_overs(graph, schedule);
  auto plan = std::make_shared<CachedPlan>();
  // The graph keeps no tensor: each storage becomes a token that owns nothing and is never
  // dereferenced (the executor binds slots), one per slot, so explain() still tells the
  // tensors of a plan apart.
  for (NodeId id = 0; id < graph.size(); ++id) {
    if (!graph.binding(id)) continue;
    void* token = reinterpret_cast<void*>(static_cast<std::uintptr_t>(schedule.slot[id] + 1) * 64);
    graph.bind(id, std::shared_ptr<void>(std::shared_ptr<void>(), token));
  }
  plan->graph = std::move(graph);
  plan->schedule = std::move(schedule);
  plan->written_contraction_flops = written_contraction_flops;
  plan->sparse_note = std::move(sparse_note);
  plan->placement_notes = std::move(placement_notes);
  return plan;
}

std::shared_ptr<const CachedPlan> find_plan(const SetKey& key) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.index.find(KeyView{key.hash, key.bytes});
  if (it == c.index.end()) return nullptr;
  c.entries.splice(c.entries.begin(), c.entries, it->second);
  return it->second->plan;
}

void remember_plan(const SetKey& key, std::shared_ptr<const CachedPlan> plan) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.index.count(KeyView{key.hash, key.bytes})) return;  // another thread was first
  c.entries.push_front(Cache::Entry{key.bytes, key.hash, std::move(plan)});
  c.index.emplace(KeyView{c.entries.front().hash, c.entries.front().bytes}, c.entries.begin());
  while (c.entries.size() > plan_cache_capacity) {
    const Cache::Entry& last = c.entries.back();
    c.index.erase(KeyView{last.hash, last.bytes});
    c.entries.pop_back();
  }
}


}  // namespace tenex::detail
