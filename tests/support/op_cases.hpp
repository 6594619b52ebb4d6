// One canonical node per op kind of TENEX_FOR_EACH_OP, for the tests of the op table
// (tests/graph/test_op_table.cpp) and of the passes (tests/graph/test_pass_cse.cpp).
//
// OpCase<Params> gives, for the kind whose parameter struct is Params:
//   sample()          parameters with every field away from its default
//   field_changes()   one edit per field of the struct (each makes sample() differ)
//   add(in)           a node of the kind added through the public OpGraph::add / add_input
//                     with real operands from GraphOperands
//   labels(), extents(), dot()   what that node must be: inferred labels and extents and
//                     its DOT label text ("scale alpha=2.5\\n(i,j) {2, 3}")
// The primary template does not compile, so a new kind of the op table fails here until
// it has a case. A static_assert on each struct's size trips when a field is added
// without a matching entry in field_changes().
#pragma once

#include <complex>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

namespace tenex_test {

using Labels = std::vector<std::string>;
using Extents = std::vector<std::size_t>;

/// The operand nodes every case draws from, in one graph.
template <class T>
struct GraphOperands {
  tenex::Tensor<T> rect{tenex::Shape{2, 3}};
  tenex::Tensor<T> right{tenex::Shape{3, 4}};
  tenex::Tensor<T> square{tenex::Shape{3, 3}};
  tenex::Tensor<T> square_b{tenex::Shape{3, 3}};
  tenex::Tensor<T> wide{tenex::Shape{4, 6}};
  tenex::Tensor<T> vec{tenex::Shape{3}};
  tenex::Tensor<T> cube{tenex::Shape{2, 3, 4}};
  tenex::Tensor<T> target{tenex::Shape{3, 2}};  // written by the output case
  tenex::OpGraph g;
  tenex::NodeId ij = g.add_input(rect, "i,j");        // (i,j) {2, 3}
  tenex::NodeId jk = g.add_input(right, "j,k");       // (j,k) {3, 4}
  tenex::NodeId sq = g.add_input(square, "i,j");      // (i,j) {3, 3}
  tenex::NodeId sq_b = g.add_input(square_b, "i,j");  // (i,j) {3, 3}
  tenex::NodeId diag = g.add_input(square, "i,i");    // (i,i) {3, 3}: read as a diagonal
  tenex::NodeId big = g.add_input(wide, "i,j");       // (i,j) {4, 6}
  tenex::NodeId j = g.add_input(vec, "j");            // (j) {3}
  tenex::NodeId ijk = g.add_input(cube, "i,j,k");     // (i,j,k) {2, 3, 4}
};

/// The sparse map of the mask case: one object for the whole process, since maps are
/// compared by identity.
inline std::shared_ptr<const tenex::SparseMap> sample_sparse_map() {
  static const std::shared_ptr<const tenex::SparseMap> map = [] {
    auto m = std::make_shared<tenex::SparseMap>();
    m->insert({0}, {{0}, {1}});
    m->insert({1}, {{1}, {2}});
    return m;
  }();
  return map;
}

template <class P>
struct FieldChange {
  std::string field;
  std::function<void(P&)> change;
};

template <class P>
struct OpCase {
  static_assert(!std::is_same_v<P, P>,
                "tests/support/op_cases.hpp: a kind of TENEX_FOR_EACH_OP has no OpCase; add one");
};

// The size tripwires: a new field changes the size, and then field_changes() must list it.
static_assert(std::is_empty_v<tenex::ReduceParams>,
              "a parameter struct without fields got one: give its OpCase field_changes()");
static_assert(sizeof(tenex::InputParams) == sizeof(std::vector<std::size_t>), "InputParams changed");
static_assert(sizeof(tenex::TruncationParams) == 3 * sizeof(double), "TruncationParams changed");
static_assert(sizeof(tenex::EigenSolveParams) == sizeof(tenex::TruncationParams) + sizeof(std::size_t) &&
                  sizeof(tenex::SvdParams) == sizeof(tenex::TruncationParams) + sizeof(std::size_t),
              "EigenSolveParams or SvdParams changed");
static_assert(sizeof(tenex::QrParams) == sizeof(std::size_t), "QrParams changed");
static_assert(sizeof(tenex::OutputParams) == sizeof(std::vector<std::string>), "OutputParams changed");
static_assert(sizeof(tenex::ContractParams) == 3 * sizeof(double), "ContractParams changed");
static_assert(sizeof(tenex::ElementwiseParams) == 2 * sizeof(double), "ElementwiseParams changed");
static_assert(sizeof(tenex::AddParams) == 2 * sizeof(double), "AddParams changed");
static_assert(sizeof(tenex::SubtractParams) == 2 * sizeof(double), "SubtractParams changed");
static_assert(sizeof(tenex::DivideParams) == 2 * sizeof(double), "DivideParams changed");
static_assert(sizeof(tenex::ScaleParams) == 2 * sizeof(double), "ScaleParams changed");
static_assert(sizeof(tenex::CholeskyParams) == sizeof(bool), "CholeskyParams changed");
static_assert(sizeof(tenex::FactorParams) == sizeof(std::size_t), "FactorParams changed");
static_assert(sizeof(tenex::SliceParams) == 2 * sizeof(std::vector<std::size_t>), "SliceParams changed");
static_assert(sizeof(tenex::ChipParams) == 2 * sizeof(std::size_t), "ChipParams changed");
static_assert(sizeof(tenex::PowParams) == sizeof(unsigned), "PowParams changed");
static_assert(sizeof(tenex::MaskParams) == sizeof(std::vector<tenex::SparseMapUse>), "MaskParams changed");
struct FusedParamsMirror {
  std::vector<tenex::FusedInstr> program;
  tenex::ReduceOp reduce;
  std::vector<std::shared_ptr<const tenex::ScalarFunction>> functions;
};
static_assert(sizeof(tenex::FusedParams) == sizeof(FusedParamsMirror), "FusedParams changed");
static_assert(sizeof(tenex::FusedInstr) == 2 * sizeof(double) + 2 * sizeof(std::uint32_t) + sizeof(double),
              "FusedInstr changed");
static_assert(sizeof(tenex::SparseMapUse) ==
                  2 * sizeof(std::vector<std::string>) + sizeof(std::shared_ptr<const tenex::SparseMap>),
              "SparseMapUse changed");

template <>
struct OpCase<tenex::InputParams> {
  using P = tenex::InputParams;
  // add_input reads a whole tensor: no truncated mode (the expression layer marks those).
  static P sample() { return {}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"truncated_modes", [](P& p) { p.truncated_modes = {1}; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add_input(in.rect, "i,j");
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "input\\n(i,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::OutputParams> {
  using P = tenex::OutputParams;
  static P sample() { return P{{"p", "q"}}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"operand_labels", [](P& p) { p.operand_labels = {"q", "p"}; }}};
  }
  /// Writes (i,j) {2, 3} renamed (p,q) into the target as (q,p): a transpose.
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    const tenex::NodeId id = in.g.add(sample(), {in.ij}, {"q", "p"});
    in.g.bind(id, tenex::detail::Access::storage(in.target));
    return id;
  }
  static Labels labels() { return {"q", "p"}; }
  static Extents extents() { return {3, 2}; }
  static std::string dot() { return "output\\n(q,p) {3, 2}"; }
};

