// Element-wise functions, scalar operands, max/min and reductions by label. Each lowers to
// a fused node with a one-region program; the fusion pass merges neighbouring regions.
#include "tenex/expression/elementwise.hpp"

#include <cmath>

#include "tenex/expression/detail/make.hpp"

namespace tenex {

namespace detail {

namespace {

template <class C, class T>
Handle make_map(const Expression<T>& operand, std::vector<FusedInstr> program,
                std::vector<std::shared_ptr<const ScalarFunction>> functions = {}) {
  const NodePtr a = einstein_operand(operand_node(operand));
  auto node = std::make_shared<MapNode>();
  node->dtype = a->dtype;
  node->children = {a};
  node->labels = a->labels;
  node->extents = a->extents;
  node->program = std::move(program);
  node->functions = std::move(functions);
  return make_handle(made_by<C>(std::move(node)), {&detail::Access::handle(operand)}, LabelsFrom::parts);
}

const char* reduce_name(ReduceOp op) {
  return op == ReduceOp::sum ? "sum" : op == ReduceOp::max ? "max_over" : "min_over";
}

}  // namespace

std::vector<std::string> MapNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;  // a function sees every element; what is dropped is summed after it
}

NodeId MapNode::emit(Lowering& lowering, const std::vector<std::string>& keep, const std::vector<NodeId>& built) const {
  const NodeId id = lowering.add(FusedParams{program, ReduceOp::sum, functions}, labels, extents, built);
  return lowering.reduce_to(id, keep);
}

std::vector<std::string> ExtremumNode::child_keep(std::size_t i, const std::vector<std::string>&) const {
  return children[i]->labels;
}

NodeId ExtremumNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                          const std::vector<NodeId>& built) const {
  FusedParams p;
  p.program = {{FusedOp::load, 0}, {FusedOp::load, 1}, {op, 0, 1}};
  const NodeId id = lowering.add(std::move(p), labels, extents, built);
  return lowering.reduce_to(id, keep);
}

std::vector<std::string> ReductionNode::child_keep(std::size_t, const std::vector<std::string>& keep) const {
  // A sum is linear: the operand sums what the consumer drops too. max and min need all.
  return op == ReduceOp::sum ? keep : children[0]->labels.vec();
}

NodeId ReductionNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                           const std::vector<NodeId>& built) const {
  if (op == ReduceOp::sum) return lowering.reduce_to(built[0], keep);
  FusedParams p;
  p.program = {{FusedOp::load, 0}};
  p.reduce = op;
  const NodeId id = lowering.add(std::move(p), labels, extents, built);
  return lowering.reduce_to(id, keep);
}

}  // namespace detail

template <class T>
Unary<T>::Unary(const Expression<T>& operand, FusedOp op, double x, double y)
    : Nary<1, T>([&] {
        if (fused_op_values(op) != 1 || op == FusedOp::call) {
          throw Error("tenex: Unary: " + std::string(fused_op_name(op)) + " is not a function of one operand");
        }
        if (is_complex_dtype(detail::operand_node(operand)->dtype) && !defined_for_complex(op)) {
          throw Error("tenex: " + std::string(fused_op_name(op)) + " of " + operand.to_string() +
                      ": not defined for complex numbers (they have no order)");
        }
        if (op == FusedOp::clamp && !(x <= y)) {
          throw Error("tenex: clamp of " + operand.to_string() + ": the lower bound " + std::to_string(x) +
                      " exceeds the upper bound " + std::to_string(y));
        }
        return detail::make_map<Unary<T>>(operand, {{FusedOp::load, 0}, {op, 0, 0, x, y}});
      }()) {}

template <class T>
Unary<T>::Unary(const Expression<T>& operand, std::shared_ptr<const ScalarFunction> function)
    : Nary<1, T>([&] {
        if (!function) throw Error("tenex: map of " + operand.to_string() + ": no function given");
        return detail::make_map<Unary<T>>(operand, {{FusedOp::load, 0}, {FusedOp::call, 0, 0}}, {std::move(function)});
      }()) {}

template <class T>
std::string Unary<T>::function() const {
  const auto& node = static_cast<const detail::MapNode&>(*detail::require_handle(this->handle_).node);
  return describe_program(FusedParams{node.program, ReduceOp::sum, node.functions});
}

template <class T>
Unary<T> scalar_op(const Expression<T>& e, FusedOp op, double scalar, bool scalar_first) {
  // x0 is the operand, value 1 the scalar.
  const std::uint32_t lhs = scalar_first ? 1 : 0, rhs = scalar_first ? 0 : 1;
  return detail::Access::make<Unary<T>>(
      detail::make_map<Unary<T>>(e, {{FusedOp::load, 0}, {FusedOp::constant, 0, 0, scalar}, {op, lhs, rhs}}));
}

