#include "tenex/runtime/plan_cache.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>
#include <typeinfo>
#include <unordered_map>
#include <utility>

#include <unistd.h>  // environ

#include "tenex/expression/detail/node.hpp"
#include "tenex/sparse/sparse_map.hpp"

namespace tenex::detail {

namespace {

/// Numbers pointers in the order first met: a linear scan of an inline array while few (the
/// common tiny set, with no allocation), a hash map beyond.
class Numbering {
 public:
  static constexpr std::size_t npos = Schedule::unbound;
  std::size_t find(const void* p) const {
    if (count_ > inline_.size()) {
      auto it = map_.find(p);
      return it == map_.end() ? npos : it->second;
    }
    for (std::size_t i = 0; i < count_; ++i) {
      if (inline_[i] == p) return i;
    }
    return npos;
  }
  std::size_t add(const void* p) {
    const std::size_t id = count_++;
    if (id < inline_.size()) {
      inline_[id] = p;
      return id;
    }
    if (id == inline_.size()) {
      for (std::size_t i = 0; i < inline_.size(); ++i) map_.emplace(inline_[i], i);
    }
    map_.emplace(p, id);
    return id;
  }
  std::size_t size() const { return count_; }

 private:
  std::array<const void*, 32> inline_{};
  std::size_t count_ = 0;
  std::unordered_map<const void*, std::size_t> map_;
};

/// Appends the signature's fields to a byte string: a cursor into the string's own buffer,
/// grown by doubling, so that each field costs a bounds check and a copy.
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) { out_.resize(std::max<std::size_t>(out_.capacity(), 512)); }
  ~Writer() { out_.resize(used_); }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  void put(std::uint64_t v) { append(&v, sizeof v); }
  void put_double(double v) { append(&v, sizeof v); }
  void put(std::string_view text) {
    put(text.size());
    append(text.data(), text.size());
  }
  void put(const std::vector<std::string>& labels) {
    put(labels.size());
    for (const std::string& l : labels) put(std::string_view(l));
  }
  void put(const std::vector<std::size_t>& values) {
    put(values.size());
    append(values.data(), values.size() * sizeof(std::size_t));
  }

 private:
  void append(const void* data, std::size_t n) {
    if (used_ + n > out_.size()) out_.resize(std::max(2 * out_.size(), used_ + n));
    if (n) std::memcpy(out_.data() + used_, data, n);
    used_ += n;
  }

  std::string& out_;
  std::size_t used_ = 0;
};

// Node classes the signature knows; any other (a user class's fragment, a class added
// later and not listed here) makes the set uncacheable rather than wrong.
enum Tag : std::uint64_t {
  indexed = 1,
  multiplication,
  elementwise,
  scale,
  permutation,
  cholesky,
  decomposition,
  factor,
  slice,
  chip,
  power,
  inverse,
  inverse_power,
  spd_power,
  solve,
  map,
  extremum,
  reduction,
};

/// Appends what `node`'s emit() and child_keep() read beyond labels, extents and
/// children; false for a class the signature does not know.
bool put_typed(const ExprNode& node, Writer& w, Numbering& storages, std::vector<std::shared_ptr<void>>& bound) {
  // The library's node classes have one type_info each in this library: comparing their
  // addresses is exact here and spares a string comparison per class tried (a type_info
  // from elsewhere compares unequal, and the set is then just not cached).
  const std::type_info* type = &typeid(node);
  if (type == &typeid(IndexedNode)) {
    const auto& n = static_cast<const IndexedNode&>(node);
    if (!n.unreadable.empty() || !n.storage) return false;
    w.put(indexed);
    w.put(n.written);
    std::size_t slot = storages.find(n.storage.get());
    if (slot == Numbering::npos) {
      slot = storages.add(n.storage.get());
      bound.push_back(n.storage);
    }
    w.put(slot);
    return true;
  }
  if (type == &typeid(MultiplicationNode)) {
    w.put(multiplication);
    return true;
  }
  if (type == &typeid(ElementwiseNode)) {
    w.put(elementwise);
    w.put(static_cast<std::uint64_t>(static_cast<const ElementwiseNode&>(node).op));
    return true;
  }
  if (type == &typeid(ScaleNode)) {
    w.put(scale);
    w.put_double(static_cast<const ScaleNode&>(node).factor);
    return true;
  }
  if (type == &typeid(PermutationNode)) {
    w.put(permutation);
    return true;
  }
  if (type == &typeid(CholeskyNode)) {
    w.put(cholesky);
    w.put(static_cast<const CholeskyNode&>(node).upper ? 1 : 0);
    return true;
  }
  if (type == &typeid(DecompositionNode)) {
    w.put(decomposition);
    w.put(static_cast<std::uint64_t>(static_cast<const DecompositionNode&>(node).op));
    return true;
  }
  if (type == &typeid(FactorNode)) {
    w.put(factor);
    w.put(static_cast<const FactorNode&>(node).which);
    return true;
  }
  if (type == &typeid(SliceNode)) {
    const auto& n = static_cast<const SliceNode&>(node);
    w.put(slice);
    w.put(n.lo);
    w.put(n.hi);
    return true;
  }
  if (type == &typeid(ChipNode)) {
    const auto& n = static_cast<const ChipNode&>(node);
    w.put(chip);
    w.put(n.mode);
    w.put(n.index);
    return true;
  }
  if (type == &typeid(PowNode)) {
    w.put(power);
    w.put(static_cast<const PowNode&>(node).power);
    return true;
  }
  if (type == &typeid(InverseNode)) {
    w.put(inverse);
    return true;
  }
  if (type == &typeid(InversePowNode)) {
    w.put(inverse_power);
    w.put(static_cast<const InversePowNode&>(node).power);
    return true;
  }
  if (type == &typeid(SpdPowNode)) {
    w.put(spd_power);
    w.put_double(static_cast<const SpdPowNode&>(node).power);
    return true;
  }
  if (type == &typeid(SolveNode)) {
    w.put(solve);
    w.put(static_cast<const SolveNode&>(node).mode);
    return true;
  }
  if (type == &typeid(MapNode)) {
    const auto& n = static_cast<const MapNode&>(node);
    if (!n.functions.empty()) return false;  // a user's callable: a new object every statement
    w.put(map);
    w.put(n.program.size());
    for (const FusedInstr& in : n.program) {
      w.put(static_cast<std::uint64_t>(in.op));
      w.put(static_cast<std::uint64_t>(in.a));
      w.put(static_cast<std::uint64_t>(in.b));
      w.put_double(in.x);
      w.put_double(in.y);
    }
    return true;
  }
  if (type == &typeid(ExtremumNode)) {
    w.put(extremum);
    w.put(static_cast<std::uint64_t>(static_cast<const ExtremumNode&>(node).op));
    return true;
  }
  if (type == &typeid(ReductionNode)) {
    const auto& n = static_cast<const ReductionNode&>(node);
    w.put(reduction);
    w.put(static_cast<std::uint64_t>(n.op));
    w.put(n.reduced);
    return true;
  }
  return false;
}

