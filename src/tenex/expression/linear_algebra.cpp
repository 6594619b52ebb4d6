// The expressions Einstein notation cannot write: decompositions, slices, chips, powers,
// inverses and solves.
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "tenex/expression/chip.hpp"
#include "tenex/expression/cholesky.hpp"
#include "tenex/expression/detail/make.hpp"
#include "tenex/expression/detail/real_factor.hpp"
#include "tenex/expression/eigen_solve.hpp"
#include "tenex/expression/indexed.hpp"
#include "tenex/expression/inverse.hpp"
#include "tenex/expression/pow.hpp"
#include "tenex/expression/qr.hpp"
#include "tenex/expression/slice.hpp"
#include "tenex/expression/solve.hpp"
#include "tenex/expression/svd.hpp"

namespace tenex {

namespace detail {

namespace {

const NodePtr& matrix_operand(const char* operation, const NodePtr& a, bool square) {
  if (a->labels.size() != 2) {
    throw ShapeError(std::string("tenex: ") + operation + ": the operand " + a->text() + " has rank " +
                     std::to_string(a->labels.size()) + "; a matrix (rank 2) is needed");
  }
  if (square && a->extents[0] != a->extents[1]) {
    throw ShapeError(std::string("tenex: ") + operation + ": the operand " + a->text() +
                     " is not square; a square matrix is needed");
  }
  return a;
}

// ---- Decompositions over label groups: the operand seen as a matrix whose rows are the modes
// of one group of labels and whose columns are the rest, read in that order (the operand's own
// when it already starts with the row group: then nothing is copied).
struct Grouping {
  std::vector<std::string> order;    // the row labels, then the column labels
  std::vector<std::size_t> extents;  // theirs
  std::size_t rows = 1;              // how many of `order` are rows
  std::size_t m = 1, n = 1;          // the matrix

