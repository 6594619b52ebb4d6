#include "tenex/expression/indexed.hpp"

#include "tenex/expression/addition.hpp"
#include "tenex/expression/assign_to.hpp"
#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/subtraction.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex {

namespace detail {

namespace {

/// Unique labels of `written` in order of first appearance, with their extents; a
/// repeated label with two extents makes the node unreadable.
void fill_labels(ExprNode& node, const std::vector<std::size_t>& extents) {
  for (std::size_t i = 0; i < node.written.size(); ++i) {
    std::size_t at = find_label(node.labels, node.written[i]);
    if (at == node.labels.size()) {
      node.labels.push_back(node.written[i]);
      node.extents.push_back(extents[i]);
    } else if (node.extents[at] != extents[i] && node.unreadable.empty()) {
      node.unreadable = "tenex: labels \"" + join_labels(node.written) + "\": label \"" + node.written[i] +
                        "\" has extent " + std::to_string(node.extents[at]) + " and extent " +
                        std::to_string(extents[i]);
    }
  }
}

std::string rank_mismatch(const std::vector<std::string>& written, const Shape& shape) {
  return "tenex: labels \"" + join_labels(written) + "\" name " + std::to_string(written.size()) +
         " modes but the tensor has rank " + std::to_string(shape.rank()) + " with extents " + shape.to_string();
}

template <class S>
Handle make_indexed(Tensor<S>& tensor, std::vector<std::string> written) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::indexed;
  node->dtype = dtype_of<Tensor<S>>();
  node->written = std::move(written);
  auto state = std::make_shared<LinkedState>(node->dtype);
  const auto& storage = tensor.storage();
  if (!storage) {
    node->unreadable = "tenex: the tensor labelled \"" + join_labels(node->written) +
                       "\" has no value: give it a shape or assign to it first";
    for (const auto& l : node->written) {
      if (!contains_label(node->labels, l)) {
        node->labels.push_back(l);
        node->extents.push_back(0);
      }
    }
    return Handle{std::move(node), std::move(state)};
  }
  node->storage = storage;
  const Shape& shape = storage->shape();
  if (shape.rank() != node->written.size()) {
    node->unreadable = rank_mismatch(node->written, shape);
  } else {
    fill_labels(*node, shape.extents());
  }
  if (storage->pending()) {
    // Reading a pending result links this expression to the set that produces it.
    if (auto producer = storage->producer()) state = LinkedState::merge(producer, state);
  }
  state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

Handle make_indexed(Shape& shape, std::vector<std::string> written) {
  auto node = std::make_shared<ExprNode>();
  node->kind = ExprKind::indexed;
  node->dtype = DType::shape;
  node->written = std::move(written);
  if (shape.rank() != node->written.size()) {
    node->unreadable = rank_mismatch(node->written, shape);
  } else {
    fill_labels(*node, shape.extents());
  }
  auto state = std::make_shared<LinkedState>(DType::shape);
  state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

}  // namespace

}  // namespace detail

template <class T>
Indexed<T>::Indexed(T& object, std::string_view labels)
    : Expression<T>(detail::make_indexed(object, detail::parse_labels(labels))), object_(&object) {
  written_ = this->handle_.node->written;
}

template <class T>
Indexed<T>::Indexed(const Indexed& other) = default;
template <class T>
Indexed<T>::Indexed(Indexed&& other) noexcept = default;
template <class T>
Indexed<T>::~Indexed() = default;

template <class T>
Indexed<T>& Indexed<T>::operator=(const Indexed& rhs) {
  AssignTo<T>(*this, *object_, rhs, AssignMode::replace);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator=(const Expression<T>& rhs) {
  AssignTo<T>(*this, *object_, rhs, AssignMode::replace);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator+=(const Expression<T>& rhs) {
  AssignTo<T>(*this, *object_, rhs, AssignMode::add);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator-=(const Expression<T>& rhs) {
  AssignTo<T>(*this, *object_, rhs, AssignMode::subtract);
  return *this;
}

namespace detail {

namespace {

struct TargetPlan {
  std::vector<std::string> target_labels;
  std::vector<std::string> rhs_labels;
  std::vector<std::size_t> extents;
};

TargetPlan plan_target(const std::vector<std::string>& target, const ExprNode& rhs) {
  TargetPlan plan;
  plan.target_labels = target;
  for (std::size_t i = 0; i < target.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (target[i] == target[j]) {
        throw ShapeError("tenex: assignment target \"" + join_labels(target) + "\" repeats label \"" + target[i] +
                         "\"");
      }
    }
  }
  // Labels the right side produces bind by name; the target's other labels name the
  // new modes of decompositions (the inner mode of QR and SVD), in order.
  std::vector<std::string> unnamed;
  for (const std::string& l : rhs.labels) {
    if (is_new_mode_label(l)) unnamed.push_back(l);
  }
  std::size_t next_unnamed = 0;
  for (const std::string& t : target) {
    std::size_t at = find_label(rhs.labels, t);
    if (at == rhs.labels.size()) {
      if (next_unnamed == unnamed.size()) {
        throw ShapeError("tenex: assignment target \"" + join_labels(target) + "\": label \"" + t +
                         "\" is not produced by the right side " + rhs.text());
      }
      at = find_label(rhs.labels, unnamed[next_unnamed++]);
    }
    plan.rhs_labels.push_back(rhs.labels[at]);
    plan.extents.push_back(rhs.extents[at]);
  }
  return plan;
}

template <class S>
void record(Tensor<S>& object, Handle& handle, const TargetPlan& plan) {
  auto storage = std::make_shared<Storage<S>>(Shape(plan.extents), Storage<S>::Init::deferred);
  auto root = LinkedState::root(handle.state);
  root->record(Assignment{handle.node, plan.rhs_labels, plan.target_labels, storage}, root);
  object.set_storage(std::move(storage));
}

void record(Shape& object, Handle&, const TargetPlan& plan) {
  // A shape set needs no data: its result is known now.
  object = Shape(plan.extents);
}

}  // namespace

template <class T>
Handle make_assignment(const Indexed<T>& target, T& object, const Expression<T>& rhs, AssignMode mode) {
  NodePtr value = operand_node(rhs);
  Handle handle = make_handle(std::const_pointer_cast<ExprNode>(value), {&rhs.handle(), &target.handle()});
  if (mode != AssignMode::replace) {
    // c += e is c = c + e, the right side reading the old value of c.
    Handle combined = mode == AssignMode::add ? Addition<T>(target, rhs).handle()
                                              : Subtraction<T>(target, rhs).handle();
    handle.node = combined.node;
    handle.state = LinkedState::merge(handle.state, combined.state);
  }
  TargetPlan plan = plan_target(target.written_labels(), *handle.node);
  record(object, handle, plan);
  return handle;
}

}  // namespace detail

template <class T>
AssignTo<T>::AssignTo(const Indexed<T>& target, T& object, const Expression<T>& rhs, AssignMode mode)
    : Nary<1, T>(detail::make_assignment(target, object, rhs, mode)) {}

#define TENEX_INSTANTIATE_INDEXED(T)    \
  template class Indexed<T>;  \
  template class AssignTo<T>;
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_INDEXED)
#undef TENEX_INSTANTIATE_INDEXED

}  // namespace tenex