/// Appends the expression DAG under `root` in post-order, each node once (a shared node is
/// referred to by its number), iteratively: an expression may be thousands deep.
bool put_expression(const NodePtr& root, Writer& w, Numbering& nodes, Numbering& storages,
                    std::vector<std::shared_ptr<void>>& bound) {
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
    if (!put_typed(*node, w, storages, bound)) return false;
    w.put(static_cast<std::uint64_t>(node->dtype));
    w.put(node->labels);
    w.put(node->extents);
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
  Writer w(key.bytes);
  Numbering nodes, storages;
  w.put(static_cast<std::uint64_t>(set.dtype));
  w.put(static_cast<std::uint64_t>(set.backend));
  w.put(settings);
  // Targets first, in program order: an operand reading a result of the set meets its
  // slot (the lowering then reads it from the statement that writes it).
  // A cancelled statement (a failed multi-target assignment undone) is not lowered, yet an
  // operand reading its target still builds it: rare enough not to describe.
  std::size_t live = 0;
  for (const Assignment& a : set.assignments) {
    if (a.cancelled && *a.cancelled) return false;
    if (!a.target || storages.find(a.target.get()) != Numbering::npos) return false;
    storages.add(a.target.get());
    key.storages.push_back(a.target);
    ++live;
  }
  w.put(live);
  for (const Assignment& a : set.assignments) {
    if (!put_expression(a.rhs, w, nodes, storages, key.storages)) return false;
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

std::shared_ptr<const CachedPlan> make_cached_plan(const SetKey& key, OpGraph& graph,
                                                   double written_contraction_flops) {
  Schedule schedule = schedule_of(graph);
  Numbering slots;  // the same numbering as the key's: key.storages is in slot order
  for (const auto& storage : key.storages) slots.add(storage.get());
  for (NodeId id = 0; id < graph.size(); ++id) {
    const OpNode& node = graph.node(id);
    if (!node.storage) continue;
    const std::size_t slot = slots.find(node.storage.get());
    if (slot == Numbering::npos) return nullptr;
    schedule.slot[id] = slot;
  }
  plan_buffer_hand_overs(graph, schedule);
  auto plan = std::make_shared<CachedPlan>();
  // The graph keeps no tensor: each storage becomes a token that owns nothing and is never
  // dereferenced (the executor binds slots), one per slot, so explain() still tells the
  // tensors of a plan apart.
  for (NodeId id = 0; id < graph.size(); ++id) {
    OpNode& node = graph.node(id);
    if (!node.storage) continue;
    void* token = reinterpret_cast<void*>(static_cast<std::uintptr_t>(schedule.slot[id] + 1) * 64);
    node.storage = std::shared_ptr<void>(std::shared_ptr<void>(), token);
  }
  plan->graph = std::move(graph);
  plan->schedule = std::move(schedule);
  plan->written_contraction_flops = written_contraction_flops;
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

PipelineEnvironment pipeline_environment() {
  PipelineEnvironment env;
  env.passes = std::string_view("", 1);
  constexpr std::string_view prefix = "TENEX_";
  std::array<bool, 4> seen{};
  for (char** entry = environ; entry && *entry; ++entry) {
    const char* text = *entry;
    if (text[0] != 'T' || std::strncmp(text, prefix.data(), prefix.size()) != 0) continue;
    const std::string_view item(text + prefix.size());
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view name = item.substr(0, equals), value = item.substr(equals + 1);
    // The first entry of a name counts, as for getenv.
    if (name == "PLAN_CACHE" && !seen[0]) {
      env.plan_cache = value != "0";
      seen[0] = true;
    } else if (name == "PASSES" && !seen[1]) {
      env.passes = value;
      seen[1] = true;
    } else if (name == "DUMP_GRAPH" && !seen[2]) {
      env.dump_graph = value;
      seen[2] = true;
    } else if (name == "BACKEND" && !seen[3]) {
      env.backend = value.data();  // the rest of the entry: null-terminated
      seen[3] = true;
    }
  }
  return env;
}

}  // namespace tenex::detail
