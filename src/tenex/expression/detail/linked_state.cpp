#include "tenex/expression/detail/linked_state.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "tenex/backend_choice.hpp"
#include "tenex/error.hpp"
#include "tenex/labels.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

std::atomic<SetRunner> installed_runner{nullptr};

void set_producer(DType dtype, const std::shared_ptr<void>& storage, const std::shared_ptr<Producer>& producer) {
  if (dtype == DType::shape) return;
  visit_dtype(dtype,
              [&](auto zero) { std::static_pointer_cast<Storage<decltype(zero)>>(storage)->set_producer(producer); });
}

void mark_pending(DType dtype, const std::shared_ptr<void>& storage, const std::shared_ptr<Producer>& producer) {
  if (dtype == DType::shape) return;
  visit_dtype(dtype,
              [&](auto zero) { std::static_pointer_cast<Storage<decltype(zero)>>(storage)->mark_pending(producer); });
}

void fail(DType dtype, const std::shared_ptr<void>& storage, const std::exception_ptr& error) {
  if (dtype == DType::shape) return;
  visit_dtype(dtype, [&](auto zero) {
    auto* s = static_cast<Storage<decltype(zero)>*>(storage.get());
    if (s->pending()) s->fulfil(error);
  });
}

}  // namespace

void install_set_runner(SetRunner runner) { installed_runner.store(runner); }

// The environment is left to the pipeline, read once per set: a statement makes several
// states (one per Indexed), most of which merge at once.
LinkedState::LinkedState(DType dtype) : dtype_(dtype) {
  const std::optional<BackendChoice> chosen = chosen_default_backend();
  backend_ = chosen.value_or(BackendChoice{});
  backend_from_environment_ = !chosen;
}

LinkedState::LinkedState(DType dtype, const std::vector<std::string>& labels, const std::vector<std::size_t>& extents)
    : LinkedState(dtype) {
  // An expression's labels are distinct: nothing to look up.
  for (std::size_t i = 0; i < labels.size() && i < extents.size(); ++i) append_label(labels[i], extents[i]);
}

LinkedState::~LinkedState() {
  // A forwarded state handed its work to its root, which outlives it. (Forwarding chains
  // stay short, union by size and path compression see to it.) No other thread can reach a
  // state being destroyed: forward_ is read without the lock.
  if (!forward_) flush();
}

LinkedState& LinkedState::top() {
  LinkedState* t = this;
  while (t->forward_) t = t->forward_.get();
  return *t;
}

const LinkedState& LinkedState::top() const {
  const LinkedState* t = this;
  while (t->forward_) t = t->forward_.get();
  return *t;
}

std::shared_ptr<LinkedState> LinkedState::root(std::shared_ptr<LinkedState> state) {
  if (!state) return state;
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  std::shared_ptr<LinkedState> top = state;
  while (top->forward_) top = top->forward_;
  // Path compression: every state on the way points at the root now.
  while (state != top) {
    std::shared_ptr<LinkedState> next = state->forward_;
    state->forward_ = top;
    state = std::move(next);
  }
  return top;
}

std::shared_ptr<LinkedState> LinkedState::merge(const std::shared_ptr<LinkedState>& a,
                                                const std::shared_ptr<LinkedState>& b) {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  return merge_locked(a, b);
}

std::shared_ptr<LinkedState> LinkedState::merge_locked(const std::shared_ptr<LinkedState>& a,
                                                       const std::shared_ptr<LinkedState>& b) {
  // Most states merged are roots (an operand's own set): no walk, no path to compress.
  std::shared_ptr<LinkedState> ra = root_locked(a);
  std::shared_ptr<LinkedState> rb = root_locked(b);
  if (ra == rb) return ra;
  // The smaller set moves into the larger: a set kept open by one handle over thousands of
  // statements never moves its recorded work again.
  if (ra->assignments_.size() + ra->size_ < rb->assignments_.size() + rb->size_) std::swap(ra, rb);
  // Program order: statements of both sets are independent (a read of a pending result
  // merges the sets before the reading statement is recorded), so appending keeps it.
  for (Assignment& assignment : rb->assignments_) {
    set_producer(rb->dtype_, assignment.target, ra);
    ra->assignments_.push_back(std::move(assignment));
  }
  rb->assignments_.clear();
  for (auto& map : rb->sparse_maps_) ra->sparse_maps_.push_back(std::move(map));
  rb->sparse_maps_.clear();
  for (std::size_t i = 0; i < rb->labels_seen_count_; ++i)
    ra->note_label(rb->label_seen(i).first, rb->label_seen(i).second);
  rb->labels_seen_count_ = 0;
  rb->more_labels_seen_.clear();
  if (!rb->label_index_.empty()) rb->label_index_.clear();
  ra->size_ += rb->size_;
  ra->has_run_ = ra->has_run_ || rb->has_run_;
  ra->decides_extents_ = ra->decides_extents_ || rb->decides_extents_;
  rb->forward_ = ra;
  return ra;
}

