#include "tenex/expression/expression.hpp"

#include <optional>

#include "tenex/expression/detail/lowering.hpp"
#include "tenex/expression/detail/make.hpp"

namespace tenex {

namespace detail {

namespace {

/// A user's Nary over `operands`, labelled like their union, or as `labels` and `extents` declare.
template <class T>
Handle nary_handle(const std::vector<const Expression<T>*>& operands, const std::vector<std::string>* labels,
                   const std::vector<std::size_t>* extents) {
  auto node = std::make_shared<NaryNode>();
  std::vector<const Handle*> parts;
  for (const Expression<T>* e : operands) {
    NodePtr child = operand_node(*e);
    node->dtype = child->dtype;
    // One label, one extent, checked where the expression is written (as for a + b).
    for (const NodePtr& before : node->children) check_shared_extents("Nary", *before, *child);
    for (std::size_t i = 0; i < child->labels.size(); ++i) {
      if (!contains_label(node->labels, child->labels[i])) {
        node->labels.push_back(child->labels[i]);
        node->extents.push_back(child->extents[i]);
      }
    }
    node->children.push_back(std::move(child));
    parts.push_back(&Access::handle(*e));
  }
  if (labels) {
    const std::string text = join_labels(*labels);
    if (parse_labels(text) != *labels) {
      throw ShapeError("tenex: Nary: the declared labels \"" + text + "\" are not one label each");
    }
    if (labels->size() != extents->size()) {
      throw ShapeError("tenex: Nary: the declared labels \"" + text + "\" are " + std::to_string(labels->size()) +
                       " but the declared extents " + format_extents(*extents) + " are " +
                       std::to_string(extents->size()) + "; declare one extent a label");
    }
    for (std::size_t i = 0; i < labels->size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if ((*labels)[i] == (*labels)[j]) {
          throw ShapeError("tenex: Nary: the declared labels \"" + text + "\" repeat \"" + (*labels)[i] +
                           "\"; an expression's value has each label once");
        }
      }
    }
    node->labels = *labels;
    node->extents = *extents;
  }
  node->finish();
  std::shared_ptr<LinkedState> state;
  for (const Handle* part : parts)
    state = state ? LinkedState::merge(state, part->state) : LinkedState::root(part->state);
  if (!state) state = std::make_shared<LinkedState>(node->dtype);
  state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

}  // namespace

template <class T>
Handle make_nary(const std::vector<const Expression<T>*>& operands) {
  return nary_handle<T>(operands, nullptr, nullptr);
}

template <class T>
Handle make_nary(const std::vector<const Expression<T>*>& operands, std::vector<std::string> labels,
                 std::vector<std::size_t> extents) {
  return nary_handle<T>(operands, &labels, &extents);
}

template <class T>
std::vector<Operand<T>> operands_of(const Handle& handle) {
  std::vector<Operand<T>> out;
  if (!handle.node) return out;
  out.reserve(handle.node->children.size());
  for (const NodePtr& child : handle.node->children)
    out.push_back(Access::make<Operand<T>>(Handle{child, handle.state}));
  return out;
}

}  // namespace detail

template <class T>
Expression<T>::Expression(detail::Handle handle) : handle_(std::move(handle)) {}

template <class T>
Expression<T>::Expression(const Expression&) = default;
template <class T>
Expression<T>::Expression(Expression&&) noexcept = default;
template <class T>
Expression<T>& Expression<T>::operator=(const Expression&) = default;
template <class T>
Expression<T>& Expression<T>::operator=(Expression&&) noexcept = default;
template <class T>
Expression<T>::~Expression() = default;

template <class T>
const std::vector<std::string>& Expression<T>::labels() const {
  return detail::require_handle(handle_).node->labels;
}

template <class T>
const std::vector<std::size_t>& Expression<T>::extents() const {
  return detail::require_handle(handle_).node->extents;
}

template <class T>
std::string Expression<T>::to_string() const {
  return detail::require_handle(handle_).node->text();
}

template <class T>
NodeId Expression<T>::add_to_graph(OpGraph& graph) const {
  return lower_own_node(graph);
}

template <class T>
NodeId Expression<T>::lower_own_node(OpGraph& graph) const {
  const detail::NodePtr& own = detail::require_handle(handle_).node;
  own->check_readable();
  if (dynamic_cast<const detail::NaryNode*>(own.get())) {
    throw Error("tenex: the expression class " + std::string(name()) +
                " derives from Nary but does not override add_to_graph, so it has no meaning to evaluate");
  }
  // A product drawn on its own sums its repeated labels, as plain Einstein notation reads it.
  const detail::NodePtr node = detail::einstein_operand(own);
  return detail::lower_into(graph, node, detail::LinkedState::root(handle_.state)->sparse_maps());
}

template <class T>
const Expression<T>& Expression<T>::set_sparse_map(std::string_view from, std::string_view to,
                                                   const SparseMap& map) const {
  const std::string where = "tenex: set_sparse_map(\"" + std::string(from) + "\", \"" + std::string(to) + "\")";
  std::vector<std::string> source = detail::parse_labels(from);
  std::vector<std::string> target = detail::parse_labels(to);
  auto root = detail::LinkedState::root(detail::require_handle(handle_).state);
  if (root->has_run()) {
    throw Error(where +
                ": part of this linked set was already evaluated (a result was read early), and a map "
                "cannot apply to what already ran; register sparse maps before reading any result of the set");
  }
  std::vector<std::size_t> source_extents, target_extents;
  for (auto* group : {&source, &target}) {
    for (const std::string& label : *group) {
      const std::optional<std::size_t> extent = root->label_extent(label);
      if (!extent) throw ShapeError(where + ": label \"" + label + "\" does not occur in the linked set");
      (group == &source ? source_extents : target_extents).push_back(*extent);
    }
  }
  if (source.empty() || target.empty()) throw ShapeError(where + ": both sides need at least one label");
  for (const std::string& label : source) {
    if (detail::contains_label(target, label)) {
      throw ShapeError(where + ": label \"" + label + "\" is on both sides");
    }
  }
  if (!map.empty() &&
      (map.source_rank() != source.size() || (map.target_rank() != 0 && map.target_rank() != target.size()))) {
    throw ShapeError(where + ": the map relates tuples of " + std::to_string(map.source_rank()) + " and " +
                     std::to_string(map.target_rank()) + " indices but the labels name " +
                     std::to_string(source.size()) + " and " + std::to_string(target.size()) + " modes");
  }
  auto check = [&](const std::vector<std::size_t>& tuple, const std::vector<std::string>& labels,
                   const std::vector<std::size_t>& extents) {
    for (std::size_t d = 0; d < tuple.size(); ++d) {
      if (tuple[d] >= extents[d]) {
        throw ShapeError(where + ": index " + std::to_string(tuple[d]) + " of label \"" + labels[d] +
                         "\" is out of range for extent " + std::to_string(extents[d]));
      }
    }
  };
  // The bounds tell whether any index is out of range; the entries then say which.
  bool in_range = true;
  for (std::size_t d = 0; d < map.source_bounds().size(); ++d)
    in_range = in_range && map.source_bounds()[d] <= source_extents[d];
  for (std::size_t d = 0; d < map.target_bounds().size(); ++d)
    in_range = in_range && map.target_bounds()[d] <= target_extents[d];
  for (const auto& [src, targets] :
       in_range ? std::map<SparseMap::Index, std::set<SparseMap::Index>>{} : map.entries()) {
    check(src, source, source_extents);
    for (const auto& t : targets) check(t, target, target_extents);
  }
  // Two maps for the same modes must agree: which one held would depend on the order.
  for (const detail::RegisteredSparseMap& known : root->sparse_maps()) {
    if (known.source != source || known.target != target) continue;
    if (known.map->entries() == map.entries()) return *this;  // the same map again
    throw ShapeError(where + ": the map (" + std::to_string(map.pair_count()) + " pairs) conflicts with the map " +
                     detail::join_labels(source) + " -> " + detail::join_labels(target) + " set before (" +
                     std::to_string(known.map->pair_count()) +
                     " pairs) on this linked set; set one map per group of modes");
  }
  root->add_sparse_map({std::move(source), std::move(target), std::make_shared<const SparseMap>(map)});
  return *this;
}

#define TENEX_INSTANTIATE_EXPRESSION(T)                                                                       \
  template class Expression<T>;                                                                               \
  template class Operand<T>;                                                                                  \
  template class Nary<1, T>;                                                                                  \
  template class Nary<2, T>;                                                                                  \
  template TENEX_API detail::Handle detail::make_nary<T>(const std::vector<const Expression<T>*>&);           \
  template TENEX_API detail::Handle detail::make_nary<T>(const std::vector<const Expression<T>*>&,            \
                                                         std::vector<std::string>, std::vector<std::size_t>); \
  template TENEX_API std::vector<Operand<T>> detail::operands_of<T>(const detail::Handle&);
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_EXPRESSION)
#undef TENEX_INSTANTIATE_EXPRESSION

}  // namespace tenex