template <>
struct OpCase<tenex::ReduceParams> {
  using P = tenex::ReduceParams;
  static P sample() { return {}; }
  static std::vector<FieldChange<P>> field_changes() { return {}; }
  /// The diagonal of square("i,i").
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.diag}, {"i"});
  }
  static Labels labels() { return {"i"}; }
  static Extents extents() { return {3}; }
  static std::string dot() { return "reduce\\n(i) {3}"; }
};

template <>
struct OpCase<tenex::ContractParams> {
  using P = tenex::ContractParams;
  static P sample() { return P{2.5, 0.0, false, false}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"alpha", [](P& p) { p.alpha = 3.0; }},
            {"beta", [](P& p) { p.beta = 1.0; }},
            {"conj_a", [](P& p) { p.conj_a = true; }},
            {"conj_b", [](P& p) { p.conj_b = true; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij, in.jk});
  }
  static Labels labels() { return {"i", "k"}; }
  static Extents extents() { return {2, 4}; }
  static std::string dot() { return "contract alpha=2.5\\n(i,k) {2, 4}"; }
};

/// add, subtract and divide: (i,j) {2, 3} with (j) {3} broadcast along i.
template <class P>
struct ElementwiseCase {
  static P sample() {
    P p;
    p.alpha = 2.0;
    p.alpha_b = -0.5;
    return p;
  }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"alpha", [](P& p) { p.alpha = 1.0; }}, {"alpha_b", [](P& p) { p.alpha_b = 1.0; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij, in.j});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() {
    return std::string(tenex::op_kind_name(tenex::op_kind_of<P>)) + " alpha=2,-0.5\\n(i,j) {2, 3}";
  }
};
template <>
struct OpCase<tenex::AddParams> : ElementwiseCase<tenex::AddParams> {};
template <>
struct OpCase<tenex::SubtractParams> : ElementwiseCase<tenex::SubtractParams> {};
template <>
struct OpCase<tenex::DivideParams> : ElementwiseCase<tenex::DivideParams> {};

