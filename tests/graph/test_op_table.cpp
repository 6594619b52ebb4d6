// The op table (TENEX_FOR_EACH_OP) kind by kind, through the public OpGraph::add and
// add_input: for every kind a node with real operands, its DOT text with its parameters,
// the labels and extents its shape rule infers, the nodes the rule rejects (ShapeError from
// add, InternalError from validate), and the equality of its parameter struct field by
// field, which common subexpression elimination relies on.
//
// The kinds are driven from the table itself: a kind without an OpCase (support/op_cases.hpp)
// or a Rejects specialisation here does not compile, and the count of kinds covered is
// checked against the table.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/op_cases.hpp"
#include "support/scalars.hpp"

namespace {

using tenex::NodeId;
using tenex::OpGraph;
using tenex::OpKind;
using tenex::OpNode;
using tenex::OpParams;
using tenex::Shape;
using tenex::Tensor;
using tenex_test::GraphOperands;
using tenex_test::OpCase;
using tenex_test::Scalars;

constexpr std::size_t kind_count = std::variant_size_v<OpParams> - 1;  // less std::monostate

/// The label text DOT shows for node `id` (between `label="` and `", shape`).
std::string dot_label(const OpGraph& g, NodeId id) {
  const std::string dot = g.to_dot();
  const std::string start = "\n" + std::to_string(id) + "[label=\"";
  const std::size_t at = dot.find(start);
  if (at == std::string::npos) return "<node " + std::to_string(id) + " not in DOT:\n" + dot + ">";
  const std::size_t from = at + start.size();
  const std::size_t to = dot.find("\", shape", from);
  if (to == std::string::npos) return "<unterminated label in DOT:\n" + dot + ">";
  return dot.substr(from, to - from);
}

std::string message(const std::string& kind, const std::string& labels, const std::string& what) {
  return "tenex: OpGraph::add: " + kind + " (\"" + labels + "\"): " + what;
}

// Checks that `add` throws ShapeError with `text` and leaves the graph as it was.
#define CHECK_ADD_REJECTS(graph, add_call, text)                                  \
  do {                                                                            \
    const std::size_t size_before_ = (graph).size();                              \
    const std::string expected_ = (text);                                         \
    CHECK_THROWS_WITH_AS((void)(add_call), expected_.c_str(), tenex::ShapeError); \
    CHECK((graph).size() == size_before_);                                        \
    CHECK_NOTHROW((graph).validate());                                            \
  } while (false)

// ---- the nodes each kind's shape rule rejects -------------------------------------------

template <class P>
struct Rejects {
  static_assert(!std::is_same_v<P, P>, "test_op_table.cpp: a kind of TENEX_FOR_EACH_OP has no Rejects; add one");
};

template <>
struct Rejects<tenex::InputParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add_input(in.rect, "i"),
                      "tenex: OpGraph::add_input: labels \"i\" name 1 modes but the tensor has extents {2, 3}");
    CHECK_ADD_REJECTS(in.g, in.g.add_input(in.rect, "i,j,k"),
                      "tenex: OpGraph::add_input: labels \"i,j,k\" name 3 modes but the tensor has extents {2, 3}");
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::InputParams{}, {in.ij, in.jk}),
                      message("input", "", "an input has at most one operand (the output writing it)"));
    // add() takes no extents: an input of a produced value with labels comes from the library.
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::InputParams{}, {in.ij}, {"i", "j"}),
                      message("input", "i,j", "has a different number of labels and extents"));
    // A repeated label is allowed on an input (a diagonal where it is used).
    const NodeId d = in.g.add_input(in.square, "i,i");
    CHECK(in.g.node(d).labels == tenex_test::Labels{"i", "i"});
    CHECK(in.g.node(d).extents == tenex_test::Extents{3, 3});
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::OutputParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::OutputParams;
    CHECK_ADD_REJECTS(in.g, in.g.add(OutputParams{{"p", "q"}}, {in.ij}, {"p", "z"}),
                      message("output", "p,z", "label \"z\" is not one of the operand's (p,q)"));
    CHECK_ADD_REJECTS(in.g, in.g.add(OutputParams{{"p"}}, {in.ij}),
                      message("output", "", "renames 2 operand labels to 1"));
    CHECK_ADD_REJECTS(in.g, in.g.add(OutputParams{{"p", "q"}}, {in.ij}, {"p"}),
                      message("output", "p", "writes 1 of 2 operand modes"));
    // Without a rename the operand's labels are kept.
    const NodeId same = in.g.add(OutputParams{}, {in.ij});
    CHECK(in.g.node(same).labels == tenex_test::Labels{"i", "j"});
    CHECK(in.g.node(same).extents == tenex_test::Extents{2, 3});
    // An output must have a target to write.
    CHECK_THROWS_AS(in.g.validate(), tenex::InternalError);
    in.g.bind(same, tenex::detail::Access::storage(in.rect));
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::ReduceParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::ReduceParams;
    CHECK_ADD_REJECTS(in.g, in.g.add(ReduceParams{}, {in.ij}, {"i", "z"}),
                      message("reduce", "i,z", "label \"z\" is on no operand"));
    // Sum over a label and permutation.
    const NodeId sum = in.g.add(ReduceParams{}, {in.ij}, {"j"});
    CHECK(in.g.node(sum).extents == tenex_test::Extents{3});
    const NodeId perm = in.g.add(ReduceParams{}, {in.ijk}, {"k", "i", "j"});
    CHECK(in.g.node(perm).extents == tenex_test::Extents{4, 2, 3});
    CHECK(tenex::describe_params(in.g.node(perm).params).empty());
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::ContractParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::ContractParams;
    const NodeId kj = in.g.add_input(in.right, "k,j");  // (k,j) {3, 4}: j has extent 4
    CHECK_ADD_REJECTS(in.g, in.g.add(ContractParams{}, {in.ij, kj}),
                      message("contract", "i,k", "label \"j\" has extents 3 and 4 in the operands"));
    CHECK_ADD_REJECTS(in.g, in.g.add(ContractParams{}, {in.ij, in.jk}, {"i", "z"}),
                      message("contract", "i,z", "label \"z\" is on no operand"));
    // Chosen labels: a transposed result, a batch (Hadamard) label, and a full contraction.
    const NodeId t = in.g.add(ContractParams{}, {in.ij, in.jk}, {"k", "i"});
    CHECK(in.g.node(t).extents == tenex_test::Extents{4, 2});
    const NodeId batch = in.g.add(ContractParams{}, {in.ij, in.jk}, {"i", "j", "k"});
    CHECK(in.g.node(batch).extents == tenex_test::Extents{2, 3, 4});
    const NodeId dot = in.g.add(ContractParams{}, {in.j, in.j});
    CHECK(in.g.node(dot).labels.empty());
    CHECK(in.g.node(dot).extents.empty());
    CHECK(dot_label(in.g, t) == "contract\\n(k,i) {4, 2}");  // alpha 1 is not shown
    CHECK_NOTHROW(in.g.validate());
  }
};

