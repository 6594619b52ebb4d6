#include "tenex/expression/indexed.hpp"

#include "tenex/expression/addition.hpp"
#include "tenex/expression/assign_to.hpp"
#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/division.hpp"
#include "tenex/expression/elementwise.hpp"
#include "tenex/expression/multiplication.hpp"
#include "tenex/expression/scale.hpp"
#include "tenex/expression/subtraction.hpp"
#include "tenex/tensor/storage.hpp"

#include <functional>
#include <type_traits>

namespace tenex {

namespace detail {

struct TargetRecord {
  std::shared_ptr<bool> cancelled;
  std::function<void()> undo;
};

/// Validates and records `target = rhs` (or +=, ...); the handle of the statement, whose set
/// holds it. An assignment through an Indexed needs no AssignTo object around that handle.
template <class T>
Handle make_assignment(const Indexed<T>& target, T& object, const Expression<T>& rhs, AssignMode mode);

namespace {

/// Unique labels of `written` in order of first appearance, with their extents; a
/// repeated label with two extents makes the node unreadable.
void fill_labels(IndexedNode& node, const std::vector<std::size_t>& extents) {
  bool repeats = false;
  for (std::size_t i = 0; i < node.written.size() && !repeats; ++i) {
    repeats = find_label(node.written, node.written[i]) < i;
  }
  if (!repeats) {
    // The labels as written are the free labels (most operands): the node holds them once.
    node.labels = std::move(node.written);
    node.written.clear();
    node.written_is_labels = true;
    node.extents = extents;
    return;
  }
  node.labels.reserve(node.written.size());
  node.extents.reserve(node.written.size());
  for (std::size_t i = 0; i < node.written.size(); ++i) {
    std::size_t at = find_label(node.labels, node.written[i]);
    if (at == node.labels.size()) {
      node.labels.push_back(node.written[i]);
      node.extents.push_back(extents[i]);
    } else if (node.extents[at] != extents[i] && node.unreadable.empty()) {
      node.shape_error = true;
      node.unreadable = "tenex: labels \"" + join_labels(node.written) + "\": label \"" + node.written[i] +
                        "\" has extent " + std::to_string(node.extents[at]) + " and extent " +
                        std::to_string(extents[i]);
    }
  }
}

/// numpy's letters for a tensor of rank two or more (`a("ij")` for a("i,j")): one label whose
/// length is the rank is never what was meant, so it is an error where it is written.
void check_not_letters(const std::vector<std::string>& written, const Shape& shape) {
  if (written.size() != 1 || shape.rank() < 2 || written[0].size() != shape.rank()) return;
  for (char c : written[0]) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))) return;
  }
  std::string commas;
  for (char c : written[0]) commas += commas.empty() ? std::string(1, c) : std::string(",") + c;
  throw ShapeError("tenex: labels \"" + written[0] + "\" name one mode but the tensor has rank " +
                   std::to_string(shape.rank()) + " with extents " + shape.to_string() +
                   ": labels are comma-separated identifiers (\"" + commas + "\"), not numpy's letters");
}

std::string rank_mismatch(const std::vector<std::string>& written, const Shape& shape) {
  return "tenex: labels \"" + join_labels(written) + "\" name " + std::to_string(written.size()) +
         (written.size() == 1 ? " mode" : " modes") + " but the tensor has rank " + std::to_string(shape.rank()) +
         " with extents " + shape.to_string();
}

