#include "tenex/expression/detail/linked_state.hpp"

#include <algorithm>

#include "tenex/expression/detail/evaluate.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex::detail {

namespace {

void set_producer(DType dtype, const std::shared_ptr<void>& storage, const std::shared_ptr<LinkedState>& producer) {
  switch (dtype) {
    case DType::f32: std::static_pointer_cast<Storage<float>>(storage)->set_producer(producer); break;
    case DType::f64: std::static_pointer_cast<Storage<double>>(storage)->set_producer(producer); break;
    case DType::shape: break;
  }
}

void mark_pending(DType dtype, const std::shared_ptr<void>& storage, const std::shared_ptr<LinkedState>& producer) {
  switch (dtype) {
    case DType::f32: std::static_pointer_cast<Storage<float>>(storage)->mark_pending(producer); break;
    case DType::f64: std::static_pointer_cast<Storage<double>>(storage)->mark_pending(producer); break;
    case DType::shape: break;
  }
}

}  // namespace

LinkedState::LinkedState(DType dtype) : dtype_(dtype), backend_(default_backend()) {}

LinkedState::~LinkedState() {
  // A forwarded state handed its work to its root, which outlives it.
  if (!forward_) flush();
}

std::shared_ptr<LinkedState> LinkedState::root(std::shared_ptr<LinkedState> state) {
  while (state && state->forward_) state = state->forward_;
  return state;
}

std::shared_ptr<LinkedState> LinkedState::merge(const std::shared_ptr<LinkedState>& a,
                                                const std::shared_ptr<LinkedState>& b) {
  auto ra = root(a);
  auto rb = root(b);
  if (ra == rb) return ra;
  for (Assignment& assignment : rb->assignments_) {
    set_producer(rb->dtype_, assignment.target, ra);
    ra->assignments_.push_back(std::move(assignment));
  }
  rb->assignments_.clear();
  for (auto& map : rb->sparse_maps_) ra->sparse_maps_.push_back(std::move(map));
  rb->sparse_maps_.clear();
  for (auto& [label, extent] : rb->labels_seen_) {
    auto& seen = ra->labels_seen_[label];
    seen = std::max(seen, extent);
  }
  rb->labels_seen_.clear();
  rb->forward_ = ra;
  return ra;
}

void LinkedState::record(Assignment assignment, const std::shared_ptr<LinkedState>& self) {
  mark_pending(dtype_, assignment.target, self);
  assignments_.push_back(std::move(assignment));
}

void LinkedState::note_labels(const std::vector<std::string>& labels, const std::vector<std::size_t>& extents) {
  for (std::size_t i = 0; i < labels.size() && i < extents.size(); ++i) {
    auto& seen = labels_seen_[labels[i]];
    seen = std::max(seen, extents[i]);
  }
}

void LinkedState::flush() noexcept {
  if (forward_) return;
  if (assignments_.empty()) return;
  std::vector<Assignment> batch = std::move(assignments_);
  assignments_.clear();
  evaluate_set(dtype_, backend_, std::move(batch), sparse_maps_);
}

}  // namespace tenex::detail