template <class P>
struct ElementwiseRejects {
  template <class T>
  static void check(GraphOperands<T>& in) {
    const std::string name(tenex::op_kind_name(tenex::op_kind_of<P>));
    const NodeId vi = in.g.add_input(in.vec, "i");  // (i) {3}, but i is 2 in (i,j)
    CHECK_ADD_REJECTS(in.g, in.g.add(P{}, {in.ij, vi}),
                      message(name, "i,j", "label \"i\" has extents 2 and 3 in the operands"));
    CHECK_ADD_REJECTS(in.g, in.g.add(P{}, {in.ij, in.j}, {"i", "z"}),
                      message(name, "i,z", "label \"z\" is on no operand"));
    // Broadcasting both ways: (j) with (i,j) gives the union in first-seen order.
    const NodeId outer = in.g.add(P{}, {in.j, in.ij});
    CHECK(in.g.node(outer).labels == tenex_test::Labels{"j", "i"});
    CHECK(in.g.node(outer).extents == tenex_test::Extents{3, 2});
    CHECK(dot_label(in.g, outer) == name + "\\n(j,i) {3, 2}");  // alphas of 1 are not shown
    CHECK_NOTHROW(in.g.validate());
  }
};
template <>
struct Rejects<tenex::AddParams> : ElementwiseRejects<tenex::AddParams> {};
template <>
struct Rejects<tenex::SubtractParams> : ElementwiseRejects<tenex::SubtractParams> {};
template <>
struct Rejects<tenex::DivideParams> : ElementwiseRejects<tenex::DivideParams> {};

template <>
struct Rejects<tenex::ScaleParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::ScaleParams{2.0}, {in.ij}, {"j", "i"}),
                      message("scale", "j,i", "labels (j,i) should be the operand's (i,j)"));
  }
};

template <>
struct Rejects<tenex::CholeskyParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::CholeskyParams{}, {in.ij}),
                      message("cholesky", "", "the operand (\"i,j\") {2, 3} is not square"));
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::CholeskyParams{}, {in.ijk}),
                      message("cholesky", "", "the operand (\"i,j,k\") {2, 3, 4} is not a matrix"));
    const NodeId lower = in.g.add(tenex::CholeskyParams{}, {in.sq});
    CHECK(dot_label(in.g, lower) == "cholesky\\n(i,j) {3, 3}");
  }
};