  std::vector<std::string> row_labels() const { return {order.begin(), order.begin() + split()}; }
  std::vector<std::string> column_labels() const { return {order.begin() + split(), order.end()}; }
  std::vector<std::size_t> row_extents() const { return {extents.begin(), extents.begin() + split()}; }
  std::vector<std::size_t> column_extents() const { return {extents.begin() + split(), extents.end()}; }
  std::ptrdiff_t split() const { return static_cast<std::ptrdiff_t>(rows); }
};

Grouping make_grouping(std::vector<std::string> order, std::vector<std::size_t> extents, std::size_t rows) {
  Grouping g{std::move(order), std::move(extents), rows, 1, 1};
  for (std::size_t d = 0; d < g.extents.size(); ++d) (d < rows ? g.m : g.n) *= g.extents[d];
  return g;
}

/// A matrix operand (rank 2, checked by matrix_operand): its first mode the rows.
Grouping matrix_grouping(const NodePtr& a) { return make_grouping(a->labels.vec(), a->extents.vec(), 1); }

/// `a` split into the modes `rows` names ("a,s": any of a's labels, in the order the row
/// modes take) and the rest, in a's order. Throws ShapeError for a label a lacks, a repeated
/// one, no row label or no column label left, and (square) a matrix that is not square.
Grouping label_grouping(const char* operation, const NodePtr& a, std::string_view rows, bool square) {
  const std::string op(operation);
  const std::vector<std::string> row_labels = parse_labels(rows);
  if (row_labels.empty()) {
    throw ShapeError("tenex: " + op + ": the row group \"" + std::string(rows) + "\" of " + a->text() +
                     " names no label; name the labels of the rows (\"a,s\")");
  }
  std::vector<std::string> order;
  std::vector<std::size_t> extents;
  for (const std::string& l : row_labels) {
    const std::size_t at = find_label(a->labels.vec(), l);
    if (at == a->labels.size()) {
      throw ShapeError("tenex: " + op + ": label \"" + l + "\" of the row group \"" + std::string(rows) +
                       "\" is not a mode of the operand " + a->text());
    }
    if (contains_label(order, l)) {
      throw ShapeError("tenex: " + op + ": the row group \"" + std::string(rows) + "\" repeats label \"" + l + "\"");
    }
    order.push_back(l);
    extents.push_back(a->extents[at]);
  }
  for (std::size_t d = 0; d < a->labels.size(); ++d) {
    if (contains_label(row_labels, a->labels[d])) continue;
    order.push_back(a->labels[d]);
    extents.push_back(a->extents[d]);
  }
  if (order.size() == row_labels.size()) {
    throw ShapeError("tenex: " + op + ": the row group \"" + std::string(rows) + "\" takes every mode of " + a->text() +
                     "; at least one mode must be left for the columns");
  }
  Grouping g = make_grouping(std::move(order), std::move(extents), row_labels.size());
  if (square && g.m != g.n) {
    throw ShapeError("tenex: " + op + ": the rows \"" + std::string(rows) + "\" of " + a->text() + " give " +
                     std::to_string(g.m) + " x " + std::to_string(g.n) + ", not a square matrix");
  }
  return g;
}

// ---- Truncated decompositions (svd and eigen_solve with a tenex::Truncation): the truncated
// call is the untruncated one made while a TruncationScope asks for a truncation, so it has the
// untruncated call's result classes. The decomposition it makes truncates, and its factors give
// the mode of the values the upper bound of the kept rank, min(max_rank, k), as extent (for
// eigen_solve under a new label: the operand's second label no longer fits it).
struct TruncationRequest {
  bool requested = false;
  Truncation truncation;
  const ExprNode* decomposition = nullptr;  // the decomposition made for it
  std::string mode, renamed;                // eigen_solve: the operand's second label, and its new name
  std::size_t bound = 0;
};
thread_local TruncationRequest truncation_request;

struct TruncationScope {
  TruncationScope(const char* operation, const Truncation& t, const ExprNode& operand) {
    if (std::isnan(t.cutoff) || t.cutoff < 0.0 || t.cutoff > 1.0) {
      std::ostringstream cutoff;
      cutoff << t.cutoff;
      throw Error(std::string("tenex: ") + operation + ": the Truncation of " + operand.text() +
                  " has cutoff = " + cutoff.str() +
                  "; the cutoff is the fraction of the sum of squares that may be dropped, a number in [0, 1] "
                  "(0: drop nothing by weight)");
    }
    truncation_request = TruncationRequest{true, t, nullptr, {}, {}, 0};
  }
  TruncationScope(const TruncationScope&) = delete;
  TruncationScope& operator=(const TruncationScope&) = delete;
  ~TruncationScope() { truncation_request = TruncationRequest{}; }
  /// Throws InternalError unless the call made the truncated decomposition.
  static void check_made(const char* operation) {
    if (!truncation_request.decomposition) {
      throw InternalError(std::string("tenex: ") + operation + " with a Truncation made no truncated decomposition");
    }
  }
};

/// The decomposition node shared by the factors of one call, reading its first operand as
/// `g` says. `renames` (eigen_solve of a matrix): truncating gives the pairs a new mode in
/// place of the operand's second label.
std::shared_ptr<DecompositionNode> decomposition(OpKind op, std::vector<NodePtr> operands, const Grouping& g,
                                                 bool renames = false) {
  auto node = std::make_shared<DecompositionNode>();
  node->op = op;
  node->dtype = operands[0]->dtype;
  node->labels = g.order;
  node->extents = g.extents;
  node->rows = g.rows;
  node->children = std::move(operands);
  node->made_by = &typeid(void);  // read through its factors only
  TruncationRequest& request = truncation_request;
  if (request.requested && !request.decomposition && (op == OpKind::svd || op == OpKind::eigen_solve)) {
    const Truncation& t = request.truncation;
    node->truncation = TruncationParams{true, t.max_rank, t.cutoff};
    const std::size_t k = op == OpKind::eigen_solve ? g.n : std::min(g.m, g.n);
    request.bound = t.max_rank != 0 ? std::min(k, t.max_rank) : k;
    request.decomposition = node.get();
    if (renames) {
      request.mode = node->labels[1];
      request.renamed = make_new_mode_label();
    }
  }
  node->finish();
  return node;
}

template <class C>
std::shared_ptr<FactorNode> factor(const NodePtr& decomp, std::size_t which, std::vector<std::string> labels,
                                   std::vector<std::size_t> extents) {
  auto node = std::make_shared<FactorNode>();
  node->dtype = decomp->dtype;
  node->children = {decomp};
  node->which = which;
  node->labels = std::move(labels);
  node->extents = std::move(extents);
  if (const TruncationRequest& request = truncation_request; decomp.get() == request.decomposition) {
    for (std::size_t d = 0; d < node->labels.size(); ++d) {
      std::string& label = node->labels.mutable_at(d);
      if (request.mode.empty() ? !is_new_mode_label(label) : label != request.mode) continue;
      if (!request.mode.empty()) label = request.renamed;
      node->extents.mutable_at(d) = request.bound;
    }
  }
  return made_by<C>(std::move(node));
}

/// The values (factor `which`) of a decomposition whose values are real, as class V over
/// real_object_t<T>: the factor itself for a real T; for a complex T its real part, an
/// expression over the real tensor type that reads the decomposition the complex factors share.
template <class V, class T>
V values_factor(const NodePtr& decomp, std::size_t which, std::vector<std::string> labels,
                std::vector<std::size_t> extents, const Handle& set) {
  if constexpr (std::is_same_v<real_object_t<T>, T>) {
    return Access::make<V>(make_handle(factor<V>(decomp, which, std::move(labels), std::move(extents)), {&set}));
  } else {
    Handle complex = make_handle(factor<Operand<T>>(decomp, which, std::move(labels), std::move(extents)), {&set});
    return Access::make<V>(real_factor(Access::make<Operand<T>>(std::move(complex)), typeid(V)));
  }
}

template <class N>
std::shared_ptr<N> unary(const NodePtr& child) {
  auto node = std::make_shared<N>();
  node->dtype = child->dtype;
  node->children = {child};
  return node;
}

}  // namespace

// Lowering: each of these reads its operand whole, in the operand's own order, and
// reduces its result to what the consumer keeps.

std::vector<std::string> CholeskyNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId CholeskyNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                          const std::vector<NodeId>& children) const {
  NodeId id = lowering.add(CholeskyParams{upper}, labels, extents, children, "factor L");
  return lowering.reduce_to(id, keep);
}

std::vector<std::string> DecompositionNode::child_keep(std::size_t i, const std::vector<std::string>&) const {
  return i == 0 ? labels.vec() : children[i]->labels.vec();  // the first in the grouping's order
}

NodeId DecompositionNode::emit(Lowering& lowering, const std::vector<std::string>&,
                               const std::vector<NodeId>& children) const {
  OpParams params = op == OpKind::eigen_solve ? OpParams(EigenSolveParams{truncation, rows})
                    : op == OpKind::qr        ? OpParams(QrParams{rows})
                                              : OpParams(SvdParams{truncation, rows});
  return lowering.add(std::move(params), labels, extents, children,
                      op == OpKind::eigen_solve && children.size() == 2 ? "generalized" : "");
}

std::vector<std::string> FactorNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;  // the packed node, shared by every factor of the call
}

