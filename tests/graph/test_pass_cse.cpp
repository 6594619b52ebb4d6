// Common subexpression elimination (passes::eliminate_common_subexpressions) kind by
// kind: two identical nodes over the same operands become one, and two nodes that differ
// only in one field of their parameter struct stay two. The pass is private to the
// library, so this file is built into tenex_pass_tests with the pass's source.
//
// The kinds are driven from TENEX_FOR_EACH_OP through support/op_cases.hpp: a new kind
// without a case does not compile, and a new parameter field without an entry in its
// case's field_changes() trips a size check there.
#include <doctest/doctest.h>

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/op_cases.hpp"
#include "support/scalars.hpp"
#include "tenex/graph/passes/passes.hpp"

namespace {

using tenex::NodeId;
using tenex::OpGraph;
using tenex::OpKind;
using tenex::OpNode;
using tenex::Shape;
using tenex::Tensor;
using tenex_test::GraphOperands;
using tenex_test::OpCase;
using tenex_test::Scalars;

/// Targets for the outputs that keep the nodes under test alive.
template <class T>
struct Targets {
  Tensor<T> first{Shape{1}}, second{Shape{1}};
};

/// An output writing `id` (outputs are never merged: each writes its own target).
NodeId write(OpGraph& g, NodeId id, const std::shared_ptr<void>& target) {
  const NodeId out = g.add(tenex::OutputParams{}, {id});
  g.bind(out, target);
  return out;
}

/// Nodes of `kind` whose parameters are `params` and whose labels are `labels`.
std::size_t count_like(const OpGraph& g, OpKind kind, const tenex::OpParams& params,
                       const std::vector<std::string>& labels) {
  std::size_t n = 0;
  for (NodeId id = 0; id < g.size(); ++id) {
    const OpNode& node = g.node(id);
    n += node.kind == kind && node.params == params && node.labels == labels ? 1 : 0;
  }
  return n;
}

template <class P, class T>
void check_identical_nodes_merge() {
  using Case = OpCase<P>;
  const OpKind kind = tenex::op_kind_of<P>;
  INFO("kind ", tenex::op_kind_name(kind));
  GraphOperands<T> in;
  Targets<T> targets;
  const NodeId n1 = Case::add(in);
  const NodeId n2 = Case::add(in);
  REQUIRE(n1 != n2);
  REQUIRE(in.g.node(n1).params == in.g.node(n2).params);
  if (kind == OpKind::output) {
    // Two identical outputs still write two targets: the pass leaves them alone.
    tenex::passes::eliminate_common_subexpressions(in.g);
    CHECK(in.g.outputs() == std::vector<NodeId>{n1, n2});
    CHECK(in.g.operands(n1) == std::vector<NodeId>{in.ij});
    CHECK(in.g.operands(n2) == std::vector<NodeId>{in.ij});
    CHECK_NOTHROW(in.g.validate());
    return;
  }
  const NodeId o1 = write(in.g, n1, tenex::detail::Access::storage(targets.first));
  const NodeId o2 = write(in.g, n2, tenex::detail::Access::storage(targets.second));
  REQUIRE(count_like(in.g, kind, Case::sample(), Case::labels()) >= 2);

  tenex::passes::eliminate_common_subexpressions(in.g);
  REQUIRE(in.g.operands(o1).size() == 1);
  REQUIRE(in.g.operands(o2).size() == 1);
  const NodeId kept = in.g.operands(o1)[0];
  CHECK(in.g.operands(o2)[0] == kept);  // both outputs read one node now
  CHECK(in.g.node(kept).kind == kind);
  CHECK(in.g.node(kept).params == tenex::OpParams(Case::sample()));
  // The one that went is read by nothing and reads nothing.
  for (const NodeId n : {n1, n2}) {
    if (n == kept) continue;
    CHECK(in.g.consumers(n).empty());
    CHECK(in.g.operands(n).empty());
  }
  // What the outputs need holds one such node, and is still a valid graph.
  in.g.prune();
  CHECK(count_like(in.g, kind, Case::sample(), Case::labels()) == 1);
  CHECK(in.g.outputs().size() == 2);
  CHECK_NOTHROW(in.g.validate());
}

template <class P, class T>
void check_one_field_apart_stay_apart() {
  using Case = OpCase<P>;
  const OpKind kind = tenex::op_kind_of<P>;
  INFO("kind ", tenex::op_kind_name(kind));
  for (const auto& change : Case::field_changes()) {
    INFO("field ", change.field);
    GraphOperands<T> in;
    Targets<T> targets;
    const NodeId n1 = Case::add(in);
    // The same node (labels, extents, operands, storage, sparse maps) but for one field.
    OpNode copy = in.g.node(n1);
    change.change(copy.template get<P>());
    const NodeId n2 = in.g.add_node(copy, in.g.operands(n1));
    REQUIRE(in.g.node(n1).params != in.g.node(n2).params);
    REQUIRE(in.g.node(n1).labels == in.g.node(n2).labels);
    REQUIRE(in.g.operands(n1) == in.g.operands(n2));
    if (kind == OpKind::output) {
      tenex::passes::eliminate_common_subexpressions(in.g);
      CHECK(in.g.outputs() == std::vector<NodeId>{n1, n2});
      CHECK(in.g.operands(n2) == in.g.operands(n1));
      continue;
    }
    const NodeId o1 = write(in.g, n1, tenex::detail::Access::storage(targets.first));
    const NodeId o2 = write(in.g, n2, tenex::detail::Access::storage(targets.second));
    const std::vector<NodeId> operands = in.g.operands(n1);

    tenex::passes::eliminate_common_subexpressions(in.g);
    CHECK(in.g.operands(o1) == std::vector<NodeId>{n1});
    CHECK(in.g.operands(o2) == std::vector<NodeId>{n2});
    CHECK(in.g.operands(n1) == operands);
    CHECK(in.g.operands(n2) == operands);
    CHECK(in.g.node(n2).template get<P>() != Case::sample());
  }
}

#define TENEX_TEST_KIND_NAME(name, arity, Params) #name,
const std::vector<std::string_view> table_names = {TENEX_FOR_EACH_OP(TENEX_TEST_KIND_NAME)};
#undef TENEX_TEST_KIND_NAME

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("cse: two identical nodes of every kind become one", T, cse_identical) {
  std::set<std::string_view> covered;
#define TENEX_TEST_CSE_IDENTICAL(name, arity, Params) \
  check_identical_nodes_merge<tenex::Params, T>();    \
  covered.insert(#name);
  TENEX_FOR_EACH_OP(TENEX_TEST_CSE_IDENTICAL)
#undef TENEX_TEST_CSE_IDENTICAL
  CHECK(covered == std::set<std::string_view>(table_names.begin(), table_names.end()));
  CHECK(covered.size() == std::variant_size_v<tenex::OpParams> - 1);
}
TEST_CASE_TEMPLATE_APPLY(cse_identical, Scalars);

TEST_CASE_TEMPLATE_DEFINE("cse: nodes one parameter field apart stay apart, for every kind", T, cse_apart) {
  std::set<std::string_view> covered;
  std::size_t fields = 0;
#define TENEX_TEST_CSE_APART(name, arity, Params)          \
  check_one_field_apart_stay_apart<tenex::Params, T>();    \
  fields += OpCase<tenex::Params>::field_changes().size(); \
  covered.insert(#name);
  TENEX_FOR_EACH_OP(TENEX_TEST_CSE_APART)
#undef TENEX_TEST_CSE_APART
  CHECK(covered == std::set<std::string_view>(table_names.begin(), table_names.end()));
  // input 1 (its truncated modes), output 1, contract 4 (alpha, beta, conj_a, conj_b),
  // add/subtract/divide 2 each, scale 2 (alpha and its imaginary part), cholesky 1, eigen_solve
  // 3 and svd 3 (the truncation's numbers, the row modes), qr 1 (the row modes), factor 1,
  // slice 2, chip 2, pow 1, mask 5 (the edits of its list of maps), solve 1, spd_pow 1, fused 7.
  CHECK(fields == 42);
}
TEST_CASE_TEMPLATE_APPLY(cse_apart, Scalars);

TEST_CASE("cse: the same parameters on another operand, or another kind, stay apart") {
  GraphOperands<double> in;
  Targets<double> targets;
  const NodeId on_rect = in.g.add(tenex::ScaleParams{2.0}, {in.sq});
  const NodeId on_other = in.g.add(tenex::ScaleParams{2.0}, {in.sq_b});
  const NodeId add = in.g.add(tenex::AddParams{}, {in.sq, in.sq_b});
  const NodeId subtract = in.g.add(tenex::SubtractParams{}, {in.sq, in.sq_b});
  const NodeId o1 = write(in.g, on_rect, tenex::detail::Access::storage(targets.first));
  const NodeId o2 = write(in.g, on_other, tenex::detail::Access::storage(targets.second));
  const NodeId o3 = write(in.g, add, tenex::detail::Access::storage(targets.first));
  const NodeId o4 = write(in.g, subtract, tenex::detail::Access::storage(targets.second));
  tenex::passes::eliminate_common_subexpressions(in.g);
  CHECK(in.g.operands(o1) == std::vector<NodeId>{on_rect});
  CHECK(in.g.operands(o2) == std::vector<NodeId>{on_other});
  CHECK(in.g.operands(o3) == std::vector<NodeId>{add});
  CHECK(in.g.operands(o4) == std::vector<NodeId>{subtract});
}