template <>
struct Rejects<tenex::EigenSolveParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::EigenSolveParams;
    Tensor<T> small(Shape{2, 2});
    const NodeId s2 = in.g.add_input(small, "i,j");
    CHECK_ADD_REJECTS(in.g, in.g.add(EigenSolveParams{}, {in.ij}),
                      message("eigen_solve", "", "the operand (\"i,j\") {2, 3} is not square"));
    CHECK_ADD_REJECTS(in.g, in.g.add(EigenSolveParams{}, {in.sq, s2}),
                      message("eigen_solve", "", "operands of different shapes"));
    CHECK_ADD_REJECTS(in.g, in.g.add(EigenSolveParams{}, {in.sq, in.ij}),
                      message("eigen_solve", "", "the operand (\"i,j\") {2, 3} is not square"));
    // The standard problem: one operand, packed vectors (n x n) then values (n).
    const NodeId standard = in.g.add(EigenSolveParams{}, {in.sq});
    CHECK(in.g.node(standard).labels == tenex_test::Labels{"i", "j"});
    CHECK(in.g.node(standard).extents == tenex_test::Extents{3, 3});
    CHECK(in.g.node(standard).elements == 3 * 3 + 3);
    const NodeId values = in.g.add(tenex::FactorParams{1}, {standard}, {"j"});
    CHECK(in.g.node(values).extents == tenex_test::Extents{3});
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::QrParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::QrParams{}, {in.j}),
                      message("qr", "", "the operand (\"j\") {3} is not a matrix"));
    const NodeId packed = in.g.add(tenex::QrParams{}, {in.ij});
    CHECK(in.g.node(packed).elements == 2 * 2 + 2 * 3);  // Q (m x k), R (k x n), k = min(m, n)
    const NodeId q = in.g.add(tenex::FactorParams{0}, {packed}, {"i", "k"});
    CHECK(in.g.node(q).extents == tenex_test::Extents{2, 2});
    const NodeId r = in.g.add(tenex::FactorParams{1}, {packed}, {"k", "j"});
    CHECK(in.g.node(r).extents == tenex_test::Extents{2, 3});
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::SvdParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(
        in.g, in.g.add(tenex::SvdParams{{}, 3}, {in.ijk}),
        message("svd", "", "the operand (\"i,j,k\") {2, 3, 4} has no column modes after its 3 row modes"));
    // Over label groups: (i,j) the rows, k the columns, a 6 x 4 matrix.
    const NodeId grouped = in.g.add(tenex::SvdParams{{}, 2}, {in.ijk});
    CHECK(in.g.node(grouped).elements == 6 * 4 + 4 + 4 * 4);
    const NodeId grouped_u = in.g.add(tenex::FactorParams{0}, {grouped}, {"i", "j", "q"});
    CHECK(in.g.node(grouped_u).extents == tenex_test::Extents{2, 3, 4});
    const NodeId grouped_vt = in.g.add(tenex::FactorParams{2}, {grouped}, {"q", "k"});
    CHECK(in.g.node(grouped_vt).extents == tenex_test::Extents{4, 4});
    const NodeId packed = in.g.add(tenex::SvdParams{}, {in.big});  // 4 x 6: k = 4
    CHECK(in.g.node(packed).elements == 4 * 4 + 4 + 4 * 6);
    const NodeId u = in.g.add(tenex::FactorParams{0}, {packed}, {"i", "k"});
    CHECK(in.g.node(u).extents == tenex_test::Extents{4, 4});
    const NodeId s = in.g.add(tenex::FactorParams{1}, {packed}, {"k"});
    CHECK(in.g.node(s).extents == tenex_test::Extents{4});
    const NodeId vt = in.g.add(tenex::FactorParams{2}, {packed}, {"k", "j"});
    CHECK(in.g.node(vt).extents == tenex_test::Extents{4, 6});
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::FactorParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::FactorParams;
    CHECK_ADD_REJECTS(in.g, in.g.add(FactorParams{0}, {in.ij}, {"i", "j"}),
                      message("factor", "i,j", "the operand is a node of kind input, not a packed decomposition"));
    const NodeId qr = in.g.add(tenex::QrParams{}, {in.ij});
    CHECK_ADD_REJECTS(in.g, in.g.add(FactorParams{2}, {qr}, {"k", "j"}),
                      message("factor", "k,j", "factor 2 of a qr does not exist"));
    const NodeId svd = in.g.add(tenex::SvdParams{}, {in.ij});
    CHECK_ADD_REJECTS(in.g, in.g.add(FactorParams{1}, {svd}, {"k", "j"}),
                      message("factor", "k,j", "factor 1 has 1 modes, labels (k,j) name 2"));
    // A factor's labels are new names: they must be given.
    CHECK_ADD_REJECTS(in.g, in.g.add(FactorParams{2}, {svd}),
                      message("factor", "", "factor 2 has 2 modes, labels () name 0"));
    const NodeId u = in.g.add(FactorParams{0}, {svd}, {"i", "k"});
    CHECK(dot_label(in.g, u) == "factor 0\\n(i,k) {2, 2}");
  }
};