template <class S>
Handle make_indexed(const Tensor<S>& tensor, std::vector<std::string> written) {
  auto node = std::make_shared<IndexedNode>();
  node->made_by = &typeid(Indexed<Tensor<S>>);
  node->dtype = dtype_of<Tensor<S>>();
  node->written = std::move(written);
  const auto storage = Access::storage(tensor);
  if (!storage) {
    node->unreadable = "tenex: the tensor labelled \"" + join_labels(node->written) +
                       "\" has no value: give it a shape or assign to it first";
    for (const auto& l : node->written) {
      if (!contains_label(node->labels, l)) {
        node->labels.push_back(l);
        node->extents.push_back(0);
      }
    }
    node->finish();
    auto state = std::make_shared<LinkedState>(node->dtype);
    return Handle{std::move(node), std::move(state)};
  }
  const Shape& shape = storage->shape();
  check_not_letters(node->written, shape);
  node->storage = storage;
  if (shape.rank() != node->written.size()) {
    node->shape_error = true;
    node->unreadable = rank_mismatch(node->written, shape);
  } else {
    fill_labels(*node, shape.extents());
  }
  node->finish();
  std::shared_ptr<LinkedState> state;
  if (storage->pending()) {
    // Reading a pending result links this expression to the set that produces it. (A state
    // of its own merged into that set would take the set's backend choice: the larger set's.)
    if (auto producer = std::static_pointer_cast<LinkedState>(storage->producer())) {
      std::lock_guard<std::recursive_mutex> lock(sets_mutex());
      state = LinkedState::root(std::move(producer));
      state->note_labels(node->labels, node->extents);
    }
  }
  if (!state) state = std::make_shared<LinkedState>(node->dtype, node->labels, node->extents);
  // A view remembers the sets that read it: a later statement writing it runs them first.
  if (const auto& binding = storage->binding()) binding->note_reader(state);
  return Handle{std::move(node), std::move(state)};
}

Handle make_indexed(const Shape& shape, std::vector<std::string> written) {
  auto node = std::make_shared<IndexedNode>();
  node->made_by = &typeid(Indexed<Shape>);
  node->dtype = DType::shape;
  check_not_letters(written, shape);
  node->written = std::move(written);
  if (shape.rank() != node->written.size()) {
    node->shape_error = true;
    node->unreadable = rank_mismatch(node->written, shape);
  } else {
    fill_labels(*node, shape.extents());
  }
  node->finish();
  auto state = std::make_shared<LinkedState>(DType::shape, node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

}  // namespace

}  // namespace detail

namespace detail {
namespace {
template <class S>
std::weak_ptr<const void> lifetime_of(const Tensor<S>& tensor) {
  return tensor.lifetime();
}
std::weak_ptr<const void> lifetime_of(const Shape&) { return {}; }
}  // namespace
}  // namespace detail

template <class T>
Indexed<T>::Indexed(T& object, std::string_view labels)
    : Expression<T>(detail::make_indexed(object, detail::parse_labels(labels))), object_(&object),
      alive_(detail::lifetime_of(object)) {}

// Never written through: target() refuses before object_ is used as a target.
template <class T>
Indexed<T>::Indexed(const T& object, std::string_view labels)
    : Expression<T>(detail::make_indexed(object, detail::parse_labels(labels))), object_(const_cast<T*>(&object)),
      read_only_(true), alive_(detail::lifetime_of(object)) {}

template <class T>
Indexed<T>::Indexed(const Indexed& other)
    : Expression<T>(other), object_(other.object_), read_only_(other.read_only_), alive_(other.alive_) {}
template <class T>
Indexed<T>::Indexed(Indexed&& other) noexcept
    : Expression<T>(std::move(other)), object_(other.object_), read_only_(other.read_only_),
      alive_(std::move(other.alive_)), record_(std::move(other.record_)) {}
template <class T>
Indexed<T>::~Indexed() = default;

template <class T>
const std::vector<std::string>& Indexed<T>::written_labels() const {
  // The node's: an Indexed's node is the IndexedNode its constructor made (assigning to an
  // Indexed records a statement, never replaces the node).
  static const std::vector<std::string> none;
  const detail::NodePtr& node = this->handle_.node;
  return node ? static_cast<const detail::IndexedNode&>(*node).written_labels() : none;
}

