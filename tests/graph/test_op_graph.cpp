// OpGraph: nodes and edges built by hand and through add_to_graph, operand order,
// consumers, outputs, topological order, validation, rewiring, pruning, DOT text, the
// expression layer's memo, and the op kind list.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/ir.hpp>  // the IR, for extenders (before tenex.hpp: it stands alone)
#include <tenex/tenex.hpp>

namespace {

using tenex::NodeId;
using tenex::OpGraph;
using tenex::OpKind;
using tenex::OpNode;
using tenex::Shape;
using tenex::Tensor;

OpNode make_node(OpKind kind, std::vector<std::string> labels, std::vector<std::size_t> extents) {
  OpNode n;
  n.kind = kind;
  n.labels = std::move(labels);
  n.extents = std::move(extents);
  return n;
}

std::size_t count_kind(const OpGraph& g, OpKind kind) {
  std::size_t n = 0;
  for (NodeId id = 0; id < g.size(); ++id) n += g.node(id).kind == kind ? 1 : 0;
  return n;
}

bool contains(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

std::size_t position(const std::vector<NodeId>& order, NodeId id) {
  return static_cast<std::size_t>(std::find(order.begin(), order.end(), id) - order.begin());
}

// Every node appears once, after each of its operands.
void check_topological(const OpGraph& g) {
  const std::vector<NodeId> order = g.topological_order();
  REQUIRE(order.size() == g.size());
  CHECK(std::set<NodeId>(order.begin(), order.end()).size() == g.size());
  for (NodeId id = 0; id < g.size(); ++id) {
    for (NodeId op : g.operands(id)) {
      CAPTURE(id);
      CAPTURE(op);
      CHECK(position(order, op) < position(order, id));
    }
  }
}

// Two input nodes with storage (from add_to_graph) that hand-built nodes can use.
struct Inputs {
  Tensor<double> a{Shape{2, 3}}, b{Shape{3, 4}};
  OpGraph g;
  NodeId ia = a("i,j").add_to_graph(g);
  NodeId ib = b("j,k").add_to_graph(g);
};

}  // namespace

TEST_CASE("op graph: add_node, node and operand order") {
  OpGraph g;
  CHECK(g.size() == 0);
  const NodeId x = g.add_node(make_node(OpKind::input, {"i", "j"}, {2, 3}));
  const NodeId y = g.add_node(make_node(OpKind::input, {"j", "k"}, {3, 4}));
  const NodeId c = g.add_node(make_node(OpKind::contract, {"i", "k"}, {2, 4}), {y, x});
  const NodeId s = g.add_node(make_node(OpKind::subtract, {"i", "k"}, {2, 4}), {c, c});
  CHECK(g.size() == 4);
  CHECK(x != y);
  CHECK(g.node(c).kind == OpKind::contract);
  CHECK(g.node(c).labels == std::vector<std::string>{"i", "k"});
  CHECK(g.node(c).extents == std::vector<std::size_t>{2, 4});
  CHECK(g.node(c).size() == 8);
  CHECK(g.node(c).elements == 8);  // filled in from the extents
  // Operand order is the order given, not the order of the ids.
  CHECK(g.operands(c) == std::vector<NodeId>{y, x});
  CHECK(g.operands(s) == std::vector<NodeId>{c, c});
  CHECK(g.operands(x).empty());
  // Nodes are writable in place.
  g.node(c).get<tenex::ContractParams>().alpha = 4.0;
  CHECK(std::as_const(g).node(c).get<tenex::ContractParams>().alpha == 4.0);
  // Unknown ids are internal errors.
  CHECK_THROWS_AS((void)g.node(17), tenex::InternalError);
  CHECK_THROWS_AS((void)g.operands(17), tenex::InternalError);
  CHECK_THROWS_AS(g.add_node(make_node(OpKind::scale, {"i"}, {2}), {17}), tenex::InternalError);
  CHECK(g.size() == 4);
}

TEST_CASE("op graph: consumers lists each consumer once") {
  OpGraph g;
  const NodeId x = g.add_node(make_node(OpKind::input, {"i"}, {5}));
  const NodeId y = g.add_node(make_node(OpKind::input, {"i"}, {5}));
  const NodeId sum = g.add_node(make_node(OpKind::add, {"i"}, {5}), {x, x});
  const NodeId div = g.add_node(make_node(OpKind::divide, {"i"}, {5}), {y, x});
  CHECK(g.consumers(x) == std::vector<NodeId>{sum, div});
  CHECK(g.consumers(y) == std::vector<NodeId>{div});
  CHECK(g.consumers(sum).empty());
  CHECK(g.consumers(div).empty());
}

TEST_CASE("op graph: outputs are the nodes of kind output") {
  OpGraph g;
  const NodeId x = g.add_node(make_node(OpKind::input, {"i"}, {5}));
  CHECK(g.outputs().empty());
  const NodeId o1 = g.add_node(make_node(OpKind::output, {"i"}, {5}), {x});
  const NodeId s = g.add_node(make_node(OpKind::scale, {"i"}, {5}), {x});
  const NodeId o2 = g.add_node(make_node(OpKind::output, {"i"}, {5}), {s});
  CHECK(g.outputs() == std::vector<NodeId>{o1, o2});
}

TEST_CASE("op graph: topological order puts operands first") {
  OpGraph g;
  // Ids deliberately not in dependency order after rewiring.
  const NodeId x = g.add_node(make_node(OpKind::input, {"i"}, {3}));
  const NodeId s1 = g.add_node(make_node(OpKind::scale, {"i"}, {3}), {x});
  const NodeId s2 = g.add_node(make_node(OpKind::scale, {"i"}, {3}), {x});
  const NodeId sum = g.add_node(make_node(OpKind::add, {"i"}, {3}), {s1, s2});
  const NodeId late = g.add_node(make_node(OpKind::input, {"i"}, {3}));
  g.set_operand(s1, 0, late);  // s1 now depends on a node with a larger id
  check_topological(g);
  const auto order = g.topological_order();
  CHECK(position(order, late) < position(order, s1));
  CHECK(position(order, s1) < position(order, sum));
  CHECK(position(order, s2) < position(order, sum));

  // A cycle is an internal error.
  g.set_operand(s2, 0, sum);
  CHECK_THROWS_AS((void)g.topological_order(), tenex::InternalError);
  CHECK_THROWS_AS(g.validate(), tenex::InternalError);
}

TEST_CASE("op graph: the graph of an expression is valid and ordered") {
  Tensor<double> a(Shape{3, 4}), b(Shape{4, 5}), c(Shape{3, 5});
  OpGraph g;
  const NodeId id = ((a("i,k") * b("k,j") + 2.0 * c("i,j")) - a("i,k") * b("k,j")).add_to_graph(g);
  CHECK_NOTHROW(g.validate());
  check_topological(g);
  CHECK(g.node(id).kind == OpKind::subtract);
  CHECK(g.node(id).labels == std::vector<std::string>{"i", "j"});
  CHECK(g.node(id).extents == std::vector<std::size_t>{3, 5});
  CHECK(count_kind(g, OpKind::input) == 3);
  CHECK(g.outputs().empty());
  // Inputs carry the storage they read.
  for (NodeId n = 0; n < g.size(); ++n) {
    if (g.node(n).kind == OpKind::input) CHECK(g.binding(n) != nullptr);
  }
}

TEST_CASE("op graph: validate rejects malformed nodes") {
  SUBCASE("a well-formed graph passes") {
    Inputs in;
    const NodeId c = in.g.add_node(make_node(OpKind::contract, {"i", "k"}, {2, 4}), {in.ia, in.ib});
    OpNode out = make_node(OpKind::output, {"i", "k"}, {2, 4});
    const NodeId o = in.g.add_node(std::move(out), {c});
    in.g.bind(o, in.g.binding(in.ia));
    CHECK_NOTHROW(in.g.validate());
  }
  SUBCASE("too few operands") {
    Inputs in;
    in.g.add_node(make_node(OpKind::contract, {"i", "j"}, {2, 3}), {in.ia});
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
  }
  SUBCASE("too many operands") {
    Inputs in;
    in.g.add_node(make_node(OpKind::scale, {"i", "j"}, {2, 3}), {in.ia, in.ia});
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
  }
  SUBCASE("no operand for a unary kind") {
    Inputs in;
    in.g.add_node(make_node(OpKind::cholesky, {"i", "j"}, {2, 2}));
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
  }
  SUBCASE("labels and extents of different lengths") {
    Inputs in;
    in.g.add_node(make_node(OpKind::scale, {"i", "j"}, {2}), {in.ia});
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
  }
  SUBCASE("a repeated label in a non-input node") {
    Inputs in;
    in.g.add_node(make_node(OpKind::scale, {"i", "i"}, {2, 2}), {in.ia});
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
  }
  SUBCASE("an input may repeat a label") {
    Tensor<double> d(Shape{3, 3});
    OpGraph g;
    const NodeId id = d("i,i").add_to_graph(g);
    CHECK(g.node(id).labels == std::vector<std::string>{"i"});
    CHECK(count_kind(g, OpKind::input) == 1);
    bool repeated_input = false;
    for (NodeId n = 0; n < g.size(); ++n) {
      if (g.node(n).kind == OpKind::input) repeated_input = g.node(n).labels == std::vector<std::string>{"i", "i"};
    }
    CHECK(repeated_input);
    CHECK_NOTHROW(g.validate());
  }
  SUBCASE("an input without storage") {
    OpGraph g;
    g.add_node(make_node(OpKind::input, {"i"}, {2}));
    CHECK_THROWS_AS(g.validate(), tenex::InternalError);
  }
  SUBCASE("a sparse map index that does not exist") {
    Inputs in;
    OpNode n = make_node(OpKind::scale, {"i", "j"}, {2, 3});
    n.sparse_maps = {0};
    in.g.add_node(std::move(n), {in.ia});
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
  }
}

TEST_CASE("op graph: validate names the node in its message") {
  Inputs in;
  in.g.add_node(make_node(OpKind::contract, {"i", "j"}, {2, 3}), {in.ia});
  try {
    in.g.validate();
    FAIL("validate() accepted a contract with one operand");
  } catch (const tenex::InternalError& e) {
    const std::string message = e.what();
    CHECK_MESSAGE(contains(message, "contract"), message);
    CHECK_MESSAGE(contains(message, "node 2"), message);
  }
}

TEST_CASE("op graph: replace_uses and set_operand rewire edges") {
  OpGraph g;
  const NodeId x = g.add_node(make_node(OpKind::input, {"i"}, {4}));
  const NodeId y = g.add_node(make_node(OpKind::input, {"i"}, {4}));
  const NodeId z = g.add_node(make_node(OpKind::input, {"i"}, {4}));
  const NodeId sub = g.add_node(make_node(OpKind::subtract, {"i"}, {4}), {x, y});
  const NodeId sc = g.add_node(make_node(OpKind::scale, {"i"}, {4}), {x});

  g.replace_uses(x, z);
  CHECK(g.operands(sub) == std::vector<NodeId>{z, y});  // the operand index is kept
  CHECK(g.operands(sc) == std::vector<NodeId>{z});
  CHECK(g.consumers(x).empty());
  CHECK(g.consumers(z) == std::vector<NodeId>{sub, sc});
  CHECK(g.size() == 5);  // nothing is removed

  g.set_operand(sub, 1, x);
  CHECK(g.operands(sub) == std::vector<NodeId>{z, x});
  CHECK(g.consumers(y).empty());
  CHECK(g.consumers(x) == std::vector<NodeId>{sub});
  g.set_operand(sub, 0, x);
  CHECK(g.operands(sub) == std::vector<NodeId>{x, x});
  CHECK(g.consumers(z) == std::vector<NodeId>{sc});

  CHECK_THROWS_AS(g.set_operand(sub, 2, y), tenex::InternalError);
  CHECK_THROWS_AS(g.set_operand(sc, 0, 99), tenex::InternalError);
  CHECK_THROWS_AS(g.replace_uses(99, x), tenex::InternalError);
  CHECK(g.operands(sub) == std::vector<NodeId>{x, x});
}

TEST_CASE("op graph: a value read by 20,000 nodes loses and changes its uses one by one") {
  // Each removal and rewiring costs the consumer's operands, not the 20,000 uses of x.
  constexpr std::size_t n = 20000;
  OpGraph g;
  const NodeId x = g.add_node(make_node(OpKind::input, {"i"}, {4}));
  const NodeId y = g.add_node(make_node(OpKind::input, {"i"}, {4}));
  std::vector<NodeId> uses;
  for (std::size_t k = 0; k < n; ++k) uses.push_back(g.add_node(make_node(OpKind::add, {"i"}, {4}), {x, y}));
  CHECK(g.has_consumers(x));
  CHECK_FALSE(g.only_consumer(x));
  CHECK(g.consumers(x).size() == n);
  // Every other use detached, a quarter moved to y: the rest stays in order.
  for (std::size_t k = 0; k < n; k += 2) g.detach(uses[k]);
  for (std::size_t k = 1; k < n; k += 4) g.set_operand(uses[k], 0, y);
  std::vector<NodeId> expected;
  for (std::size_t k = 3; k < n; k += 4) expected.push_back(uses[k]);
  CHECK(g.consumers(x) == expected);
  CHECK(g.operands(uses[0]).empty());
  CHECK(g.operands(uses[1]) == std::vector<NodeId>{y, y});
  CHECK(g.operands(uses[3]) == std::vector<NodeId>{x, y});
  const std::vector<NodeId> order = g.topological_order();
  REQUIRE(order.size() == g.size());
  std::vector<std::size_t> at(g.size());
  for (std::size_t i = 0; i < order.size(); ++i) at[order[i]] = i;
  bool operands_first = true;
  for (NodeId id = 0; id < g.size(); ++id) {
    for (NodeId op : g.operands(id)) operands_first = operands_first && at[op] < at[id];
  }
  CHECK(operands_first);
  // Down to one consumer, then none.
  for (std::size_t k = 3; k + 4 < n; k += 4) g.detach(uses[k]);
  CHECK(g.only_consumer(x) == uses[n - 1]);
  g.replace_uses(x, y);
  CHECK_FALSE(g.has_consumers(x));
  CHECK_FALSE(g.only_consumer(x));
  CHECK(g.operands(uses[n - 1]) == std::vector<NodeId>{y, y});
  CHECK(g.only_consumer(y) == std::nullopt);
}

TEST_CASE("op graph: prune removes what no output needs") {
  OpGraph g;
  const NodeId x = g.add_node(make_node(OpKind::input, {"i", "j"}, {2, 3}));
  const NodeId dead_in = g.add_node(make_node(OpKind::input, {"j"}, {3}));
  const NodeId y = g.add_node(make_node(OpKind::input, {"j", "k"}, {3, 4}));
  const NodeId dead = g.add_node(make_node(OpKind::scale, {"i", "j"}, {2, 3}), {x});
  const NodeId c = g.add_node(make_node(OpKind::contract, {"i", "k"}, {2, 4}), {x, y});
  g.node(c).get<tenex::ContractParams>().alpha = 3.0;
  const NodeId dead2 = g.add_node(make_node(OpKind::reduce, {"j"}, {3}), {dead});
  const NodeId out = g.add_node(make_node(OpKind::output, {"i", "k"}, {2, 4}), {c});

  const std::vector<NodeId> mapping = g.prune();
  REQUIRE(mapping.size() == 7);
  CHECK(g.size() == 4);
  for (NodeId old : {dead_in, dead, dead2}) {
    CAPTURE(old);
    CHECK(mapping[old] == g.size());
  }
  std::set<NodeId> kept;
  for (NodeId old : {x, y, c, out}) {
    CAPTURE(old);
    REQUIRE(mapping[old] < g.size());
    kept.insert(mapping[old]);
  }
  CHECK(kept.size() == 4);
  // The kept nodes keep their contents and edges.
  CHECK(g.node(mapping[x]).labels == std::vector<std::string>{"i", "j"});
  CHECK(g.node(mapping[c]).kind == OpKind::contract);
  CHECK(g.node(mapping[c]).get<tenex::ContractParams>().alpha == 3.0);
  CHECK(g.node(mapping[out]).kind == OpKind::output);
  CHECK(g.operands(mapping[c]) == std::vector<NodeId>{mapping[x], mapping[y]});
  CHECK(g.operands(mapping[out]) == std::vector<NodeId>{mapping[c]});
  CHECK(g.outputs() == std::vector<NodeId>{mapping[out]});
  check_topological(g);
}

TEST_CASE("op graph: prune keeps everything when there is no output") {
  Tensor<double> a(Shape{2, 3}), b(Shape{3, 4});
  OpGraph g;
  (void)(a("i,j") * b("j,k")).add_to_graph(g);
  (void)(2.0 * a("i,j")).add_to_graph(g);  // not used by the first expression
  const std::size_t before = g.size();
  REQUIRE(g.outputs().empty());
  const std::vector<NodeId> mapping = g.prune();
  CHECK(g.size() == before);
  REQUIRE(mapping.size() == before);
  for (NodeId id = 0; id < before; ++id) CHECK(mapping[id] == id);
  CHECK_NOTHROW(g.validate());
}

TEST_CASE("op graph: to_dot shows kinds, labels, extents and parameters") {
  OpGraph g;
  const NodeId x = g.add_node(make_node(OpKind::input, {"i", "j"}, {7, 11}));
  OpNode s = make_node(OpKind::scale, {"i", "j"}, {7, 11});
  s.params = tenex::ScaleParams{2.5};
  const NodeId sc = g.add_node(std::move(s), {x});
  OpNode d = make_node(OpKind::subtract, {"i", "j"}, {7, 11});
  tenex::SubtractParams minus;
  minus.alpha_b = -2.0;
  d.params = minus;
  g.add_node(std::move(d), {x, sc});
  OpNode c = make_node(OpKind::contract, {"i"}, {7});
  g.add_node(std::move(c), {x, x});
  OpNode sl = make_node(OpKind::slice, {"i", "j"}, {2, 3});
  sl.params = tenex::SliceParams{{1, 2}, {3, 5}};
  g.add_node(std::move(sl), {x});

  const std::string dot = g.to_dot();
  CHECK_MESSAGE(contains(dot, "digraph"), dot);
  CHECK_MESSAGE(contains(dot, "input"), dot);
  CHECK_MESSAGE(contains(dot, "scale alpha=2.5"), dot);
  CHECK_MESSAGE(contains(dot, "subtract alpha=1,-2"), dot);
  CHECK_MESSAGE(contains(dot, "(i,j) {7, 11}"), dot);
  CHECK_MESSAGE(contains(dot, "(i) {7}"), dot);
  CHECK_MESSAGE(contains(dot, "slice lo={1, 2} hi={3, 5}"), dot);
  // A contract with alpha 1 prints no alpha.
  CHECK_MESSAGE(contains(dot, "label=\"contract\\n"), dot);
  CHECK_FALSE(contains(dot, "contract alpha"));

  // Through an expression: a scaled term shows its factor.
  Tensor<double> a(Shape{3, 4}), b(Shape{4, 3});
  OpGraph h;
  (void)(a("i,j") + 2.0 * b("j,i")).add_to_graph(h);
  const std::string dot2 = h.to_dot();
  CHECK_MESSAGE(contains(dot2, "alpha=2"), dot2);
  CHECK_MESSAGE(contains(dot2, "add"), dot2);
  CHECK_MESSAGE(contains(dot2, "{3, 4}"), dot2);
}

TEST_CASE("op graph: add_to_graph memoizes a handle") {
  Tensor<double> a(Shape{3, 4}), b(Shape{4, 5});
  OpGraph g;
  auto x = a("i,k") * b("k,j");
  const NodeId first = x.add_to_graph(g);
  const std::size_t size = g.size();
  CHECK(size >= 3);
  const NodeId second = x.add_to_graph(g);
  CHECK(first == second);
  CHECK(g.size() == size);
  // Copies of a handle are the same node.
  auto y = x;
  CHECK(y.add_to_graph(g) == first);
  CHECK(g.size() == size);
  // Another graph starts afresh.
  OpGraph h;
  (void)x.add_to_graph(h);
  CHECK(h.size() == size);
  // A handle used twice inside one expression is built once.
  OpGraph k;
  const NodeId sum = (x + x).add_to_graph(k);
  CHECK(k.node(sum).kind == OpKind::add);
  REQUIRE(k.operands(sum).size() == 2);
  CHECK(k.operands(sum)[0] == k.operands(sum)[1]);
  CHECK(k.size() == size + 1);
}

TEST_CASE("op graph: expressions added one after another to one graph stay distinct") {
  Tensor<double> a(Shape{3, 4}), b(Shape{4, 5}), c(Shape{3, 4}), d(Shape{4, 5});
  SUBCASE("a handle, then an expression using it") {
    OpGraph g;
    auto x = a("i,k") * b("k,j");
    const NodeId first = x.add_to_graph(g);
    const std::size_t size = g.size();
    const NodeId sum = (x + x).add_to_graph(g);
    CHECK(sum != first);
    CHECK(g.node(sum).kind == OpKind::add);
    CHECK(g.operands(sum) == std::vector<NodeId>{first, first});
    CHECK(g.size() == size + 1);
  }
  SUBCASE("two unrelated products") {
    OpGraph g;
    const NodeId first = (a("i,k") * b("k,j")).add_to_graph(g);
    const NodeId second = (c("i,k") * d("k,j")).add_to_graph(g);
    CHECK(first != second);
    CHECK(count_kind(g, OpKind::contract) == 2);
    CHECK(count_kind(g, OpKind::input) == 4);
  }
}

TEST_CASE("op graph: handles of one tensor with the same labels share the input node") {
  Tensor<double> a(Shape{3, 4}), b(Shape{3, 4});
  OpGraph g;
  auto y = a("i,j");
  auto z = a("i,j");
  const NodeId sum = (y + z).add_to_graph(g);
  const std::vector<NodeId> ops = g.operands(sum);
  REQUIRE(ops.size() == 2);
  CHECK(ops[0] == ops[1]);
  CHECK(g.node(ops[0]).kind == OpKind::input);
  CHECK(count_kind(g, OpKind::input) == 1);
  CHECK(g.size() == 2);
  // Other labels or another tensor make another input.
  (void)(a("j,i") + b("j,i")).add_to_graph(g);
  CHECK(count_kind(g, OpKind::input) == 3);
}

TEST_CASE("op graph: op_kind_name and op_kind_arity cover every kind") {  // 17 with mask
  std::set<std::string_view> names;
  std::size_t kinds = 0;
#define TENEX_TEST_CHECK_KIND(name, arity, Params)      \
  CHECK(tenex::op_kind_name(OpKind::name) == #name);    \
  CHECK(tenex::op_kind_arity(OpKind::name) == (arity)); \
  names.insert(tenex::op_kind_name(OpKind::name));      \
  ++kinds;
  TENEX_FOR_EACH_OP(TENEX_TEST_CHECK_KIND)
#undef TENEX_TEST_CHECK_KIND
  CHECK(names.size() == kinds);
  CHECK(kinds == 21);
  CHECK(tenex::op_kind_arity(OpKind::contract) == -1);  // 2, or 3 with the addend
  CHECK(tenex::op_kind_arity(OpKind::input) == -1);
  CHECK(tenex::op_kind_arity(OpKind::eigen_solve) == -1);
  CHECK(tenex::op_kind_name(OpKind::eigen_solve) == "eigen_solve");
}