template <>
struct Rejects<tenex::SliceParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::SliceParams;
    CHECK_ADD_REJECTS(in.g, in.g.add(SliceParams{{1, 2}, {3, 7}}, {in.big}),
                      message("slice", "", "bounds [2, 7) do not fit extent 6"));
    CHECK_ADD_REJECTS(in.g, in.g.add(SliceParams{{3, 0}, {1, 6}}, {in.big}),
                      message("slice", "", "bounds [3, 1) do not fit extent 4"));
    CHECK_ADD_REJECTS(in.g, in.g.add(SliceParams{{1}, {3}}, {in.big}),
                      message("slice", "", "needs 2 bounds in lo and hi"));
    CHECK_ADD_REJECTS(in.g, in.g.add(SliceParams{{0, 0}, {4, 6}}, {in.big}, {"j", "i"}),
                      message("slice", "j,i", "labels (j,i) should be the operand's"));
    // Empty and whole blocks are slices too.
    const NodeId empty = in.g.add(SliceParams{{2, 6}, {2, 6}}, {in.big});
    CHECK(in.g.node(empty).extents == tenex_test::Extents{0, 0});
    const NodeId whole = in.g.add(SliceParams{{0, 0}, {4, 6}}, {in.big});
    CHECK(in.g.node(whole).extents == tenex_test::Extents{4, 6});
    CHECK_NOTHROW(in.g.validate());
  }
};

template <>
struct Rejects<tenex::ChipParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::ChipParams;
    CHECK_ADD_REJECTS(in.g, in.g.add(ChipParams{2, 0}, {in.ij}), message("chip", "", "mode 2 does not exist"));
    CHECK_ADD_REJECTS(in.g, in.g.add(ChipParams{0, 2}, {in.ij}),
                      message("chip", "", "index 2 is out of range for extent 2"));
    CHECK_ADD_REJECTS(in.g, in.g.add(ChipParams{0, 1}, {in.ij}, {"i"}),
                      message("chip", "i", "labels (i) should be (j)"));
    // A middle mode of a rank-3 operand.
    const NodeId mid = in.g.add(ChipParams{1, 2}, {in.ijk});
    CHECK(in.g.node(mid).labels == tenex_test::Labels{"i", "k"});
    CHECK(in.g.node(mid).extents == tenex_test::Extents{2, 4});
    CHECK(dot_label(in.g, mid) == "chip mode=1 index=2\\n(i,k) {2, 4}");
  }
};

template <>
struct Rejects<tenex::PowParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::PowParams{2}, {in.ij}),
                      message("pow", "", "the operand (\"i,j\") {2, 3} is not square"));
    const NodeId identity = in.g.add(tenex::PowParams{0}, {in.sq});
    CHECK(dot_label(in.g, identity) == "pow n=0\\n(i,j) {3, 3}");
  }
};

template <>
struct Rejects<tenex::MaskParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::MaskParams;
    using tenex::SparseMapUse;
    const auto map = tenex_test::sample_sparse_map();
    CHECK_ADD_REJECTS(in.g, in.g.add(MaskParams{{SparseMapUse{{"i"}, {"z"}, map}}}, {in.ij}),
                      message("mask", "", "masks label \"z\", which the operand lacks"));
    CHECK_ADD_REJECTS(in.g, in.g.add(MaskParams{{SparseMapUse{{"i"}, {"j"}, map}}}, {in.ij}, {"j", "i"}),
                      message("mask", "j,i", "labels (j,i) should be the operand's (i,j)"));
    // Two maps show both.
    const NodeId two =
        in.g.add(MaskParams{{SparseMapUse{{"i"}, {"j"}, map}, SparseMapUse{{"j"}, {"i"}, map}}}, {in.ij});
    CHECK(dot_label(in.g, two) == "mask i->j j->i\\n(i,j) {2, 3}");
  }
};