NodeId FactorNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                        const std::vector<NodeId>& children) const {
  const OpKind op = static_cast<const DecompositionNode&>(*this->children[0]).op;
  NodeId id = lowering.add(FactorParams{which}, labels, extents, children, std::string(packed_factor_name(op, which)));
  return lowering.reduce_to(id, keep);
}

std::vector<std::string> SliceNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId SliceNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                       const std::vector<NodeId>& children) const {
  return lowering.reduce_to(lowering.add(SliceParams{lo, hi}, labels, extents, children), keep);
}

std::vector<std::string> ChipNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId ChipNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                      const std::vector<NodeId>& children) const {
  return lowering.reduce_to(lowering.add(ChipParams{mode, index}, labels, extents, children), keep);
}

std::vector<std::string> PowNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId PowNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                     const std::vector<NodeId>& children) const {
  return lowering.reduce_to(lowering.add(PowParams{power}, labels, extents, children), keep);
}

// Matrix functions: each reads its operands whole, in their own order, like the above.

std::vector<std::string> InverseNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId InverseNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                         const std::vector<NodeId>& children) const {
  return lowering.reduce_to(lowering.add(InverseParams{}, labels, extents, children), keep);
}

std::vector<std::string> InversePowNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId InversePowNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                            const std::vector<NodeId>& children) const {
  NodeId id = lowering.add(InverseParams{}, labels, extents, children);
  if (power != 1) id = lowering.add(PowParams{power}, labels, extents, {id});
  return lowering.reduce_to(id, keep);
}