template <class T>
Binary<T>::Binary(const Expression<T>& lhs, const Expression<T>& rhs, FusedOp op)
    : Nary<2, T>([&] {
        if (op != FusedOp::maximum && op != FusedOp::minimum) {
          throw Error("tenex: Binary: " + std::string(fused_op_name(op)) + " is not max or min");
        }
        const char* name = op == FusedOp::maximum ? "max" : "min";
        const detail::NodePtr a = detail::einstein_operand(detail::operand_node(lhs));
        if (is_complex_dtype(a->dtype)) {
          throw Error(std::string("tenex: ") + name + " of " + lhs.to_string() + " and " + rhs.to_string() +
                      ": complex numbers have no order");
        }
        const detail::NodePtr b = detail::einstein_operand(detail::operand_node(rhs));
        detail::check_shared_extents(name, *a, *b);
        auto node = std::make_shared<detail::ExtremumNode>();
        node->op = op;
        node->dtype = a->dtype;
        node->children = {a, b};
        detail::union_labels(*a, *b, *node);
        return detail::make_handle(detail::made_by<Binary<T>>(std::move(node)),
                                   {&detail::Access::handle(lhs), &detail::Access::handle(rhs)},
                                   detail::LabelsFrom::parts);
      }()) {}

template <class T>
Reduction<T>::Reduction(const Expression<T>& operand, std::string_view labels, ReduceOp op)
    : Nary<1, T>([&] {
        const char* name = detail::reduce_name(op);
        const detail::NodePtr a = detail::einstein_operand(detail::operand_node(operand));
        if (op != ReduceOp::sum && is_complex_dtype(a->dtype)) {
          throw Error(std::string("tenex: ") + name + " of " + operand.to_string() + ": complex numbers have no order");
        }
        std::vector<std::string> reduced = detail::parse_labels(labels);
        for (std::size_t i = 0; i < reduced.size(); ++i) {
          if (!detail::contains_label(a->labels, reduced[i])) {
            throw ShapeError(std::string("tenex: ") + name + " over \"" + std::string(labels) + "\": label \"" +
                             reduced[i] + "\" is not a label of " + a->text());
          }
          for (std::size_t j = 0; j < i; ++j) {
            if (reduced[i] == reduced[j]) {
              throw ShapeError(std::string("tenex: ") + name + " over \"" + std::string(labels) + "\": label \"" +
                               reduced[i] + "\" is given twice");
            }
          }
        }
        auto node = std::make_shared<detail::ReductionNode>();
        node->op = op;
        node->dtype = a->dtype;
        node->children = {a};
        for (std::size_t i = 0; i < a->labels.size(); ++i) {
          if (!detail::contains_label(reduced, a->labels[i])) {
            node->labels.push_back(a->labels[i]);
            node->extents.push_back(a->extents[i]);
          }
        }
        node->reduced = std::move(reduced);
        return detail::make_handle(detail::made_by<Reduction<T>>(std::move(node)), {&detail::Access::handle(operand)},
                                   detail::LabelsFrom::parts);
      }()) {}

template <class T>
ReduceOp Reduction<T>::op() const {
  return static_cast<const detail::ReductionNode&>(*detail::require_handle(this->handle_).node).op;
}

template <class T>
const std::vector<std::string>& Reduction<T>::reduced() const {
  return static_cast<const detail::ReductionNode&>(*detail::require_handle(this->handle_).node).reduced;
}

// The functions of API.md (elementwise.hpp), each a Unary, Binary or Reduction.
#define TENEX_NAMED_UNARY(X) \
  X(exp) X(log) X(sqrt) X(abs) X(square) X(sin) X(cos) X(tanh) X(conj) X(erf) X(sign) X(reciprocal)
#define TENEX_DEFINE_UNARY(f)          \
  template <class T>                   \
  Unary<T> f(const Expression<T>& e) { \
    return Unary<T>(e, FusedOp::f);    \
  }
TENEX_NAMED_UNARY(TENEX_DEFINE_UNARY)
#undef TENEX_DEFINE_UNARY

template <class T>
Unary<T> power(const Expression<T>& e, double p) {
  return Unary<T>(e, FusedOp::power, p);
}
template <class T>
Unary<T> clamp(const Expression<T>& e, double lo, double hi) {
  return Unary<T>(e, FusedOp::clamp, lo, hi);
}
template <class T>
Binary<T> max(const Expression<T>& a, const Expression<T>& b) {
  return Binary<T>(a, b, FusedOp::maximum);
}
template <class T>
Binary<T> min(const Expression<T>& a, const Expression<T>& b) {
  return Binary<T>(a, b, FusedOp::minimum);
}
template <class T>
Unary<T> operator+(const Expression<T>& e, double s) {
  return scalar_op(e, FusedOp::add, s, false);
}
template <class T>
Unary<T> operator+(double s, const Expression<T>& e) {
  return scalar_op(e, FusedOp::add, s, true);
}
template <class T>
Unary<T> operator-(const Expression<T>& e, double s) {
  return scalar_op(e, FusedOp::subtract, s, false);
}
template <class T>
Unary<T> operator-(double s, const Expression<T>& e) {
  return scalar_op(e, FusedOp::subtract, s, true);
}
template <class T>
Unary<T> operator/(double s, const Expression<T>& e) {
  return scalar_op(e, FusedOp::divide, s, true);
}
template <class T>
Reduction<T> sum(const Expression<T>& e, std::string_view labels) {
  return Reduction<T>(e, labels, ReduceOp::sum);
}
template <class T>
Reduction<T> max_over(const Expression<T>& e, std::string_view labels) {
  return Reduction<T>(e, labels, ReduceOp::max);
}
template <class T>
Reduction<T> min_over(const Expression<T>& e, std::string_view labels) {
  return Reduction<T>(e, labels, ReduceOp::min);
}
template <class T>
Unary<T> norm2(const Expression<T>& e) {
  const Unary<T> squares = square(e);
  std::string all;
  for (const std::string& l : squares.labels()) {
    if (!all.empty()) all += ',';
    all += l;
  }
  return Unary<T>(Reduction<T>(squares, all, ReduceOp::sum), FusedOp::sqrt);
}