template <>
struct Rejects<tenex::FusedParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::FusedParams;
    using Op = tenex::FusedOp;
    auto program = [](std::vector<tenex::FusedInstr> instructions) {
      FusedParams p;
      p.program = std::move(instructions);
      return p;
    };
    CHECK_ADD_REJECTS(in.g, in.g.add(FusedParams{}, {in.ij}), message("fused", "", "has an empty program"));
    CHECK_ADD_REJECTS(in.g, in.g.add(program({{Op::load, 2}}), {in.ij, in.j}),
                      message("fused", "", "instruction 0 (load) loads operand 2"));
    CHECK_ADD_REJECTS(in.g, in.g.add(program({{Op::load, 0}, {Op::add, 0, 1}}), {in.ij}),
                      message("fused", "", "instruction 1 (add) reads value 1, which is not computed before it"));
    CHECK_ADD_REJECTS(in.g, in.g.add(program({{Op::load, 0}, {Op::call, 0, 0}}), {in.ij}),
                      message("fused", "", "instruction 1 (call) calls function 0, which the node does not have"));
    CHECK_ADD_REJECTS(in.g, in.g.add(program({{Op::load, 0}}), {in.diag}),
                      message("fused", "", "operand (\"i,i\") {3, 3} repeats label \"i\""));
    CHECK_ADD_REJECTS(in.g, in.g.add(program({{Op::load, 0}}), {in.ij}, {"z"}),
                      message("fused", "z", "label \"z\" is on no operand"));
    // Without labels: the union of the operands' (nothing reduced); a broadcast operand.
    const NodeId all = in.g.add(program({{Op::load, 0}, {Op::load, 1}, {Op::maximum, 0, 1}}), {in.j, in.ij});
    CHECK(in.g.node(all).labels == tenex_test::Labels{"j", "i"});
    CHECK(dot_label(in.g, all) == "fused max(x0, x1)\\n(j,i) {3, 2}");
    // A value used twice is named.
    const NodeId twice = in.g.add(program({{Op::load, 0}, {Op::exp, 0}, {Op::multiply, 1, 1}}), {in.j});
    CHECK(dot_label(in.g, twice) == "fused t1=exp(x0); t1*t1\\n(j) {3}");
    CHECK_NOTHROW(in.g.validate());
  }
};

// Matrix functions.
template <>
struct Rejects<tenex::InverseParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::InverseParams{}, {in.ij}),
                      message("inverse", "", "the operand (\"i,j\") {2, 3} is not square"));
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::InverseParams{}, {in.ijk}),
                      message("inverse", "", "the operand (\"i,j,k\") {2, 3, 4} is not a matrix"));
  }
};

template <>
struct Rejects<tenex::SolveParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    using tenex::SolveParams;
    CHECK_ADD_REJECTS(in.g, in.g.add(SolveParams{0}, {in.ij, in.j}),
                      message("solve", "", "the operand (\"i,j\") {2, 3} is not square"));
    CHECK_ADD_REJECTS(in.g, in.g.add(SolveParams{1}, {in.sq, in.j}),
                      message("solve", "", "solved mode 1 does not exist in b (\"j\") {3}"));
    CHECK_ADD_REJECTS(in.g, in.g.add(SolveParams{0}, {in.sq, in.ij}),
                      message("solve", "", "b's solved mode has extent 2 but a is (\"i,j\") {3, 3}"));
    CHECK_ADD_REJECTS(in.g, in.g.add(SolveParams{0}, {in.sq, in.j}, {"j"}),
                      message("solve", "j", "labels (j) should be (i)"));
    // b (j) carries a's second label: x takes a's first, i.
    const NodeId x = in.g.add(SolveParams{0}, {in.sq, in.j});
    CHECK(dot_label(in.g, x) == "solve mode=0\\n(i) {3}");
    // b carrying both of a's labels keeps them.
    const NodeId both = in.g.add(SolveParams{0}, {in.sq, in.sq_b});
    CHECK(in.g.node(both).labels == tenex_test::Labels{"i", "j"});
  }
};

template <>
struct Rejects<tenex::SpdPowParams> {
  template <class T>
  static void check(GraphOperands<T>& in) {
    CHECK_ADD_REJECTS(in.g, in.g.add(tenex::SpdPowParams{0.5}, {in.ij}),
                      message("spd_pow", "", "the operand (\"i,j\") {2, 3} is not square"));
    const NodeId root = in.g.add(tenex::SpdPowParams{0.5}, {in.sq});
    CHECK(dot_label(in.g, root) == "spd_pow p=0.5\\n(i,j) {3, 3}");
  }
};

// ---- the checks every kind goes through --------------------------------------------------