std::vector<std::string> SpdPowNode::child_keep(std::size_t, const std::vector<std::string>&) const {
  return children[0]->labels;
}

NodeId SpdPowNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                        const std::vector<NodeId>& children) const {
  return lowering.reduce_to(lowering.add(SpdPowParams{power}, labels, extents, children), keep);
}

std::vector<std::string> SolveNode::child_keep(std::size_t i, const std::vector<std::string>&) const {
  return children[i]->labels;
}

NodeId SolveNode::emit(Lowering& lowering, const std::vector<std::string>& keep,
                       const std::vector<NodeId>& children) const {
  return lowering.reduce_to(lowering.add(SolveParams{mode}, labels, extents, children), keep);
}

}  // namespace detail

using detail::Access;
using detail::Handle;
using detail::make_handle;
using detail::operand_node;

template <class T>
CholeskyVectors<T> cholesky(const Expression<T>& a) {
  const auto node = detail::matrix_operand("cholesky", detail::einstein_operand(operand_node(a)), true);
  // The labels say which triangle is read: the matrix is seen with its labels in
  // alphabetical order, so cholesky(a("i,j")) factors a (its lower triangle) and
  // cholesky(a("j,i")) factors a^T (the lower triangle of a^T, a's upper one). The factor
  // keeps the operand's labels as written and is lower triangular in that order.
  auto out = detail::unary<detail::CholeskyNode>(node);
  out->labels = node->labels;
  out->extents = node->extents;
  out->upper = node->labels[1] < node->labels[0];
  return Access::make<CholeskyVectors<T>>(
      make_handle(detail::made_by<CholeskyVectors<T>>(std::move(out)), {&Access::handle(a)}));
}