template <>
struct OpCase<tenex::ScaleParams> {
  using P = tenex::ScaleParams;
  static P sample() { return P{2.5, 0.0}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"alpha", [](P& p) { p.alpha = -2.5; }}, {"alpha_imag", [](P& p) { p.alpha_imag = 0.5; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "scale alpha=2.5\\n(i,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::CholeskyParams> {
  using P = tenex::CholeskyParams;
  static P sample() { return P{true}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"upper", [](P& p) { p.upper = false; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.sq});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {3, 3}; }
  static std::string dot() { return "cholesky upper\\n(i,j) {3, 3}"; }
};

template <>
struct OpCase<tenex::EigenSolveParams> {
  using P = tenex::EigenSolveParams;
  static P sample() { return {}; }
  /// The truncation's numbers (a truncated eigen_solve takes one operand, the sample two).
  static std::vector<FieldChange<P>> field_changes() {
    return {{"truncation.max_rank", [](P& p) { p.truncation.max_rank = 2; }},
            {"truncation.cutoff", [](P& p) { p.truncation.cutoff = 0.5; }},
            {"rows", [](P& p) { p.rows = 2; }}};
  }
  /// The generalized problem (two operands); test_op_table checks the standard one too.
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.sq, in.sq_b});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {3, 3}; }
  static std::string dot() { return "eigen_solve\\n(i,j) {3, 3}"; }
};

template <>
struct OpCase<tenex::QrParams> {
  using P = tenex::QrParams;
  static P sample() { return {}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"rows", [](P& p) { p.rows = 2; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "qr\\n(i,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::SvdParams> {
  using P = tenex::SvdParams;
  static P sample() { return {}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"truncation.max_rank", [](P& p) { p.truncation.max_rank = 2; }},
            {"truncation.cutoff", [](P& p) { p.truncation.cutoff = 0.5; }},
            {"rows", [](P& p) { p.rows = 2; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "svd\\n(i,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::FactorParams> {
  using P = tenex::FactorParams;
  static P sample() { return P{2}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"which", [](P& p) { p.which = 0; }}};
  }
  /// Vt (k x n) of the SVD of (i,j) {2, 3}.
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    const tenex::NodeId packed = in.g.add(tenex::SvdParams{}, {in.ij});
    return in.g.add(sample(), {packed}, {"k", "j"});
  }
  static Labels labels() { return {"k", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "factor 2\\n(k,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::SliceParams> {
  using P = tenex::SliceParams;
  static P sample() { return P{{1, 2}, {3, 5}}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"lo", [](P& p) { p.lo = {0, 2}; }}, {"hi", [](P& p) { p.hi = {3, 6}; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.big});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "slice lo={1, 2} hi={3, 5}\\n(i,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::ChipParams> {
  using P = tenex::ChipParams;
  static P sample() { return P{0, 1}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"mode", [](P& p) { p.mode = 1; }}, {"index", [](P& p) { p.index = 0; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij});
  }
  static Labels labels() { return {"j"}; }
  static Extents extents() { return {3}; }
  static std::string dot() { return "chip mode=0 index=1\\n(j) {3}"; }
};

template <>
struct OpCase<tenex::PowParams> {
  using P = tenex::PowParams;
  static P sample() { return P{3}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"power", [](P& p) { p.power = 2; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.sq});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {3, 3}; }
  static std::string dot() { return "pow n=3\\n(i,j) {3, 3}"; }
};

template <>
struct OpCase<tenex::MaskParams> {
  using P = tenex::MaskParams;
  static P sample() { return P{{tenex::SparseMapUse{{"i"}, {"j"}, sample_sparse_map()}}}; }
  /// MaskParams has one field, a list of SparseMapUse: each field of the use is edited, and
  /// the list's length.
  static std::vector<FieldChange<P>> field_changes() {
    return {
        {"maps[0].source", [](P& p) { p.maps[0].source = {"j"}; }},
        {"maps[0].target", [](P& p) { p.maps[0].target = {"i"}; }},
        // Another map object with the same pairs: maps are compared by identity.
        {"maps[0].map", [](P& p) { p.maps[0].map = std::make_shared<tenex::SparseMap>(*sample_sparse_map()); }},
        {"maps (one more use)", [](P& p) { p.maps.push_back(p.maps[0]); }},
        {"maps (none)", [](P& p) { p.maps.clear(); }},
    };
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "mask i->j\\n(i,j) {2, 3}"; }
};

/// The function of the fused case: one object for the whole process (compared by identity).
inline std::shared_ptr<const tenex::ScalarFunction> sample_scalar_function() {
  static const auto f = std::make_shared<const tenex::ScalarFunction>(tenex::ScalarFunction{
      "twice", [](double x) { return 2 * x; }, [](float x) { return 2 * x; },
      [](std::complex<float> x) { return 2.0f * x; }, [](std::complex<double> x) { return 2.0 * x; }});
  return f;
}

template <>
struct OpCase<tenex::FusedParams> {
  using P = tenex::FusedParams;
  using Op = tenex::FusedOp;
  /// max over j of twice(exp(x0 * x1)) for (i,j) {2, 3} and (j) {3}.
  static P sample() {
    P p;
    p.program = {{Op::load, 0}, {Op::load, 1}, {Op::multiply, 0, 1}, {Op::exp, 2}, {Op::call, 3, 0}};
    p.reduce = tenex::ReduceOp::max;
    p.functions = {sample_scalar_function()};
    return p;
  }
  static std::vector<FieldChange<P>> field_changes() {
    return {
        {"program (an instruction's op)", [](P& p) { p.program[3].op = Op::log; }},
        {"program (an operand index)", [](P& p) { p.program[2].b = 0; }},
        {"program (a constant)", [](P& p) { p.program[3].x = 1.5; }},
        {"program (a second constant)", [](P& p) { p.program[3].y = 1.5; }},
        {"program (one more instruction)",
         [](P& p) {
           p.program.push_back({Op::sqrt, 4});
         }},
        {"reduce", [](P& p) { p.reduce = tenex::ReduceOp::sum; }},
        {"functions",
         [](P& p) { p.functions = {std::make_shared<const tenex::ScalarFunction>(*sample_scalar_function())}; }},
    };
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.ij, in.j}, {"i"});
  }
  static Labels labels() { return {"i"}; }
  static Extents extents() { return {2}; }
  static std::string dot() { return "fused twice(exp(x0*x1)) reduce=max\\n(i) {2}"; }
};