void LinkedState::record(const std::shared_ptr<LinkedState>& state, Assignment assignment) {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  const std::shared_ptr<LinkedState> self = root_locked(state);
  std::shared_ptr<void> target = assignment.target;
  self->decides_extents_ = self->decides_extents_ || assignment.rhs->holds_truncation;
  self->assignments_.push_back(std::move(assignment));
  // Marked once recorded: a pending storage always belongs to a set that will fulfil it.
  mark_pending(self->dtype_, target, self);
}

void LinkedState::add_sparse_map(RegisteredSparseMap map) {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  top().sparse_maps_.push_back(std::move(map));
}

std::vector<RegisteredSparseMap> LinkedState::sparse_maps() const {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  return top().sparse_maps_;
}

bool LinkedState::decides_extents() const {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  return top().decides_extents_;
}

bool LinkedState::has_run() const {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  return top().has_run_;
}

std::vector<Assignment> LinkedState::recorded() const {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  return top().assignments_;
}

void LinkedState::backend(SetRecord& set) const {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  set.backend = top().backend_;
  set.backend_from_environment = top().backend_from_environment_;
}

std::size_t LinkedState::find_label_seen(const std::string& label) const {
  if (labels_seen_count_ > indexed_from) {
    auto it = label_index_.find(label);
    return it == label_index_.end() ? labels_seen_count_ : it->second;
  }
  for (std::size_t i = 0; i < labels_seen_count_; ++i) {
    if (same_label(label_seen(i).first, label)) return i;
  }
  return labels_seen_count_;
}

void LinkedState::note_label(const std::string& label, std::size_t extent) {
  if (const std::size_t i = find_label_seen(label); i < labels_seen_count_) {
    LabelExtent& seen = label_seen(i);
    seen.second = std::max(seen.second, extent);
    return;
  }
  append_label(label, extent);
}

void LinkedState::append_label(const std::string& label, std::size_t extent) {
  if (labels_seen_count_ < labels_seen_.size()) {
    // In place: the slot's string keeps its buffer.
    labels_seen_[labels_seen_count_].first = label;
    labels_seen_[labels_seen_count_].second = extent;
  } else {
    more_labels_seen_.emplace_back(label, extent);
  }
  ++labels_seen_count_;
  if (labels_seen_count_ == indexed_from + 1) {
    for (std::size_t i = 0; i < labels_seen_count_; ++i) label_index_.emplace(label_seen(i).first, i);
  } else if (labels_seen_count_ > indexed_from + 1) {
    label_index_.emplace(label, labels_seen_count_ - 1);
  }
}

void LinkedState::note_labels(const std::vector<std::string>& labels, const std::vector<std::size_t>& extents) {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  LinkedState& t = top();
  for (std::size_t i = 0; i < labels.size() && i < extents.size(); ++i) t.note_label(labels[i], extents[i]);
}

std::optional<std::size_t> LinkedState::label_extent(const std::string& label) const {
  std::lock_guard<std::recursive_mutex> lock(sets_mutex());
  const LinkedState& t = top();
  if (const std::size_t i = t.find_label_seen(label); i < t.labels_seen_count_) return t.label_seen(i).second;
  return std::nullopt;
}

void LinkedState::flush() noexcept {
  SetRecord set;
  {
    std::unique_lock<std::recursive_mutex> lock(sets_mutex());
    // A pending storage may point at a state that was merged away since.
    LinkedState& t = top();
    if (t.assignments_.empty()) return;
    set.dtype = t.dtype_;
    set.backend = t.backend_;
    set.backend_from_environment = t.backend_from_environment_;
    set.assignments = std::move(t.assignments_);
    t.assignments_.clear();
    t.has_run_ = true;
    try {
      set.sparse_maps = t.sparse_maps_;
    } catch (...) {
      // No memory to copy the maps: the results get the error.
      for (Assignment& a : set.assignments) fail(set.dtype, a.target, std::current_exception());
      return;
    }
  }
  // The set runs outside the lock: other threads build and read other sets meanwhile (one
  // reading a result of this set waits for it in Storage::resolve).
  if (SetRunner runner = installed_runner.load()) {
    runner(set);
  } else {
    const auto error = std::make_exception_ptr(InternalError("tenex: no evaluation pipeline is installed"));
    for (Assignment& a : set.assignments) fail(set.dtype, a.target, error);
  }
}

}  // namespace tenex::detail
