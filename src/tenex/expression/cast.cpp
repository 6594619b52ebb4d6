// tenex::cast and tenex::ComplexPart: the operand (for a part, the part as a complex value:
// real(z) + 0i, ...) is assigned, in its own set, to a hidden tensor of its element type; the
// node reads a tensor of the new type whose producer converts that value when it is first read
// (when the set using it runs). From complex to real the conversion keeps the real part.
// detail::real_factor does the same for the real values of a complex decomposition.
#include "tenex/expression/cast.hpp"

#include <exception>
#include <mutex>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/detail/real_factor.hpp"
#include "tenex/expression/elementwise.hpp"
#include "tenex/expression/indexed.hpp"
#include "tenex/tensor/storage.hpp"

namespace tenex {

namespace detail {

namespace {

template <class U, class V>
U convert(V v) {
  if constexpr (is_complex_v<V> && !is_complex_v<U>) {
    return static_cast<U>(v.real());
  } else if constexpr (is_complex_v<U> && is_complex_v<V>) {
    return U(static_cast<typename U::value_type>(v.real()), static_cast<typename U::value_type>(v.imag()));
  } else if constexpr (is_complex_v<U>) {
    return U(static_cast<typename U::value_type>(v));
  } else {
    return static_cast<U>(v);
  }
}

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
      for (std::size_t i = 0; i < n; ++i) out[i] = convert<U, V>(in[i]);
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

/// Labels for the hidden tensor: the operand's, each new mode of a decomposition (which no
/// label written by a user can name) given a plain name the operand does not use.
std::string hidden_target_labels(const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  std::size_t next = 0;
  for (const std::string& l : labels) {
    if (!is_new_mode_label(l)) {
      out.push_back(l);
      continue;
    }
    std::string name;
    do {
      name = "new" + std::to_string(next++);
    } while (contains_label(labels, name));
    out.push_back(std::move(name));
  }
  return join_labels(out);
}

template <class U, class V>
Handle make_cast(const Expression<Tensor<V>>& operand, const std::type_info& made, FusedOp part = FusedOp::load,
                 bool reads_factor = false) {
  const NodePtr a = einstein_operand(operand_node(operand));
  auto source = std::make_shared<Tensor<V>>();
  const std::string labels = hidden_target_labels(a->labels);
  if (part == FusedOp::load) {
    (*source)(labels) = operand;  // recorded in the operand's set
  } else {
    (*source)(labels) = Unary<Tensor<V>>(operand, part);
  }
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
  if (reads_factor) node->factor = a;
  node->made_by = &made;
  node->finish();
  auto state = std::make_shared<LinkedState>(node->dtype);
  state->note_labels(node->labels, node->extents);
  return Handle{std::move(node), std::move(state)};
}

}  // namespace

template <class R>
Handle real_factor(const Expression<Tensor<std::complex<R>>>& factor, const std::type_info& made_by) {
  // The real part, not a plain conversion: the hidden statement's right side is then not a bare
  // factor, so it takes no part in the bookkeeping of the user's multi-target statements.
  return make_cast<R>(factor, made_by, FusedOp::real_part, true);
}

template Handle real_factor<float>(const Expression<Tensor<std::complex<float>>>&, const std::type_info&);
template Handle real_factor<double>(const Expression<Tensor<std::complex<double>>>&, const std::type_info&);

}  // namespace detail

template <class U, class V>
Cast<U, V>::Cast(const Expression<Tensor<V>>& operand)
    : Expression<Tensor<U>>(detail::make_cast<U>(operand, typeid(Cast<U, V>))) {}

template <class R>
ComplexPart<R>::ComplexPart(const Expression<Tensor<std::complex<R>>>& operand, FusedOp part)
    : Expression<Tensor<R>>([&] {
        if (part != FusedOp::real_part && part != FusedOp::imag_part && part != FusedOp::abs && part != FusedOp::arg) {
          throw Error("tenex: ComplexPart of " + operand.to_string() + ": " + std::string(fused_op_name(part)) +
                      " is not real, imag, abs or arg");
        }
        return detail::make_cast<R>(operand, typeid(ComplexPart<R>), part);
      }()) {}

#define TENEX_INSTANTIATE_CAST_FROM(U, V) template class Cast<U, V>;
#define TENEX_INSTANTIATE_CAST(U)                     \
  TENEX_INSTANTIATE_CAST_FROM(U, float)               \
  TENEX_INSTANTIATE_CAST_FROM(U, double)              \
  TENEX_INSTANTIATE_CAST_FROM(U, std::complex<float>) \
  TENEX_INSTANTIATE_CAST_FROM(U, std::complex<double>)
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_CAST)
#undef TENEX_INSTANTIATE_CAST
#undef TENEX_INSTANTIATE_CAST_FROM
template class ComplexPart<float>;
template class ComplexPart<double>;

}  // namespace tenex