namespace {

template <class T>
std::vector<T> joined(std::vector<T> a, const std::vector<T>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The decompositions of an operand read as `g` says (a matrix, or label groups).

template <class T>
EigenSolveResult<T> eigen_solve_grouped(const Expression<T>& a, const detail::NodePtr& node, const detail::Grouping& g,
                                        bool matrix) {
  auto decomp = detail::decomposition(OpKind::eigen_solve, {node}, g, matrix);
  // A matrix's eigenpairs take its second label (vectors (i,j), values (j)); label groups give
  // them a new mode, named by the targets like svd's.
  const std::string mode = matrix ? g.order[1] : detail::make_new_mode_label();
  Handle vectors = make_handle(
      detail::factor<EigenVectors<T>>(decomp, 0, joined(g.row_labels(), {mode}), joined(g.row_extents(), {g.n})),
      {&Access::handle(a)});
  auto values = detail::values_factor<EigenValues<real_object_t<T>>, T>(decomp, 1, {mode}, {g.n}, Access::handle(a));
  return {Access::make<EigenVectors<T>>(std::move(vectors)), std::move(values)};
}

template <class T>
std::pair<QRFactor<T>, QRFactor<T>> qr_grouped(const Expression<T>& a, const detail::NodePtr& node,
                                               const detail::Grouping& g) {
  auto decomp = detail::decomposition(OpKind::qr, {node}, g);
  const std::size_t k = std::min(g.m, g.n);
  const std::string inner = detail::make_new_mode_label();
  Handle q =
      make_handle(detail::factor<QRFactor<T>>(decomp, 0, joined(g.row_labels(), {inner}), joined(g.row_extents(), {k})),
                  {&Access::handle(a)});
  Handle r = make_handle(
      detail::factor<QRFactor<T>>(decomp, 1, joined({inner}, g.column_labels()), joined({k}, g.column_extents())),
      {&Access::handle(a)});
  return {Access::make<QRFactor<T>>(std::move(q)), Access::make<QRFactor<T>>(std::move(r))};
}

template <class T>
SVDResult<T> svd_grouped(const Expression<T>& a, const detail::NodePtr& node, const detail::Grouping& g) {
  auto decomp = detail::decomposition(OpKind::svd, {node}, g);
  const std::size_t k = std::min(g.m, g.n);
  const std::string inner = detail::make_new_mode_label();
  Handle u = make_handle(
      detail::factor<SVDFactor<T>>(decomp, 0, joined(g.row_labels(), {inner}), joined(g.row_extents(), {k})),
      {&Access::handle(a)});
  auto s = detail::values_factor<SVDFactor<real_object_t<T>>, T>(decomp, 1, {inner}, {k}, Access::handle(a));
  Handle vt = make_handle(
      detail::factor<SVDFactor<T>>(decomp, 2, joined({inner}, g.column_labels()), joined({k}, g.column_extents())),
      {&Access::handle(a)});
  return {Access::make<SVDFactor<T>>(std::move(u)), std::move(s), Access::make<SVDFactor<T>>(std::move(vt))};
}

}  // namespace

template <class T>
std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve(const Expression<T>& a) {
  const auto node = detail::matrix_operand("eigen_solve", detail::einstein_operand(operand_node(a)), true);
  return eigen_solve_grouped(a, node, detail::matrix_grouping(node), true);
}

template <class T>
std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve(const Expression<T>& a, const Expression<T>& b) {
  const auto node_a = detail::matrix_operand("eigen_solve", detail::einstein_operand(operand_node(a)), true);
  const auto node_b = detail::matrix_operand("eigen_solve", detail::einstein_operand(operand_node(b)), true);
  if (node_a->extents != node_b->extents) {
    throw ShapeError("tenex: eigen_solve: b " + node_b->text() + " must have the shape of a " + node_a->text());
  }
  auto decomp = detail::decomposition(OpKind::eigen_solve, {node_a, node_b}, detail::matrix_grouping(node_a), true);
  const auto& l = node_a->labels;
  const std::size_t n = node_a->extents[0];
  Handle vectors =
      make_handle(detail::factor<EigenVectors<T>>(decomp, 0, l, {n, n}), {&Access::handle(a), &Access::handle(b)});
  auto values = detail::values_factor<EigenValues<real_object_t<T>>, T>(decomp, 1, {l[1]}, {n}, vectors);
  return {Access::make<EigenVectors<T>>(std::move(vectors)), std::move(values)};
}

template <class T>
std::pair<QRFactor<T>, QRFactor<T>> qr(const Expression<T>& a) {
  const auto node = detail::matrix_operand("qr", detail::einstein_operand(operand_node(a)), false);
  return qr_grouped(a, node, detail::matrix_grouping(node));
}

template <class T>
std::tuple<SVDFactor<T>, SVDFactor<real_object_t<T>>, SVDFactor<T>> svd(const Expression<T>& a) {
  const auto node = detail::matrix_operand("svd", detail::einstein_operand(operand_node(a)), false);
  return svd_grouped(a, node, detail::matrix_grouping(node));
}

// ---- Over label groups: the operand's modes `rows` names are the rows, the rest the columns.

template <class T>
SVDResult<T> svd(const Expression<T>& a, std::string_view rows) {
  const auto node = detail::einstein_operand(operand_node(a));
  return svd_grouped(a, node, detail::label_grouping("svd", node, rows, false));
}

template <class T>
SVDResult<T> svd(const Expression<T>& a, std::string_view rows, const Truncation& truncation) {
  const auto node = detail::einstein_operand(operand_node(a));
  const detail::Grouping g = detail::label_grouping("svd", node, rows, false);
  detail::TruncationScope scope("svd", truncation, *node);
  SVDResult<T> result = svd_grouped(a, node, g);
  scope.check_made("svd");
  return result;
}

template <class T>
std::pair<QRFactor<T>, QRFactor<T>> qr(const Expression<T>& a, std::string_view rows) {
  const auto node = detail::einstein_operand(operand_node(a));
  return qr_grouped(a, node, detail::label_grouping("qr", node, rows, false));
}

template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, std::string_view rows) {
  const auto node = detail::einstein_operand(operand_node(a));
  return eigen_solve_grouped(a, node, detail::label_grouping("eigen_solve", node, rows, true), false);
}

template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, std::string_view rows, const Truncation& truncation) {
  const auto node = detail::einstein_operand(operand_node(a));
  const detail::Grouping g = detail::label_grouping("eigen_solve", node, rows, true);
  detail::TruncationScope scope("eigen_solve", truncation, *node);
  EigenSolveResult<T> result = eigen_solve_grouped(a, node, g, false);
  scope.check_made("eigen_solve");
  return result;
}