template <class T>
T& Indexed<T>::target() const {
  if (read_only_) {
    throw Error("tenex: assignment to the target labelled \"" + detail::join_labels(written_labels()) +
                "\": it labels a const object, which is read, never written; nothing was written. Label a "
                "non-const object as the target");
  }
  if constexpr (!std::is_same_v<T, Shape>) {
    if (alive_.expired()) {
      throw Error("tenex: assignment to the target labelled \"" + detail::join_labels(written_labels()) +
                  "\": its tensor no longer exists (the Indexed outlived it: returned from a function, or kept "
                  "past the tensor's scope); nothing was written. Label a tensor that is alive where the "
                  "statement is written");
    }
  }
  return *object_;
}

template <class T>
Indexed<T>& Indexed<T>::operator=(const Indexed& rhs) {
  detail::make_assignment(*this, target(), rhs, AssignMode::replace);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator=(const Expression<T>& rhs) {
  detail::make_assignment(*this, target(), rhs, AssignMode::replace);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator+=(const Expression<T>& rhs) {
  detail::make_assignment(*this, target(), rhs, AssignMode::add);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator-=(const Expression<T>& rhs) {
  detail::make_assignment(*this, target(), rhs, AssignMode::subtract);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator*=(const Expression<T>& rhs) {
  detail::make_assignment(*this, target(), rhs, AssignMode::multiply);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator/=(const Expression<T>& rhs) {
  detail::make_assignment(*this, target(), rhs, AssignMode::divide);
  return *this;
}

template <class T>
Indexed<T>& Indexed<T>::operator*=(double factor) {
  Indexed<T> current(target(), detail::join_labels(written_labels()));
  return *this = Scale<T>(current, factor);
}

template <class T>
Indexed<T>& Indexed<T>::operator/=(double divisor) {
  Indexed<T> current(target(), detail::join_labels(written_labels()));
  return *this = current / divisor;
}

template <class T>
Indexed<T>& Indexed<T>::operator+=(double value) {
  Indexed<T> current(target(), detail::join_labels(written_labels()));
  return *this = current + value;
}

template <class T>
Indexed<T>& Indexed<T>::operator-=(double value) {
  Indexed<T> current(target(), detail::join_labels(written_labels()));
  return *this = current - value;
}

namespace detail {

namespace {

struct TargetPlan {
  std::vector<std::string> target_labels;
  std::vector<std::string> rhs_labels;
  std::vector<std::size_t> extents;
  std::string eigen_mode;  // the target's label for the mode of the eigenpairs (eigen_mode_label)
};

/// The factor of a decomposition `rhs` stands for: `rhs` itself, or the complex factor whose
/// real values it reads (the eigenvalues or singular values of a complex matrix, a node over
/// the real tensor type). Null for other sides.
const FactorNode* factor_of(const ExprNode& rhs) {
  if (const auto* factor = node_as<FactorNode>(rhs)) return factor;
  if (const auto* indexed = node_as<IndexedNode>(rhs); indexed && indexed->factor) {
    return node_as<FactorNode>(*indexed->factor);
  }
  return nullptr;
}

/// For a factor of eigen_solve, the mode of the eigenpairs: the eigenvectors' last label, the
/// eigenvalues' only one (a matrix operand's second label; a new mode over label groups). A target that lacks that
/// label names the mode itself, as a target names the new mode of QR and SVD: std::make_pair(C("m,p"), e("p")) =
/// eigen_solve(F("m,n"), S("m,n")). Empty for other sides.
std::string eigen_mode_label(const ExprNode& rhs) {
  const FactorNode* factor = factor_of(rhs);
  if (!factor || factor->children.empty()) return {};
  const auto* decomposition = node_as<DecompositionNode>(*factor->children[0]);
  if (!decomposition || decomposition->op != OpKind::eigen_solve) return {};
  const std::size_t mode = factor->which == 0 ? rhs.labels.size() - 1 : 0;  // the vectors' last mode
  return mode < rhs.labels.size() ? rhs.labels[mode] : std::string();
}

TargetPlan plan_target(const std::vector<std::string>& target, const ExprNode& rhs) {
  if (rhs.dtype != DType::shape && node_as<DecompositionNode>(rhs)) {
    throw InternalError("tenex: a packed decomposition is read through its factors only");
  }
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
  const std::string eigen = eigen_mode_label(rhs);
  if (!eigen.empty() && !contains_label(target, eigen) && !contains_label(unnamed, eigen)) unnamed.push_back(eigen);
  std::size_t next_unnamed = 0;
  plan.rhs_labels.reserve(target.size());
  plan.extents.reserve(target.size());
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
    if (!eigen.empty() && rhs.labels[at] == eigen) plan.eigen_mode = t;
  }
  return plan;
}

/// The last statements recorded on this thread, in a row, whose right sides are factors of
/// one decomposition: when assigning a sibling factor of the same call fails while the earlier
/// target objects are still alive (std::make_pair(v, w) = eigen_solve(a), tenex::tie(u, s, vt)
/// = svd(a)), those are undone, so a failed multi-target statement changes none of its targets,
/// whatever their element types. The undo data lives in the target objects and dies with them.
struct LastFactorAssignment {
  std::weak_ptr<const ExprNode> decomposition;       // weak: a new call's node may reuse the address
  std::vector<std::weak_ptr<TargetRecord>> targets;  // in the order assigned
  std::size_t which = 0;                             // the factor assigned last
  std::string labels, eigen_mode;                    // its target's labels, and its name for eigen_solve's mode
};
thread_local LastFactorAssignment last_factor_assignment;

NodePtr decomposition_of(const ExprNode& rhs) {
  if (const FactorNode* f = factor_of(rhs)) return f->children[0];
  return nullptr;
}

/// The targets of one statement's eigenvectors and eigenvalues (std::make_pair(C("m,p"), e("p"))
/// = eigen_solve(...)) name the mode of the eigenpairs alike: the vectors' target's label for
/// it is the values' target's label. Throws ShapeError when they do not.
void check_eigen_mode_names(const NodePtr& decomposition, std::size_t which, const std::vector<std::string>& target,
                            const std::string& eigen_mode) {
  const LastFactorAssignment& last = last_factor_assignment;
  if (eigen_mode.empty() || !decomposition || last.decomposition.lock() != decomposition || last.which == which ||
      last.eigen_mode.empty() || last.eigen_mode == eigen_mode || last.targets.empty() ||
      last.targets.back().expired()) {
    return;
  }
  const bool vectors = which == 0;
  const std::string& vectors_labels = vectors ? join_labels(target) : last.labels;
  const std::string& values_labels = vectors ? last.labels : join_labels(target);
  const std::string& vectors_name = vectors ? eigen_mode : last.eigen_mode;
  const std::string& values_name = vectors ? last.eigen_mode : eigen_mode;
  throw ShapeError(
      "tenex: eigen_solve: the targets name the mode of the eigenpairs differently: the eigenvectors' "
      "target \"" +
      vectors_labels + "\" names it \"" + vectors_name + "\" but the eigenvalues' target \"" + values_labels +
      "\" names it \"" + values_name +
      "\"; label the eigenvalues with the eigenvectors' second label (std::make_pair(v(\"i,k\"), "
      "w(\"k\")) = eigen_solve(a(\"i,j\")))");
}

/// Before a statement writes a TensorView (the target's storage is bound to the user's memory):
/// checks the extents (a view's shape is fixed) and that the memory can be written, runs the
/// other pending sets that still read the view's old value, and turns a pending result of
/// this set for the same view into a private one. Throws ShapeError before anything changes.
template <class S>
void prepare_view_target(const ViewBinding& view, const std::shared_ptr<Storage<S>>& previous, const Handle& handle,
                         const TargetPlan& plan, const std::vector<std::string>& labels) {
  if (plan.extents != view.shape.extents()) {
    throw ShapeError("tenex: assignment to the view labelled \"" + join_labels(labels) +
                     "\": the right side has extents " + Shape(plan.extents).to_string() + " but the view's shape is " +
                     view.shape.to_string() + " (a TensorView's shape is fixed)");
  }
  if (!view.writable()) {
    throw ShapeError("tenex: assignment to the view labelled \"" + join_labels(labels) +
                     "\": its strides make two indices share an element, so it cannot be written");
  }
  const auto own = LinkedState::root(handle.state);
  for (const auto& reader : view.readers()) {
    auto set = std::static_pointer_cast<LinkedState>(reader);
    if (LinkedState::root(set) != own) set->flush();
  }
  if (previous->pending()) {
    auto writer = std::static_pointer_cast<LinkedState>(previous->producer());
    if (writer && LinkedState::root(writer) != own) {
      writer->flush();  // an earlier write of another set lands first
    } else {
      previous->unbind();  // this set's: the memory takes this statement's value
    }
  }
}

template <class S>
std::function<void()> record(Tensor<S>& object, Handle& handle, TargetPlan& plan,
                             const std::shared_ptr<bool>& cancelled) {
  std::shared_ptr<ViewBinding> view;
  if (const auto previous = Access::storage(object); previous && previous->binding()) {
    view = previous->binding();
    prepare_view_target(*view, previous, handle, plan, plan.target_labels);
  }
  auto storage = std::make_shared<Storage<S>>(Shape(std::move(plan.extents)), Storage<S>::Init::deferred);
  if (view) storage->bind(view, view->contiguous);
  // The plan is not used after this: its labels move into the recorded statement.
  LinkedState::record(handle.state, Assignment{handle.node, std::move(plan.rhs_labels), std::move(plan.target_labels),
                                               storage, cancelled});
  if (!cancelled) {
    Access::set_storage(object, std::move(storage));
    return {};
  }
  auto previous = Access::storage(object);
  Access::set_storage(object, storage);
  Tensor<S>* target = &object;
  std::weak_ptr<const void> alive = object.lifetime();
  return [target, alive, previous, storage]() {
    if (!alive.expired() && Access::storage(*target) == storage) Access::set_storage(*target, previous);
    storage->fulfil(nullptr);  // never evaluated: nothing waits for it
  };
}

std::function<void()> record(Shape& object, Handle&, TargetPlan& plan, const std::shared_ptr<bool>& cancelled) {
  // A shape set needs no data: its result is known now.
  if (!cancelled) {
    object = Shape(plan.extents);
    return {};
  }
  Shape previous = object;
  object = Shape(plan.extents);
  Shape* target = &object;
  return [target, previous]() { *target = previous; };
}

/// The record of the target object `target`, made by its first assignment of a factor.
template <class T>
const std::shared_ptr<TargetRecord>& record_of(const Indexed<T>& target) {
  std::shared_ptr<TargetRecord>& record = Access::target_record(target);
  if (!record) record = std::make_shared<TargetRecord>();
  return record;
}

}  // namespace

template <class T>
Handle make_assignment(const Indexed<T>& target, T& object, const Expression<T>& rhs, AssignMode mode) {
  require_handle(Access::handle(target));
  NodePtr value = operand_node(rhs);
  const NodePtr decomposition = decomposition_of(*value);
  try {
    std::vector<std::string> kept;
    for (const std::string& l : value->labels) {
      if (contains_label(target.written_labels(), l)) kept.push_back(l);
    }
    // A label the target drops that some terms of a sum lack is an error here, where it is written.
    check_summed_labels(value, kept, target.written_labels());
    // The value's labels are the right side's (or, for a user class's, a subset of those it declared).
    Handle handle =
        make_handle(value, {&detail::Access::handle(rhs), &detail::Access::handle(target)}, LabelsFrom::parts);
    if (mode != AssignMode::replace) {
      // c += e is c = c + e, the right side reading the value c has now (not when the target
      // handle was made: `auto h = c("i"); c("i") = a("i"); h += b("i");` adds to a).
      Indexed<T> current(object, join_labels(target.written_labels()));
      // The right side of +=, -= and /= is what `c = e` would write: the labels c lacks are
      // summed out of e first (c("i") += a("i,j") adds sum_j a(i,j) once), not over c + e
      // (which would count c once per j); a label of c stays a Hadamard label of a product
      // (c("i") += a("i,j") * y("i") adds sum_j a(i,j) y(i)). A product is linear, so *= reads e.
      const Operand<T> written = Access::make<Operand<T>>(
          Handle{mode == AssignMode::multiply ? value : value_over(value, kept), handle.state});
      const Expression<T>& e = written;
      Handle combined = mode == AssignMode::add        ? Access::handle(Addition<T>(current, e))
                        : mode == AssignMode::subtract ? Access::handle(Subtraction<T>(current, e))
                        : mode == AssignMode::multiply ? Access::handle(Multiplication<T>(current, e))
                                                       : Access::handle(Division<T>(current, e));
      handle.node = combined.node;
      handle.state = LinkedState::merge(handle.state, combined.state);
    }
    TargetPlan plan = plan_target(target.written_labels(), *handle.node);
    const std::size_t which = decomposition ? factor_of(*value)->which : 0;
    check_eigen_mode_names(decomposition, which, target.written_labels(), plan.eigen_mode);
    std::string eigen_mode = plan.eigen_mode;
    if (!decomposition) {
      // Only a factor's assignment is ever undone (by a sibling factor's failing): no record.
      detail::record(object, handle, plan, nullptr);
      // Most statements follow one that assigned no factor either: nothing to forget.
      if (!last_factor_assignment.targets.empty() || !last_factor_assignment.labels.empty()) {
        last_factor_assignment = LastFactorAssignment{};
      }
      return handle;
    }
    const std::shared_ptr<TargetRecord>& record = record_of(target);
    auto cancelled = std::make_shared<bool>(false);
    std::function<void()> undo = detail::record(object, handle, plan, cancelled);
    record->cancelled = cancelled;
    record->undo = std::move(undo);
    LastFactorAssignment next{decomposition, {}, which, join_labels(target.written_labels()), std::move(eigen_mode)};
    if (last_factor_assignment.decomposition.lock() == decomposition) {
      next.targets = std::move(last_factor_assignment.targets);
    }
    next.targets.push_back(record);
    last_factor_assignment = std::move(next);
    return handle;
  } catch (...) {
    const LastFactorAssignment last = std::move(last_factor_assignment);
    last_factor_assignment = LastFactorAssignment{};
    if (decomposition && last.decomposition.lock() == decomposition) {
      for (auto it = last.targets.rbegin(); it != last.targets.rend(); ++it) {
        auto sibling = it->lock();
        if (!sibling || !sibling->undo || !sibling->cancelled || *sibling->cancelled) continue;
        *sibling->cancelled = true;
        sibling->undo();
        sibling->undo = nullptr;
      }
    }
    throw;
  }
}

}  // namespace detail

template <class T>
AssignTo<T>::AssignTo(const Indexed<T>& target, T& object, const Expression<T>& rhs, AssignMode mode)
    : Nary<1, T>(detail::make_assignment(target, object, rhs, mode)) {}

// Defined here, not in tensor/: the tensor layer knows nothing of expressions.
Indexed<Shape> Shape::operator()(std::string_view labels) { return Indexed<Shape>(*this, labels); }

template <class T>
Indexed<Tensor<T>> Tensor<T>::operator()(std::string_view labels) {
  return Indexed<Tensor<T>>(*this, labels);
}

template <class T>
Indexed<Tensor<T>> Tensor<T>::operator()(std::string_view labels) const {
  return Indexed<Tensor<T>>(*this, labels);
}

#define TENEX_INSTANTIATE_TENSOR_CALL(T)                                         \
  template TENEX_API Indexed<Tensor<T>> Tensor<T>::operator()(std::string_view); \
  template TENEX_API Indexed<Tensor<T>> Tensor<T>::operator()(std::string_view) const;
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_TENSOR_CALL)
#undef TENEX_INSTANTIATE_TENSOR_CALL

#define TENEX_INSTANTIATE_INDEXED(T) \
  template class Indexed<T>;         \
  template class AssignTo<T>;
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_INDEXED)
#undef TENEX_INSTANTIATE_INDEXED

}  // namespace tenex