namespace detail {
template <class T>
Unary<T> map_unary(const Expression<T>& e, std::string name,
                   std::function<typename ObjectTraits<T>::scalar(typename ObjectTraits<T>::scalar)> f) {
  auto function = std::make_shared<ScalarFunction>();
  function->name = std::move(name);
  using S = typename ObjectTraits<T>::scalar;
  if constexpr (std::is_same_v<S, double>) {
    function->f64 = std::move(f);
  } else if constexpr (std::is_same_v<S, float>) {
    function->f32 = std::move(f);
  } else if constexpr (std::is_same_v<S, std::complex<float>>) {
    function->c64 = std::move(f);
  } else {
    function->c128 = std::move(f);
  }
  return Unary<T>(e, std::shared_ptr<const ScalarFunction>(std::move(function)));
}
}  // namespace detail

#define TENEX_INSTANTIATE_ELEMENTWISE(T) \
  template class Unary<T>;               \
  template class Binary<T>;              \
  template class Reduction<T>;           \
  template TENEX_API Unary<T> scalar_op<T>(const Expression<T>&, FusedOp, double, bool);
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_ELEMENTWISE)
#undef TENEX_INSTANTIATE_ELEMENTWISE
#define TENEX_INSTANTIATE_NAMED_UNARY(f) \
  template TENEX_API Unary<TENEX_OBJECT> f<TENEX_OBJECT>(const Expression<TENEX_OBJECT>&);
#define TENEX_INSTANTIATE_FUNCTIONS(T)                                                 \
  template TENEX_API Unary<T> power<T>(const Expression<T>&, double);                  \
  template TENEX_API Unary<T> clamp<T>(const Expression<T>&, double, double);          \
  template TENEX_API Binary<T> max<T>(const Expression<T>&, const Expression<T>&);     \
  template TENEX_API Binary<T> min<T>(const Expression<T>&, const Expression<T>&);     \
  template TENEX_API Unary<T> operator+<T>(const Expression<T>&, double);              \
  template TENEX_API Unary<T> operator+<T>(double, const Expression<T>&);              \
  template TENEX_API Unary<T> operator-<T>(const Expression<T>&, double);              \
  template TENEX_API Unary<T> operator-<T>(double, const Expression<T>&);              \
  template TENEX_API Unary<T> operator/<T>(double, const Expression<T>&);              \
  template TENEX_API Reduction<T> sum<T>(const Expression<T>&, std::string_view);      \
  template TENEX_API Reduction<T> max_over<T>(const Expression<T>&, std::string_view); \
  template TENEX_API Reduction<T> min_over<T>(const Expression<T>&, std::string_view); \
  template TENEX_API Unary<T> norm2<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_FUNCTIONS)
#undef TENEX_INSTANTIATE_FUNCTIONS
#define TENEX_OBJECT ::tenex::Tensor<float>
TENEX_NAMED_UNARY(TENEX_INSTANTIATE_NAMED_UNARY)
#undef TENEX_OBJECT
#define TENEX_OBJECT ::tenex::Tensor<double>
TENEX_NAMED_UNARY(TENEX_INSTANTIATE_NAMED_UNARY)
#undef TENEX_OBJECT
#define TENEX_OBJECT ::tenex::Tensor<std::complex<float>>
TENEX_NAMED_UNARY(TENEX_INSTANTIATE_NAMED_UNARY)
#undef TENEX_OBJECT
#define TENEX_OBJECT ::tenex::Tensor<std::complex<double>>
TENEX_NAMED_UNARY(TENEX_INSTANTIATE_NAMED_UNARY)
#undef TENEX_OBJECT
#define TENEX_OBJECT ::tenex::Shape
TENEX_NAMED_UNARY(TENEX_INSTANTIATE_NAMED_UNARY)
#undef TENEX_OBJECT
#undef TENEX_INSTANTIATE_NAMED_UNARY
#undef TENEX_NAMED_UNARY
#define TENEX_INSTANTIATE_MAP(T)                    \
  template TENEX_API Unary<T> detail::map_unary<T>( \
      const Expression<T>&, std::string,            \
      std::function<typename ObjectTraits<T>::scalar(typename ObjectTraits<T>::scalar)>);
TENEX_FOR_EACH_TENSOR_OBJECT(TENEX_INSTANTIATE_MAP)
#undef TENEX_INSTANTIATE_MAP

}  // namespace tenex