// ---- Truncated decompositions: the untruncated call made in a TruncationScope. The real
// values of a complex operand (detail::values_factor) are read by a set of their own with the
// new mode marked truncated (cast.cpp), so that set takes the kept rank too.

template <class T>
SVDResult<T> svd(const Expression<T>& a, const Truncation& truncation) {
  detail::TruncationScope scope("svd", truncation, *operand_node(a));
  SVDResult<T> result = svd(a);
  scope.check_made("svd");
  return result;
}

template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, const Truncation& truncation) {
  detail::TruncationScope scope("eigen_solve", truncation, *operand_node(a));
  EigenSolveResult<T> result = eigen_solve(a);
  scope.check_made("eigen_solve");
  return result;
}

template <class T>
EigenSolveResult<T> eigen_solve(const Expression<T>& a, const Expression<T>& b, const Truncation& truncation) {
  detail::TruncationScope scope("eigen_solve", truncation, *operand_node(a));
  EigenSolveResult<T> result = eigen_solve(a, b);
  scope.check_made("eigen_solve");
  return result;
}

template <class T>
Slice<T> slice(const Expression<T>& a, std::vector<std::size_t> lo, std::vector<std::size_t> hi) {
  const auto node = detail::einstein_operand(operand_node(a));
  const std::size_t rank = node->labels.size();
  if (lo.size() != rank || hi.size() != rank) {
    throw ShapeError("tenex: slice: " + node->text() + " needs " + std::to_string(rank) + " bounds in lo and hi, got " +
                     std::to_string(lo.size()) + " and " + std::to_string(hi.size()));
  }
  auto out = detail::unary<detail::SliceNode>(node);
  out->labels = node->labels;
  for (std::size_t d = 0; d < rank; ++d) {
    if (hi[d] > node->extents[d]) {
      throw ShapeError("tenex: slice: bound hi = " + std::to_string(hi[d]) + " of label \"" + node->labels[d] +
                       "\" is out of range for extent " + std::to_string(node->extents[d]) + " in " + node->text());
    }
    if (lo[d] > hi[d]) {
      throw ShapeError("tenex: slice: bounds [" + std::to_string(lo[d]) + ", " + std::to_string(hi[d]) +
                       ") of label \"" + node->labels[d] + "\" are reversed in " + node->text());
    }
    out->extents.push_back(hi[d] - lo[d]);
  }
  out->lo = std::move(lo);
  out->hi = std::move(hi);
  return Access::make<Slice<T>>(make_handle(detail::made_by<Slice<T>>(std::move(out)), {&Access::handle(a)}));
}

template <class T>
Chip<T> chip(const Expression<T>& a, std::string_view label, std::size_t index) {
  const auto node = detail::einstein_operand(operand_node(a));
  const std::string name(label);
  const std::size_t mode = detail::find_label(node->labels, name);
  if (mode == node->labels.size()) {
    throw ShapeError("tenex: chip: label \"" + name + "\" is not among the labels of " + node->text());
  }
  if (index >= node->extents[mode]) {
    throw ShapeError("tenex: chip: index " + std::to_string(index) + " of label \"" + name +
                     "\" is out of range for extent " + std::to_string(node->extents[mode]) + " in " + node->text());
  }
  auto out = detail::unary<detail::ChipNode>(node);
  for (std::size_t d = 0; d < node->labels.size(); ++d) {
    if (d == mode) continue;
    out->labels.push_back(node->labels[d]);
    out->extents.push_back(node->extents[d]);
  }
  out->mode = mode;
  out->index = index;
  return Access::make<Chip<T>>(make_handle(detail::made_by<Chip<T>>(std::move(out)), {&Access::handle(a)}));
}

template <class T>
Pow<T> pow(const Expression<T>& a, int n) {
  const auto node = detail::matrix_operand("pow", detail::einstein_operand(operand_node(a)), true);
  if (n < 0) {
    // The power -n of the inverse: LU inverse, then repeated squaring.
    auto out = detail::unary<detail::InversePowNode>(node);
    out->labels = node->labels;
    out->extents = node->extents;
    out->power = static_cast<unsigned>(-static_cast<long long>(n));
    return Access::make<Pow<T>>(make_handle(detail::made_by<Pow<T>>(std::move(out)), {&Access::handle(a)}));
  }
  auto out = detail::unary<detail::PowNode>(node);
  out->labels = node->labels;
  out->extents = node->extents;
  out->power = static_cast<unsigned>(n);
  return Access::make<Pow<T>>(make_handle(detail::made_by<Pow<T>>(std::move(out)), {&Access::handle(a)}));
}