/// A node that breaks the kind's rule, added raw (add_node checks no rule): validate()
/// must name it.
template <class P, class T>
void check_validate_rejects_raw_copy() {
  GraphOperands<T> in;
  const NodeId good = OpCase<P>::add(in);
  OpNode bad = in.g.node(good);
  if (bad.kind == OpKind::input) {
    bad.labels.push_back("z");  // an input's extents are its tensor's: break the label count
  } else {
    REQUIRE_FALSE(bad.extents.empty());
    bad.extents.back() += 1;
  }
  const NodeId id = in.g.add_node(bad, in.g.operands(good));
  try {
    in.g.validate();
    FAIL("validate() accepted a raw ", tenex::op_kind_name(bad.kind), " node that breaks its shape rule");
  } catch (const tenex::InternalError& e) {
    const std::string text = e.what();
    INFO(text);
    CHECK(text.find("node " + std::to_string(id) + " (" + std::string(tenex::op_kind_name(bad.kind))) !=
          std::string::npos);
  }
}

/// Wrong operand counts for the kinds with a fixed arity.
template <class P, class T>
void check_arity() {
  const int arity = tenex::op_kind_arity(tenex::op_kind_of<P>);
  if (arity < 0) return;  // input and eigen_solve: their Rejects cover it
  const std::string name(tenex::op_kind_name(tenex::op_kind_of<P>));
  for (const std::size_t count : {static_cast<std::size_t>(arity) - 1, static_cast<std::size_t>(arity) + 1}) {
    GraphOperands<T> in;
    const std::vector<NodeId> operands(count, in.sq);
    CHECK_ADD_REJECTS(
        in.g, in.g.add(OpCase<P>::sample(), operands),
        "tenex: OpGraph::add: " + name + " takes " + std::to_string(arity) + " operands, got " + std::to_string(count));
  }
}

template <class P, class T>
void check_kind() {
  using Case = OpCase<P>;
  const OpKind kind = tenex::op_kind_of<P>;
  INFO("kind ", tenex::op_kind_name(kind));
  {
    GraphOperands<T> in;
    const std::size_t before = in.g.size();
    const NodeId id = Case::add(in);
    REQUIRE(id >= before);
    const OpNode& node = in.g.node(id);
    CHECK(node.kind == kind);
    CHECK(node.dtype == tenex::dtype_of<Tensor<T>>());
    CHECK(node.get<P>() == Case::sample());
    CHECK(node.params == OpParams(Case::sample()));
    // (b) the shape rule's labels and extents
    CHECK(node.labels == Case::labels());
    CHECK(node.extents == Case::extents());
    // (a) DOT names the kind and shows the parameters
    CHECK(dot_label(in.g, id) == Case::dot());
    CHECK(dot_label(in.g, id).rfind(std::string(tenex::op_kind_name(kind)), 0) == 0);
    CHECK(tenex::describe_params(node.params) ==
          Case::dot().substr(tenex::op_kind_name(kind).size(),
                             Case::dot().find("\\n") - tenex::op_kind_name(kind).size()));
    CHECK_NOTHROW(in.g.validate());
    // (b) what the rule rejects
    Rejects<P>::check(in);
    CHECK_NOTHROW(in.g.validate());
  }
  check_arity<P, T>();
  check_validate_rejects_raw_copy<P, T>();
}

template <class P>
void check_params_equality() {
  using Case = OpCase<P>;
  const OpKind kind = tenex::op_kind_of<P>;
  INFO("kind ", tenex::op_kind_name(kind));
  const P a = Case::sample();
  const P b = Case::sample();
  CHECK(a == b);
  CHECK_FALSE(a != b);
  CHECK(OpParams(a) == OpParams(b));
  CHECK(tenex::op_kind_of_params(OpParams(a)) == kind);
  CHECK(OpParams(a).index() == static_cast<std::size_t>(kind) + 1);
  CHECK(tenex::default_params(kind) == OpParams(P{}));
  // A struct without fields has nothing to change; every other struct lists its fields.
  CHECK(Case::field_changes().empty() == std::is_empty_v<P>);
  for (const auto& change : Case::field_changes()) {
    INFO("field ", change.field);
    P c = Case::sample();
    change.change(c);
    CHECK(c != a);
    CHECK(a != c);
    CHECK_FALSE(c == a);
    CHECK(OpParams(c) != OpParams(a));
    CHECK(OpParams(a) != OpParams(c));
  }
}

