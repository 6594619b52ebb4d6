#include "tenex/expression/detail/lowering.hpp"

#include <algorithm>
#include <list>
#include <set>
#include <string_view>
#include <typeinfo>
#include <unordered_map>

#include "tenex/error.hpp"
#include "tenex/labels.hpp"

namespace tenex::detail {

namespace {

std::string key_of(const std::vector<std::string>& keep) { return "keep:" + join_labels(keep); }

}  // namespace

// ---- ExprNode ------------------------------------------------------------------------

ExprNode::~ExprNode() {
  // Release the children without recursing: a node whose last owner is this one hands its
  // own children to the stack before it dies.
  std::vector<NodePtr> stack = std::move(children);
  if (snapshot) stack.push_back(std::move(snapshot));
  while (!stack.empty()) {
    NodePtr node = std::move(stack.back());
    stack.pop_back();
    if (node && node.use_count() == 1) {
      auto& mutable_node = const_cast<ExprNode&>(*node);
      for (NodePtr& child : mutable_node.children) stack.push_back(std::move(child));
      mutable_node.children.clear();
      if (mutable_node.snapshot) stack.push_back(std::move(mutable_node.snapshot));
    }
  }
}

std::vector<std::string> ExprNode::child_keep(std::size_t i, const std::vector<std::string>& keep) const {
  return filter_labels(children[i]->labels, keep);
}

std::string ExprNode::text() const { return describe(labels, extents); }

void ExprNode::finish() {
  implicit_is_labels = false;
  holds_sum = adds_terms(*this);
  const auto* decomposition = node_as<DecompositionNode>(*this);
  const auto* indexed = node_as<IndexedNode>(*this);
  holds_truncation = (decomposition && decomposition->truncation.truncated) || (indexed && !indexed->truncated.empty());
  for (const NodePtr& c : children) {
    holds_sum = holds_sum || c->holds_sum;
    holds_truncation = holds_truncation || c->holds_truncation;
  }
  if (is_product()) {
    // A MultiplicationNode's implicit labels come with its labels (product_labels); a scale
    // of a product has its product's.
    if (node_as<ScaleNode>(*this)) implicit = children[0]->implicit_labels();
    return;
  }
  // Exact type tests (the classes are final): cheaper than dynamic_cast on every node made.
  if (node_as<ElementwiseNode>(*this)) {
    auto is_implicit = [&](const std::string& l) {
      for (const NodePtr& c : children) {
        if (contains_label(c->implicit_labels(), l)) return true;
      }
      return false;
    };
    implicit.clear();
    if (std::all_of(labels.begin(), labels.end(), is_implicit)) {
      implicit_is_labels = true;  // no product term sums a label: no copy of the labels
      return;
    }
    for (const std::string& l : labels) {
      if (is_implicit(l)) implicit.push_back(l);
    }
    return;
  }
  if (node_as<ScaleNode>(*this)) {
    const ExprNode& child = *children[0];
    if (child.implicit_is_labels && child.labels == labels) {
      implicit.clear();
      implicit_is_labels = true;
      return;
    }
    implicit = child.implicit_labels();
    return;
  }
  implicit.clear();
  implicit_is_labels = true;
}

// ---- Lowering -------------------------------------------------------------------------

Lowering::Lowering(OpGraph& graph, DType dtype, Memo& memo) : graph_(graph), dtype_(dtype), memo_(memo) {}

const NodeId* Lowering::find(const void* object, const std::string& key) const {
  auto it = memo_.find(object);
  if (it == memo_.end()) return nullptr;
  const MemoSlots& slots = it->second;
  const MemoEntry* entry = nullptr;
  if (slots.key == key) {
    entry = &slots.entry;
  } else {
    for (const auto& [k, e] : slots.more) {
      if (k == key) entry = &e;
    }
  }
  if (!entry || entry->owner.expired() || entry->id >= graph_.size()) return nullptr;
  return &entry->id;
}

void Lowering::remember(const void* object, const std::string& key, NodeId id, std::weak_ptr<const void> owner) {
  MemoSlots& slots = memo_[object];
  if (slots.key.empty() || slots.key == key) {
    slots.key = key;
    slots.entry = MemoEntry{id, std::move(owner)};
    return;
  }
  for (auto& [k, entry] : slots.more) {
    if (k == key) {
      entry = MemoEntry{id, std::move(owner)};
      return;
    }
  }
  slots.more.emplace_back(key, MemoEntry{id, std::move(owner)});
}

NodeId Lowering::add(OpParams params, std::vector<std::string> labels, std::vector<std::size_t> extents,
                     const std::vector<NodeId>& operands, std::string note) {
  OpNode node;
  node.params = std::move(params);
  node.kind = op_kind_of_params(node.params);
  node.dtype = dtype_;
  node.labels = std::move(labels);
  node.extents = std::move(extents);
  node.note = std::move(note);
  return graph_.add_node(std::move(node), operands);
}

NodeId Lowering::reduce_to(NodeId id, const std::vector<std::string>& keep) {
  const OpNode& node = graph_.node(id);
  if (node.labels == keep) return id;
  std::vector<std::size_t> extents;
  for (const std::string& l : keep) {
    const std::size_t at = find_label(node.labels, l);
    if (at == node.labels.size()) {
      throw InternalError("tenex: graph building: label \"" + l + "\" is not in " +
                          describe(node.labels, node.extents));
    }
    extents.push_back(node.extents[at]);
  }
  return add(ReduceParams{}, keep, std::move(extents), {id});
}

NodeId Lowering::input(const std::shared_ptr<void>& storage, const std::vector<std::string>& written,
                       const std::vector<std::size_t>& extents, std::vector<std::size_t> truncated_modes) {
  // Inputs are shared per storage and labels; a shape operand (no storage) is its own.
  const std::string key = "input:" + join_labels(written);
  if (storage) {
    if (const NodeId* hit = find(storage.get(), key)) return *hit;
  }
  if (!storage && dtype_ != DType::shape) {
    throw InternalError("tenex: graph building: an operand " + describe(written, extents) + " carries no data");
  }
  std::vector<NodeId> operands;
  if (storage) {
    auto producer = producers_.find(storage.get());
    if (producer != producers_.end()) operands.push_back(build_assignment(*producer->second));
  }
  OpNode node;
  node.kind = OpKind::input;
  node.params = InputParams{std::move(truncated_modes)};
  node.dtype = dtype_;
  node.labels = written;
  node.extents = extents;
  NodeId id = graph_.add_node(std::move(node), operands);
  graph_.bind(id, storage);
  if (storage) remember(storage.get(), key, id, std::weak_ptr<const void>(storage));
  return id;
}

void Lowering::set_producers(const std::vector<Assignment>& batch) {
  producers_.reserve(batch.size());
  for (const Assignment& a : batch) producers_[a.target.get()] = &a;
}

NodeId Lowering::build(const NodePtr& root, const std::vector<std::string>& root_keep) {
  struct Frame {
    NodePtr node;
    std::vector<std::string> keep;
    std::string key;
    bool expanded = false;
    std::vector<std::vector<std::string>> child_keeps = {};
    std::vector<std::string> summed_from = {};  // set: this frame sums the node's wider value
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{root, root_keep, key_of(root_keep), false, {}, {}});
  NodeId result = 0;
  while (!stack.empty()) {
    Frame& frame = stack.back();
    if (const NodeId* hit = find(frame.node.get(), frame.key)) {
      result = *hit;
      stack.pop_back();
      continue;
    }
    if (!frame.expanded) {
      // The summation rule (docs/einstein.md): only a product sums labels itself (those on
      // two or more factors, and those of one factor, which is the same sum taken early).
      // Any other node yields its whole value, over every label it carries freely, and
      // what its consumer drops is summed from that value: Σ_j (a_ij + b_i), not
      // Σ_j a_ij + b_i.
      if (!frame.node->is_product()) {
        std::size_t more = 0;
        for (const std::string& l : frame.node->implicit_labels()) more += contains_label(frame.keep, l) ? 0 : 1;
        if (more > 0) {
          // In the node's own order: the sum after it permutes as it reduces.
          std::vector<std::string> wide;
          for (const std::string& l : frame.node->labels) {
            if (contains_label(frame.keep, l) || contains_label(frame.node->implicit_labels(), l)) wide.push_back(l);
          }
          std::vector<std::string> keep = std::move(frame.keep);
          std::string key = std::move(frame.key);
          const NodePtr node = frame.node;
          if (const NodeId* hit = find(node.get(), key_of(wide))) {
            result = reduce_to(*hit, keep);
            remember(node.get(), key, result, std::weak_ptr<const void>(node));
            stack.pop_back();
            continue;
          }
          // Build the wide value first (a frame of its own, memoized under its labels),
          // then sum it down to what was asked (this frame, expanded with no children).
          frame.keep = std::move(keep);
          frame.key = std::move(key);
          frame.expanded = true;
          frame.summed_from = wide;
          stack.push_back(Frame{node, wide, key_of(wide), false, {}, {}});
          continue;
        }
      }
      frame.expanded = true;
      const std::size_t n = frame.node->children.size();
      frame.child_keeps.resize(n);
      for (std::size_t i = 0; i < n; ++i) frame.child_keeps[i] = frame.node->child_keep(i, frame.keep);
      // Push in reverse so the first child is built first (node ids follow operand order).
      const NodePtr node = frame.node;
      const std::vector<std::vector<std::string>> keeps = frame.child_keeps;
      for (std::size_t i = n; i-- > 0;) {
        stack.push_back(Frame{node->children[i], keeps[i], key_of(keeps[i]), false, {}, {}});
      }
      continue;
    }
    if (!frame.summed_from.empty()) {
      const NodeId* wide = find(frame.node.get(), key_of(frame.summed_from));
      if (!wide) throw InternalError("tenex: graph building: " + frame.node->text() + " was not built");
      result = reduce_to(*wide, frame.keep);
      remember(frame.node.get(), frame.key, result, std::weak_ptr<const void>(frame.node));
      stack.pop_back();
      continue;
    }
    std::vector<NodeId> children;
    for (std::size_t i = 0; i < frame.node->children.size(); ++i) {
      const NodeId* id = find(frame.node->children[i].get(), key_of(frame.child_keeps[i]));
      if (!id) throw InternalError("tenex: graph building: a child of " + frame.node->text() + " was not built");
      children.push_back(*id);
    }
    result = frame.node->emit(*this, frame.keep, children);
    remember(frame.node.get(), frame.key, result, std::weak_ptr<const void>(frame.node));
    stack.pop_back();
  }
  return result;
}

NodeId Lowering::build_assignment(const Assignment& a) {
  if (const NodeId* hit = find(a.target.get(), "output")) return *hit;
  // Ask for the value in the target's order: the last kernel writes it in place and the
  // output hands the buffer over instead of permuting it.
  NodeId value = build(a.rhs, a.rhs_labels);
  std::vector<std::size_t> extents;
  for (const std::string& l : a.rhs_labels) extents.push_back(a.rhs->extents.at(find_label(a.rhs->labels, l)));
  OutputParams params;
  for (const std::string& l : a.rhs_labels)
    params.operand_labels.push_back(a.target_labels[find_label(a.rhs_labels, l)]);
  OpNode out;
  out.kind = OpKind::output;
  out.params = std::move(params);
  out.dtype = dtype_;
  out.labels = a.target_labels;
  out.extents = std::move(extents);
  out.note = "target";
  NodeId id = graph_.add_node(std::move(out), {value});
  graph_.bind(id, a.target);
  remember(a.target.get(), "output", id, std::weak_ptr<const void>(a.target));
  return id;
}

void Lowering::register_sparse_maps(const std::vector<RegisteredSparseMap>& maps) {
  std::vector<std::size_t> ids;
  for (const RegisteredSparseMap& m : maps) {
    std::size_t found = graph_.sparse_maps().size();
    for (std::size_t i = 0; i < graph_.sparse_maps().size(); ++i) {
      const SparseMapUse& use = graph_.sparse_maps()[i];
      if (use.map == m.map && use.source == m.source && use.target == m.target) found = i;
    }
    if (found == graph_.sparse_maps().size()) found = graph_.add_sparse_map({m.source, m.target, m.map});
    ids.push_back(found);
  }
  if (ids.empty()) return;
  for (NodeId id = 0; id < graph_.size(); ++id) {
    OpNode& node = graph_.node(id);
    // Packed decompositions hold several factors: a map on their labels means nothing there.
    if (packed_factor_count(node.kind) > 0 || node.kind == OpKind::mask) continue;
    std::set<std::string> unique(node.labels.begin(), node.labels.end());
    if (unique.size() != node.labels.size()) continue;
    for (std::size_t m : ids) {
      const SparseMapUse& use = graph_.sparse_maps()[m];
      bool all = true;
      for (const auto& l : use.source) all = all && unique.count(l);
      for (const auto& l : use.target) all = all && unique.count(l);
      if (all && std::find(node.sparse_maps.begin(), node.sparse_maps.end(), m) == node.sparse_maps.end()) {
        node.sparse_maps.push_back(m);
      }
    }
  }
}

// ---- entry points ---------------------------------------------------------------------

NodeId lower_into(OpGraph& graph, const NodePtr& node, const std::vector<RegisteredSparseMap>& maps) {
  // Memos of the graphs this thread drew into lately, by the graph's serial number (never
  // reused), so add_to_graph called twice on one graph builds a shared node once.
  struct Cached {
    std::uint64_t serial;
    Lowering::Memo memo;
  };
  thread_local std::list<Cached> recent;
  constexpr std::size_t max_recent = 16;
  auto it = std::find_if(recent.begin(), recent.end(), [&](const Cached& c) { return c.serial == graph.serial(); });
  if (it == recent.end()) {
    recent.push_front(Cached{graph.serial(), {}});
    if (recent.size() > max_recent) recent.pop_back();
  } else {
    recent.splice(recent.begin(), recent, it);
  }
  Lowering lowering(graph, node->dtype, recent.front().memo);
  NodeId id = lowering.build(node, node->labels);
  lowering.register_sparse_maps(maps);
  return id;
}

OpGraph build_set_graph(DType dtype, const std::vector<Assignment>& batch,
                        const std::vector<RegisteredSparseMap>& maps) {
  OpGraph graph;
  Lowering::Memo memo;
  Lowering lowering(graph, dtype, memo);
  lowering.set_producers(batch);
  // Program order: a statement's operands were produced by statements recorded before it.
  for (const Assignment& a : batch) {
    if (!a.cancelled || !*a.cancelled) lowering.build_assignment(a);
  }
  lowering.register_sparse_maps(maps);
  return graph;
}

// ---- the nodes every set has ------------------------------------------------------------

NodeId IndexedNode::emit(Lowering& lowering, const std::vector<std::string>& keep, const std::vector<NodeId>&) const {
  const std::vector<std::string>& written = written_labels();
  std::vector<std::size_t> written_extents, truncated_modes;
  for (const std::string& l : written) written_extents.push_back(extents.at(find_label(labels, l)));
  for (std::size_t d = 0; d < written.size(); ++d) {
    if (contains_label(truncated, written[d])) truncated_modes.push_back(d);
  }
  NodeId in = lowering.input(storage, written, written_extents, std::move(truncated_modes));
  return lowering.reduce_to(in, keep);
}

std::string IndexedNode::text() const {
  const std::vector<std::string>& written = written_labels();
  if (!written.empty() && extents.size() == labels.size()) {
    std::vector<std::size_t> written_extents;
    for (const std::string& l : written) {
      const std::size_t at = find_label(labels, l);
      if (at == labels.size()) return describe(labels, extents);
      written_extents.push_back(extents[at]);
    }
    return describe(written, written_extents);
  }
  return describe(labels, extents);
}

void IndexedNode::check_readable() const {
  if (unreadable.empty()) return;
  if (shape_error) throw ShapeError(unreadable);
  throw Error(unreadable);
}

NodeId NaryNode::emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const {
  throw Error("tenex: the expression class " + class_name +
              " derives from Nary but does not override add_to_graph, so it has no meaning to evaluate");
}

NodeId FragmentNode::emit(Lowering& lowering, const std::vector<std::string>& keep, const std::vector<NodeId>&) const {
  // Splice the user's graph in: its inputs join this graph's (and read results this set
  // produces), every other node is copied with its operands renumbered.
  const OpGraph& from = *fragment;
  std::vector<NodeId> mapping(from.size(), 0);
  std::vector<bool> needed(from.size(), false);
  std::vector<NodeId> pending{result};
  while (!pending.empty()) {
    NodeId id = pending.back();
    pending.pop_back();
    if (needed[id]) continue;
    needed[id] = true;
    for (NodeId op : from.operands(id)) pending.push_back(op);
  }
  for (NodeId id : from.topological_order()) {
    if (!needed[id]) continue;
    const OpNode& node = from.node(id);
    if (node.kind == OpKind::input) {
      mapping[id] =
          lowering.input(from.binding(id), node.labels, node.extents, node.get<InputParams>().truncated_modes);
      continue;
    }
    if (node.kind == OpKind::output) {
      throw Error("tenex: the expression class " + class_name +
                  " drew an output node in add_to_graph; "
                  "an expression's graph ends in its value, not in an assignment");
    }
    OpNode copy = node;
    copy.sparse_maps.clear();
    copy.dtype = lowering.dtype();
    std::vector<NodeId> operands;
    for (NodeId op : from.operands(id)) operands.push_back(mapping[op]);
    mapping[id] = lowering.graph().add_node(std::move(copy), operands);
  }
  return lowering.reduce_to(mapping[result], keep);
}

}  // namespace tenex::detail