template <class T>
Pow<T> pow(const Expression<T>& a, double p) {
  if (!std::isfinite(p)) {
    throw Error("tenex: pow: the power " + std::to_string(p) + " of " + a.to_string() + " is not finite");
  }
  if (p == std::floor(p)) {
    if (std::abs(p) > 1e9) {
      throw Error("tenex: pow: the power " + std::to_string(p) + " of " + a.to_string() +
                  " is out of range; whole powers must lie within +-1e9");
    }
    return pow(a, static_cast<int>(p));  // whole: exact repeated products, any square matrix
  }
  const auto node = detail::matrix_operand("pow", detail::einstein_operand(operand_node(a)), true);
  auto out = detail::unary<detail::SpdPowNode>(node);
  out->labels = node->labels;
  out->extents = node->extents;
  out->power = p;
  return Access::make<Pow<T>>(make_handle(detail::made_by<Pow<T>>(std::move(out)), {&Access::handle(a)}));
}

template <class T>
Inverse<T> inverse(const Expression<T>& a) {
  const auto node = detail::matrix_operand("inverse", detail::einstein_operand(operand_node(a)), true);
  auto out = detail::unary<detail::InverseNode>(node);
  out->labels = node->labels;
  out->extents = node->extents;
  return Access::make<Inverse<T>>(make_handle(detail::made_by<Inverse<T>>(std::move(out)), {&Access::handle(a)}));
}

template <class T>
Solve<T> solve(const Expression<T>& a, const Expression<T>& b) {
  const auto node_a = detail::matrix_operand("solve", detail::einstein_operand(operand_node(a)), true);
  const auto node_b = detail::einstein_operand(operand_node(b));
  detail::check_shared_extents("solve", *node_a, *node_b);
  // b's mode carrying a's first label is solved and takes a's second label (a(i,j) x(j) =
  // b(i)); else the mode carrying a's second label, which takes a's first (x(i) =
  // inverse(a)(i,j) b(j)). When b has both, x keeps b's labels.
  const std::string& first = node_a->labels[0];
  const std::string& second = node_a->labels[1];
  const std::size_t rank = node_b->labels.size();
  const std::size_t at_first = detail::find_label(node_b->labels, first);
  const std::size_t at_second = detail::find_label(node_b->labels, second);
  if (at_first == rank && at_second == rank) {
    throw ShapeError("tenex: solve: b " + node_b->text() + " shares no label with a " + node_a->text() +
                     "; the mode of b to solve must carry one of a's labels: solve(a(\"i,j\"), b(\"i\")) is x(\"j\") "
                     "with a(\"i,j\") * x(\"j\") = b(\"i\")");
  }
  auto out = std::make_shared<detail::SolveNode>();
  out->dtype = node_a->dtype;
  out->children = {node_a, node_b};
  out->labels = node_b->labels;
  out->extents = node_b->extents;
  if (at_first < rank) {
    out->mode = at_first;
    if (at_second == rank) out->labels.mutable_at(at_first) = second;
  } else {
    out->mode = at_second;
    out->labels.mutable_at(at_second) = first;
  }
  return Access::make<Solve<T>>(
      make_handle(detail::made_by<Solve<T>>(std::move(out)), {&Access::handle(a), &Access::handle(b)}));
}

template <class T>
std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> Indexed<T>::eigen_solve() const {
  return tenex::eigen_solve<T>(*this);
}
template <class T>
std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> Indexed<T>::eigen_solve(const Expression<T>& b) const {
  return tenex::eigen_solve<T>(*this, b);
}
template <class T>
CholeskyVectors<T> Indexed<T>::cholesky() const {
  return tenex::cholesky<T>(*this);
}