#define TENEX_TEST_KIND_NAME(name, arity, Params) #name,
const std::vector<std::string_view> table_names = {TENEX_FOR_EACH_OP(TENEX_TEST_KIND_NAME)};
#undef TENEX_TEST_KIND_NAME

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("op table: every kind through OpGraph::add, its DOT text and its shape rule", T,
                          op_table_kinds) {
  std::set<std::string_view> covered;
#define TENEX_TEST_CHECK_KIND(name, arity, Params) \
  check_kind<tenex::Params, T>();                  \
  covered.insert(#name);
  TENEX_FOR_EACH_OP(TENEX_TEST_CHECK_KIND)
#undef TENEX_TEST_CHECK_KIND
  CHECK(covered.size() == kind_count);
  CHECK(covered == std::set<std::string_view>(table_names.begin(), table_names.end()));
  CHECK(kind_count == 21);
}
TEST_CASE_TEMPLATE_APPLY(op_table_kinds, Scalars);

TEST_CASE("op table: parameter structs compare equal field by field") {
  std::set<std::string_view> covered;
#define TENEX_TEST_CHECK_EQUALITY(name, arity, Params) \
  check_params_equality<tenex::Params>();              \
  covered.insert(#name);
  TENEX_FOR_EACH_OP(TENEX_TEST_CHECK_EQUALITY)
#undef TENEX_TEST_CHECK_EQUALITY
  CHECK(covered.size() == kind_count);
  CHECK(covered == std::set<std::string_view>(table_names.begin(), table_names.end()));
}

TEST_CASE("op table: parameters of different kinds never compare equal") {
  // add, subtract and divide share their fields; the variant keeps them apart.
  tenex::AddParams add;
  tenex::SubtractParams subtract;
  tenex::DivideParams divide;
  CHECK(OpParams(add) != OpParams(subtract));
  CHECK(OpParams(add) != OpParams(divide));
  CHECK(OpParams(subtract) != OpParams(divide));
  for (std::size_t a = 0; a < kind_count; ++a) {
    for (std::size_t b = 0; b < kind_count; ++b) {
      CAPTURE(a);
      CAPTURE(b);
      const OpParams pa = tenex::default_params(static_cast<OpKind>(a));
      const OpParams pb = tenex::default_params(static_cast<OpKind>(b));
      CHECK((pa == pb) == (a == b));
    }
  }
  // An empty variant names no kind.
  CHECK_THROWS_AS((void)tenex::op_kind_of_params(OpParams{}), tenex::InternalError);
}

// ---- defects found while writing these tests, fixed -----------------------------------------

// eigen_solve's arity is -1 (one or two operands): its shape rule checks the count.
TEST_CASE("op table: eigen_solve takes one or two operands") {
  GraphOperands<double> in;
  CHECK_THROWS_AS((void)in.g.add(tenex::EigenSolveParams{}, {}), tenex::ShapeError);
  CHECK_THROWS_AS((void)in.g.add(tenex::EigenSolveParams{}, {in.sq, in.sq, in.sq}), tenex::ShapeError);
  GraphOperands<double> raw;
  OpNode three;
  three.kind = OpKind::eigen_solve;
  three.labels = {"i", "j"};
  three.extents = {3, 3};
  raw.g.add_node(three, {raw.sq, raw.sq, raw.sq});
  CHECK_THROWS_AS(raw.g.validate(), tenex::InternalError);
}

// add checks the shape rule, which forbids repeated result labels as validate does.
TEST_CASE("op table: add rejects the repeated result labels validate rejects") {
  GraphOperands<double> in;
  // The default labels of a unary kind are its operand's, here the (i,i) of a diagonal read.
  CHECK_THROWS_AS((void)in.g.add(tenex::ReduceParams{}, {in.diag}), tenex::ShapeError);
  CHECK_THROWS_AS((void)in.g.add(tenex::ScaleParams{2.0}, {in.diag}), tenex::ShapeError);
  CHECK_THROWS_AS((void)in.g.add(tenex::ContractParams{}, {in.ij, in.jk}, {"i", "i"}), tenex::ShapeError);
  CHECK_THROWS_AS((void)in.g.add(tenex::ReduceParams{}, {in.ij}, {"j", "j"}), tenex::ShapeError);
  CHECK_NOTHROW(in.g.validate());
}

// The element-wise functions (TENEX_FOR_EACH_FUNCTION): each line's columns are what the
// graph layer reports, and its sparse rule agrees with its scalar definition at zero.
TEST_CASE("function table: names, arities and plan text come from each line") {
  using tenex::FusedOp;
  int lines = 0;
#define TENEX_TEST_FUNCTION_COLUMNS(op, name, values, parameters, keeps_zero, scalar, text, cuda_) \
  {                                                                                                \
    INFO("function " #op);                                                                         \
    ++lines;                                                                                       \
    CHECK(tenex::is_function(FusedOp::op));                                                        \
    CHECK(tenex::fused_op_name(FusedOp::op) == name);                                              \
    CHECK(tenex::fused_op_values(FusedOp::op) == values);                                          \
    CHECK(tenex::fused_op_parameters(FusedOp::op) == parameters);                                  \
    CHECK(tenex::function_info(FusedOp::op).id == #op);                                            \
    CHECK(tenex::function_info(FusedOp::op).cuda == cuda_);                                        \
  }
  TENEX_FOR_EACH_FUNCTION(TENEX_TEST_FUNCTION_COLUMNS)
#undef TENEX_TEST_FUNCTION_COLUMNS
  CHECK(lines >= 20);  // the 19 functions before erf, and erf
  CHECK(!tenex::is_function(FusedOp::load));
  CHECK(!tenex::is_function(FusedOp::constant));
  CHECK(!tenex::is_function(FusedOp::call));
  // The plan text fills the text column.
  tenex::FusedParams p;
  p.program = {{FusedOp::load, 0},
               {FusedOp::erf, 0},
               {FusedOp::load, 1},
               {FusedOp::maximum, 1, 2},
               {FusedOp::clamp, 3, 0, -1, 1},
               {FusedOp::power, 4, 0, 2}};
  CHECK(tenex::describe_program(p) == "pow(clamp(max(erf(x0), x1), -1, 1), 2)");
  p.program = {{FusedOp::load, 0}, {FusedOp::load, 1}, {FusedOp::add, 0, 1}, {FusedOp::divide, 2, 0}};
  CHECK(tenex::describe_program(p) == "(x0 + x1)/x0");
}

TEST_CASE("function table: the sparse rule of each line agrees with its scalar definition at zero") {
  using tenex::FusedOp;
#define TENEX_TEST_FUNCTION_ZERO(op, name, values, parameters, keeps_zero_, scalar, text, cuda)                 \
  for (const double x : {-1.0, 2.0}) {                                                                          \
    const double y = 1.0;                                                                                       \
    if (FusedOp::op == FusedOp::clamp && x > 0) continue; /* clamp's bounds: x <= y */                          \
    for (const bool a_zero : {true, false}) {                                                                   \
      for (const bool b_zero : {true, false}) {                                                                 \
        if (values == 1 && !b_zero) continue;                                                                   \
        INFO("function " #op ", a zero: ", a_zero, ", b zero: ", b_zero, ", x ", x);                            \
        const double a = a_zero ? 0.0 : 1.5, b = b_zero ? 0.0 : 1.5;                                            \
        const double value = tenex::Function<FusedOp::op>::apply(a, b, x, y);                                   \
        const bool rule = tenex::fused_op_keeps_zero({FusedOp::op, 0, 1, x, y}, a_zero, b_zero);                \
        CHECK(rule == tenex::Function<FusedOp::op>::keeps_zero(a_zero, b_zero, x, y));                          \
        /* 0 / 0 counts as zero: a quotient is zero where its numerator's sparse map says so */                 \
        if (rule && !(FusedOp::op == FusedOp::divide && b_zero)) CHECK(value == 0.0);                           \
        if (!rule && a_zero && b_zero) CHECK(value != 0.0); /* zero would be kept: the rule is exact at zero */ \
      }                                                                                                         \
    }                                                                                                           \
  }
  TENEX_FOR_EACH_FUNCTION(TENEX_TEST_FUNCTION_ZERO)
#undef TENEX_TEST_FUNCTION_ZERO
}

TEST_CASE("function table: NaN follows numpy's rules in the scalar definitions") {
  using tenex::Function;
  using tenex::FusedOp;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  CHECK(std::isnan(Function<FusedOp::maximum>::apply(nan, 1.0, 0.0, 0.0)));
  CHECK(std::isnan(Function<FusedOp::maximum>::apply(1.0, nan, 0.0, 0.0)));
  CHECK(std::isnan(Function<FusedOp::minimum>::apply(nan, 1.0, 0.0, 0.0)));
  CHECK(std::isnan(Function<FusedOp::minimum>::apply(1.0, nan, 0.0, 0.0)));
  CHECK(Function<FusedOp::maximum>::apply(-inf, 1.0, 0.0, 0.0) == 1.0);
  CHECK(std::isnan(Function<FusedOp::sign>::apply(nan, 0.0, 0.0, 0.0)));
  CHECK(Function<FusedOp::sign>::apply(-inf, 0.0, 0.0, 0.0) == -1.0);
  CHECK(Function<FusedOp::sign>::apply(-0.0, 0.0, 0.0, 0.0) == 0.0);
  CHECK(std::isnan(Function<FusedOp::clamp>::apply(nan, 0.0, -1.0, 1.0)));
  CHECK(Function<FusedOp::clamp>::apply(inf, 0.0, -1.0, 1.0) == 1.0);
  CHECK(Function<FusedOp::erf>::apply(inf, 0.0, 0.0, 0.0) == 1.0);
  CHECK(std::isnan(tenex::apply_function(FusedOp::maximum, 2.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f, 0.0f)));
  CHECK(std::isnan(tenex::apply_function(FusedOp::call, 1.0, 1.0, 0.0, 0.0)));
}