// Matrix functions.
static_assert(std::is_empty_v<tenex::InverseParams>, "InverseParams got a field: give its OpCase field_changes()");
static_assert(sizeof(tenex::SolveParams) == sizeof(std::size_t), "SolveParams changed");
static_assert(sizeof(tenex::SpdPowParams) == sizeof(double), "SpdPowParams changed");

template <>
struct OpCase<tenex::InverseParams> {
  using P = tenex::InverseParams;
  static P sample() { return {}; }
  static std::vector<FieldChange<P>> field_changes() { return {}; }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.sq});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {3, 3}; }
  static std::string dot() { return "inverse\\n(i,j) {3, 3}"; }
};

template <>
struct OpCase<tenex::SolveParams> {
  using P = tenex::SolveParams;
  static P sample() { return P{1}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"mode", [](P& p) { p.mode = 0; }}};
  }
  /// a = square (i,j) {3, 3}, b = rect read as (k,i) {2, 3}: b's mode 1 (i) is solved and
  /// takes a's other label, j.
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    const tenex::NodeId b = in.g.add_input(in.rect, "k,i");
    return in.g.add(sample(), {in.sq, b});
  }
  static Labels labels() { return {"k", "j"}; }
  static Extents extents() { return {2, 3}; }
  static std::string dot() { return "solve mode=1\\n(k,j) {2, 3}"; }
};

template <>
struct OpCase<tenex::SpdPowParams> {
  using P = tenex::SpdPowParams;
  static P sample() { return P{-0.5}; }
  static std::vector<FieldChange<P>> field_changes() {
    return {{"power", [](P& p) { p.power = 0.25; }}};
  }
  template <class T>
  static tenex::NodeId add(GraphOperands<T>& in) {
    return in.g.add(sample(), {in.sq});
  }
  static Labels labels() { return {"i", "j"}; }
  static Extents extents() { return {3, 3}; }
  static std::string dot() { return "spd_pow p=-0.5\\n(i,j) {3, 3}"; }
};

}  // namespace tenex_test