template <class T>
const std::vector<std::size_t>& Slice<T>::lo() const {
  return static_cast<const detail::SliceNode&>(*detail::require_handle(this->handle_).node).lo;
}
template <class T>
const std::vector<std::size_t>& Slice<T>::hi() const {
  return static_cast<const detail::SliceNode&>(*detail::require_handle(this->handle_).node).hi;
}
template <class T>
std::size_t Chip<T>::mode() const {
  return static_cast<const detail::ChipNode&>(*detail::require_handle(this->handle_).node).mode;
}
template <class T>
std::size_t Chip<T>::index() const {
  return static_cast<const detail::ChipNode&>(*detail::require_handle(this->handle_).node).index;
}
template <class T>
double Pow<T>::power() const {
  const detail::ExprNode& node = *detail::require_handle(this->handle_).node;
  if (const auto* spd = dynamic_cast<const detail::SpdPowNode*>(&node)) return spd->power;
  if (const auto* inv = dynamic_cast<const detail::InversePowNode*>(&node)) return -static_cast<double>(inv->power);
  return static_cast<const detail::PowNode&>(node).power;
}

#define TENEX_INSTANTIATE_LINEAR_ALGEBRA(T)                                                                       \
  template class CholeskyVectors<T>;                                                                              \
  template class EigenVectors<T>;                                                                                 \
  template class EigenValues<T>;                                                                                  \
  template class QRFactor<T>;                                                                                     \
  template class SVDFactor<T>;                                                                                    \
  template class Slice<T>;                                                                                        \
  template class Chip<T>;                                                                                         \
  template class Pow<T>;                                                                                          \
  template TENEX_API CholeskyVectors<T> cholesky<T>(const Expression<T>&);                                        \
  template TENEX_API std::pair<QRFactor<T>, QRFactor<T>> qr<T>(const Expression<T>&);                             \
  template TENEX_API Slice<T> slice<T>(const Expression<T>&, std::vector<std::size_t>, std::vector<std::size_t>); \
  template TENEX_API Chip<T> chip<T>(const Expression<T>&, std::string_view, std::size_t);                        \
  template TENEX_API Pow<T> pow<T>(const Expression<T>&, int);                                                    \
  template TENEX_API Pow<T> pow<T>(const Expression<T>&, double);                                                 \
  template class Inverse<T>;                                                                                      \
  template class Solve<T>;                                                                                        \
  template TENEX_API Inverse<T> inverse<T>(const Expression<T>&);                                                 \
  template TENEX_API Solve<T> solve<T>(const Expression<T>&, const Expression<T>&);                               \
  template CholeskyVectors<T> Indexed<T>::cholesky() const;                                                       \
  template TENEX_API SVDResult<T> svd<T>(const Expression<T>&, const Truncation&);                                \
  template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, const Truncation&);                 \
  template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, const Expression<T>&,               \
                                                        const Truncation&);                                       \
  template TENEX_API SVDResult<T> svd<T>(const Expression<T>&, std::string_view);                                 \
  template TENEX_API SVDResult<T> svd<T>(const Expression<T>&, std::string_view, const Truncation&);              \
  template TENEX_API std::pair<QRFactor<T>, QRFactor<T>> qr<T>(const Expression<T>&, std::string_view);           \
  template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, std::string_view);                  \
  template TENEX_API EigenSolveResult<T> eigen_solve<T>(const Expression<T>&, std::string_view, const Truncation&);
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_LINEAR_ALGEBRA)
#undef TENEX_INSTANTIATE_LINEAR_ALGEBRA

// The decompositions whose values are real: over real_object_t<T> (Tensor<R> for a complex T).
#define TENEX_INSTANTIATE_REAL_VALUED(T)                                                                               \
  template TENEX_API std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve<T>(const Expression<T>&);   \
  template TENEX_API std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> eigen_solve<T>(const Expression<T>&,    \
                                                                                              const Expression<T>&);   \
  template TENEX_API std::tuple<SVDFactor<T>, SVDFactor<real_object_t<T>>, SVDFactor<T>> svd<T>(const Expression<T>&); \
  template std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> Indexed<T>::eigen_solve() const;                  \
  template std::pair<EigenVectors<T>, EigenValues<real_object_t<T>>> Indexed<T>::eigen_solve(const Expression<T>&)     \
      const;
TENEX_FOR_EACH_OBJECT(TENEX_INSTANTIATE_REAL_VALUED)
#undef TENEX_INSTANTIATE_REAL_VALUED

}  // namespace tenex
