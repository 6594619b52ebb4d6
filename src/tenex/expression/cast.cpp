// tenex::cast: the operand is assigned, in its own set, to a hidden tensor of its element
// type; the cast's node reads a tensor of the new type whose producer converts that value
// when it is first read (when the set using the cast runs).
#include "tenex/expression/cast.hpp"

#include <exception>
#include <mutex>
#include <utility>

#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/indexed.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex {

namespace detail {

namespace {

template <class U, class V>
class CastProducer final : public Producer {
 public:
  CastProducer(std::shared_ptr<Tensor<V>> source, std::shared_ptr<Storage<U>> target)
      : source_(std::move(source)), target_(std::move(target)) {}

  void flush() noexcept override {
    // Two threads reading sets that use one cast: the first converts, the other waits here.
    std::lock_guard<std::mutex> lock(mutex_);
    auto target = target_.lock();
    if (!target || !target->pending()) return;
    try {
      const V* in = std::as_const(*source_).data();  // evaluates the operand's set; rethrows its error
      target->allocate();
      U* out = target->elements();
      const std::size_t n = target->shape().size();
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<U>(in[i]);
      target->fulfil(nullptr);
    } catch (...) {
      target->fulfil(std::current_exception());
    }
    source_.reset();
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<Tensor<V>> source_;
  std::weak_ptr<Storage<U>> target_;
};

template <class U, class V>
Handle make_cast(const Expression<Tensor<V>>& operand) {
  const NodePtr a = einstein_operand(operand_node(operand));
  auto source = std::make_shared<Tensor<V>>();
  (*source)(join_labels(a->labels)) = operand;  // recorded in the operand's set
  auto target = std::make_shared<Storage<U>>(Shape(a->extents), Storage<U>::Init::deferred);
  auto producer = std::make_shared<CastProducer<U, V>>(std::move(source), target);
  target->mark_pending(producer);
  auto node = std::make_shared<IndexedNode>();
  node->dtype = dtype_of<Tensor<U>>();
  node->written = a->labels;
  node->labels = a->labels;
  node->extents = a->extents;
  node->storage = target;
  node->keep_alive = std::move(producer);
  made_by<Cast<U, V>>(node);
  auto state = std::make_shared<LinkedState>(node->dtype);
  state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

}  // namespace

}  // namespace detail

template <class U, class V>
Cast<U, V>::Cast(const Expression<Tensor<V>>& operand) : Expression<Tensor<U>>(detail::make_cast<U>(operand)) {}

template class Cast<float, double>;
template class Cast<double, float>;
template class Cast<float, float>;
template class Cast<double, double>;

}  // namespace tenex
