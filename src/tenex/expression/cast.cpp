// tenex::cast and tenex::ComplexPart: the operand (for a part, the part as a complex value:
// real(z) + 0i, ...) is assigned, in its own set, to a hidden tensor of its element type; the
// node reads a tensor of the new type whose producer converts that value when it is first read
// (when the set using it runs). From complex to real the conversion keeps the real part.
// detail::real_factor does the same for the real values of a complex decomposition. A
// truncated decomposition's new mode stays truncated across the cast (truncated_labels).
#include "tenex/expression/cast.hpp"

#include <exception>
#include <mutex>
#include <string>
#include <typeinfo>
#include <unordered_set>
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
      // The operand's truncated modes took their kept rank in its set: the target takes it too
      // (the sets reading it mark those modes, InputParams::truncated_modes).
      const Shape& shape = source_->shape();
      if (shape != target->shape()) {
        const std::vector<std::size_t>& kept = shape.extents();
        const std::vector<std::size_t>& bound = target->shape().extents();
        bool fits = kept.size() == bound.size();
        for (std::size_t d = 0; fits && d < kept.size(); ++d) fits = kept[d] <= bound[d];
        if (!fits) {
          throw InternalError("tenex: a cast's operand has extents " + shape.to_string() + ", not within " +
                              target->shape().to_string());
        }
        target->set_truncated_shape(shape);
      }
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

// The labels of `a` whose extent is the upper bound of a kept rank decided when a set runs:
// the new mode of a truncated decomposition (its factors name it by a label no user can
// write, one per decomposition, so the mode is truncated wherever that label appears), or a
// mode already read as truncated (a cast of such a cast). The new set reads the hidden tensor
// with these modes marked (InputParams::truncated_modes), so it takes the kept rank like the
// decomposition's own set. Only an operand holding a new mode is walked.
std::vector<std::string> truncated_labels(const NodePtr& a) {
  std::vector<std::string> wanted, found;
  for (const std::string& l : a->labels) {
    if (is_new_mode_label(l)) wanted.push_back(l);
  }
  if (wanted.empty()) return found;
  auto note = [&](const std::string& l) {
    if (contains_label(wanted, l) && !contains_label(found, l)) found.push_back(l);
  };
  std::unordered_set<const ExprNode*> seen;
  std::vector<const ExprNode*> stack{a.get()};
  while (!stack.empty() && found.size() < wanted.size()) {
    const ExprNode* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    if (const auto* factor = dynamic_cast<const FactorNode*>(node)) {
      const auto& decomposition = static_cast<const DecompositionNode&>(*factor->children[0]);
      if (decomposition.truncation.truncated) {
        for (const std::string& l : factor->labels) note(l);
      }
    } else if (const auto* indexed = dynamic_cast<const IndexedNode*>(node)) {
      for (const std::string& l : indexed->truncated) note(l);
    }
    for (const NodePtr& child : node->children) stack.push_back(child.get());
  }
  return found;
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
  node->labels = a->labels;
  node->written_is_labels = true;
  node->extents = a->extents;
  node->storage = target;
  node->truncated = truncated_labels(a);
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

template <class R>
ComplexPart<R> real(const Expression<Tensor<std::complex<R>>>& e) {
  return ComplexPart<R>(e, FusedOp::real_part);
}
template <class R>
ComplexPart<R> imag(const Expression<Tensor<std::complex<R>>>& e) {
  return ComplexPart<R>(e, FusedOp::imag_part);
}
template <class R>
ComplexPart<R> abs(const Expression<Tensor<std::complex<R>>>& e) {
  return ComplexPart<R>(e, FusedOp::abs);
}
template <class R>
ComplexPart<R> arg(const Expression<Tensor<std::complex<R>>>& e) {
  return ComplexPart<R>(e, FusedOp::arg);
}
template <class R>
Unary<Tensor<R>> norm2(const Expression<Tensor<std::complex<R>>>& e) {
  return norm2(abs(e));
}

#define TENEX_INSTANTIATE_PARTS(R)                                                       \
  template TENEX_API ComplexPart<R> real<R>(const Expression<Tensor<std::complex<R>>>&); \
  template TENEX_API ComplexPart<R> imag<R>(const Expression<Tensor<std::complex<R>>>&); \
  template TENEX_API ComplexPart<R> abs<R>(const Expression<Tensor<std::complex<R>>>&);  \
  template TENEX_API ComplexPart<R> arg<R>(const Expression<Tensor<std::complex<R>>>&);  \
  template TENEX_API Unary<Tensor<R>> norm2<R>(const Expression<Tensor<std::complex<R>>>&);
TENEX_INSTANTIATE_PARTS(float)
TENEX_INSTANTIATE_PARTS(double)
#undef TENEX_INSTANTIATE_PARTS

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
