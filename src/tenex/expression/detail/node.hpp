// The immutable nodes behind expression handles, one struct per expression class, each
// holding its own typed data and lowering itself into an OpGraph (emit). Handles share
// nodes, so a named intermediate used twice is one node (and one graph node).
//
// Lowering is iterative (the Lowering class walks the tree with its own stack), so a node
// only says which labels it needs of each child (child_keep) and how to add its own
// operation once the children are built (emit). Destruction is iterative too: a sum built
// in a loop may be a million nodes deep.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "tenex/expression/detail/label_store.hpp"
#include "tenex/expression/detail/signature.hpp"
#include "tenex/graph/op_graph.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail {

class Lowering;
struct ExprNode;
using NodePtr = std::shared_ptr<const ExprNode>;

struct ExprNode {
  DType dtype = DType::f64;
  /// Free labels: unique, in natural order; one extent per label. A product's are a view of a
  /// store it shares with the products it extends (label_store.hpp).
  NodeLabels labels;
  NodeExtents extents;
  std::vector<NodePtr> children;
  /// The labels an operation needing definite modes (a decomposition, slice, permutation)
  /// sees: inside a product, a label on two or more factors is summed. For most nodes they are
  /// `labels` themselves, which finish() then does not copy (implicit_is_labels).
  const std::vector<std::string>& implicit_labels() const { return implicit_is_labels ? labels.vec() : implicit; }
  std::vector<std::string> implicit;  // when !implicit_is_labels
  bool implicit_is_labels = false;
  /// The public class that made this node; an expression of another dynamic type over it
  /// is a user class whose add_to_graph must be honoured.
  const std::type_info* made_by = nullptr;
  /// A user class's lowering, recorded the first time its object is used as an operand.
  mutable NodePtr snapshot;
  mutable const std::type_info* snapshot_type = nullptr;

  ExprNode() = default;
  ExprNode(const ExprNode&) = delete;
  ExprNode& operator=(const ExprNode&) = delete;
  virtual ~ExprNode();

  /// "addition", "indexed", ...
  virtual std::string_view kind_name() const = 0;
  /// The labels child `i` must provide so this node can produce `keep`.
  virtual std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const;
  /// Adds this node's operation producing `keep` (a subset of labels, in any order) over the
  /// children's built nodes, returning the node that holds the result.
  virtual NodeId emit(Lowering& lowering, const std::vector<std::string>& keep,
                      const std::vector<NodeId>& children) const = 0;
  /// Whether this node is a product (or a scale of one) for the implicit-label rule.
  virtual bool is_product() const { return false; }
  // A product's factors' labels, each with the number of factors holding it, are in its
  // labels' store (label_store.hpp): a product built factor by factor costs O(1) per factor.
  /// Whether this node or one below it adds terms (`+`, `-`, a scalar added): the statement's
  /// check of labels summed over a sum (check_summed_labels) skips the parts without one.
  bool holds_sum = false;
  /// Whether this node or one below it is a truncated decomposition (or reads a mode one
  /// truncated): extents of the results of its set are decided when the set runs.
  bool holds_truncation = false;

  /// ("i,j") {3, 4}
  virtual std::string text() const;
  /// Throws the error stored when the expression was made unusable as an operand.
  virtual void check_readable() const {}
  /// Writes what emit() and child_keep() read beyond labels, extents and children (factor,
  /// bounds, power...) to the plan cache's signature; the walk writes the class itself.
  /// False: a set holding this node is not cached. That is the default, so a class that does
  /// not write its data runs uncached rather than with another set's plan.
  virtual bool write_signature(SignatureWriter& out) const {
    (void)out;
    return false;
  }
  /// Fills `implicit` from the children (a MultiplicationNode's, product_labels has filled);
  /// called once by make.
  void finish();
};

/// `node` as the node class N, or null: an exact type test in place of dynamic_cast, which a
/// statement would pay several times. The node classes are final and made only inside this
/// library, which holds one type_info per class, so comparing the addresses is exact (and
/// saves the name comparison that type_info's == makes on a mismatch).
template <class N>
const N* node_as(const ExprNode& node) {
  static_assert(std::is_final_v<N>, "node_as tests the exact class: N must be final");
  return &typeid(node) == &typeid(N) ? static_cast<const N*>(&node) : nullptr;
}

/// `a("i,j")`: a tensor's (or shape's) value with labelled modes.
struct IndexedNode final : ExprNode {
  /// The labels as written (a label may repeat: a diagonal). Most are the free labels in
  /// the same order, which the node then does not hold twice (written_is_labels).
  const std::vector<std::string>& written_labels() const { return written_is_labels ? labels.vec() : written; }
  std::vector<std::string> written;  // when !written_is_labels
  bool written_is_labels = false;
  std::shared_ptr<void> storage;           // the value read (tensors); null for shapes
  std::string unreadable;                  // why this operand cannot be read, if it cannot
  bool shape_error = false;                // unreadable because of labels/extents (ShapeError)
  std::shared_ptr<const void> keep_alive;  // what produces `storage` when no set does (tenex::cast)
  /// A real value of a complex decomposition (Hermitian eigenvalues, singular values): the
  /// complex FactorNode whose real part `storage` receives. Its target names the factor's modes
  /// as a factor's target does, and is undone with a failing sibling target (indexed.cpp).
  NodePtr factor;
  /// The labels whose extent is the upper bound of a kept rank decided in another set (a
  /// truncated decomposition's mode read through tenex::cast or real_factor): the graph's
  /// input carries them as InputParams::truncated_modes.
  std::vector<std::string> truncated;

  std::string_view kind_name() const override { return "indexed"; }
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  std::string text() const override;
  void check_readable() const override;
  bool write_signature(SignatureWriter& out) const override {
    if (!unreadable.empty() || !storage) return false;
    out.put(written_labels());
    out.put_storage(storage);
    out.put(truncated);
    return true;
  }
};

/// `a + b`, `a - b`, `a / b`: element-wise by label, broadcasting.
struct ElementwiseNode final : ExprNode {
  OpKind op = OpKind::add;  // add, subtract, divide
  std::string_view kind_name() const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(static_cast<std::uint64_t>(op));
    return true;
  }
};

/// `a * b`: a generalized Einstein product (contraction, Hadamard, outer).
struct MultiplicationNode final : ExprNode {
  std::string_view kind_name() const override { return "multiplication"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool is_product() const override { return true; }
  bool write_signature(SignatureWriter& out) const override {
    (void)out;
    return true;
  }
};

/// `factor * a`.
struct ScaleNode final : ExprNode {
  double factor = 1.0;
  double factor_imag = 0.0;  // complex sets: the factor is factor + i factor_imag
  std::string_view kind_name() const override { return "scale"; }
  std::vector<std::string> child_keep(std::size_t, const std::vector<std::string>& keep) const override { return keep; }
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool is_product() const override { return children[0]->is_product(); }
  bool write_signature(SignatureWriter& out) const override {
    out.put_double(factor);
    out.put_double(factor_imag);
    return true;
  }
};

/// `permute(a, "j,i")`, and the sum over the labels a product's consumer does not keep.
struct PermutationNode final : ExprNode {
  std::string_view kind_name() const override { return "permutation"; }
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    (void)out;
    return true;
  }
};

/// `cholesky(a)`: the lower factor.
struct CholeskyNode final : ExprNode {
  bool upper = false;  // the labels ask for the transpose: read the upper triangle
  std::string_view kind_name() const override { return "cholesky"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(upper ? 1 : 0);
    return true;
  }
};

/// The packed result of eigen_solve, qr or svd, shared by the factors of one call.
struct DecompositionNode final : ExprNode {
  OpKind op = OpKind::qr;       // eigen_solve, qr, svd
  TruncationParams truncation;  // svd, eigen_solve with a tenex::Truncation
  std::size_t rows = 1;         // the first `rows` labels are the matrix's rows, the rest its columns
  std::string_view kind_name() const override { return "decomposition"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(static_cast<std::uint64_t>(op));
    out.put(rows);
    out.put(labels.vec());  // the order the operand is read in
    if (truncation.truncated) {
      out.put(std::uint64_t{truncation.max_rank});
      out.put_double(truncation.cutoff);
    }
    return true;
  }
};

/// Factor `which` of a decomposition (child 0).
struct FactorNode final : ExprNode {
  std::size_t which = 0;
  std::string_view kind_name() const override { return "factor"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(which);
    return true;
  }
};

/// `slice(a, lo, hi)`.
struct SliceNode final : ExprNode {
  std::vector<std::size_t> lo, hi;
  std::string_view kind_name() const override { return "slice"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(lo);
    out.put(hi);
    return true;
  }
};

/// `chip(a, label, index)`.
struct ChipNode final : ExprNode {
  std::size_t mode = 0, index = 0;
  std::string_view kind_name() const override { return "chip"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(mode);
    out.put(index);
    return true;
  }
};

/// `pow(a, n)`: matrix power.
struct PowNode final : ExprNode {
  unsigned power = 0;
  std::string_view kind_name() const override { return "pow"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(power);
    return true;
  }
};

/// What a user class deriving from Nary<N,T> holds: its operands, no semantics of its own
/// (its add_to_graph override gives them).
struct NaryNode final : ExprNode {
  std::string class_name;
  std::string_view kind_name() const override { return "nary"; }
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
};

/// A user class's own lowering: the graph its add_to_graph drew, spliced in where it is used.
struct FragmentNode final : ExprNode {
  std::shared_ptr<const OpGraph> fragment;
  NodeId result = 0;
  std::string class_name;
  std::string_view kind_name() const override { return "fragment"; }
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
};

// Matrix functions

/// `inverse(a)`: a^-1, labelled like a.
struct InverseNode final : ExprNode {
  std::string_view kind_name() const override { return "inverse"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    (void)out;
    return true;
  }
};

/// `pow(a, n)` with n < 0: (a^-1)^power, power = -n.
struct InversePowNode final : ExprNode {
  unsigned power = 1;
  std::string_view kind_name() const override { return "inverse_pow"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(power);
    return true;
  }
};

/// `pow(a, p)` with p not whole: a symmetric positive (semi)definite.
struct SpdPowNode final : ExprNode {
  double power = 1.0;
  std::string_view kind_name() const override { return "spd_pow"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put_double(power);
    return true;
  }
};

/// `solve(a, b)` (children a, b): x with a x = b, b's mode `mode` solved.
struct SolveNode final : ExprNode {
  std::size_t mode = 0;
  std::string_view kind_name() const override { return "solve"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(mode);
    return true;
  }
};

// Element-wise functions (elementwise.cpp)

/// An element-wise program over one operand (its load 0): exp, power, clamp, scalars, map.
struct MapNode final : ExprNode {
  std::vector<FusedInstr> program;
  std::vector<std::shared_ptr<const ScalarFunction>> functions;
  std::string_view kind_name() const override { return "unary"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    if (!functions.empty()) return false;  // a user's callable: a new object every statement
    out.put(program.size());
    for (const FusedInstr& in : program) {
      out.put(static_cast<std::uint64_t>(in.op));
      out.put(static_cast<std::uint64_t>(in.a));
      out.put(static_cast<std::uint64_t>(in.b));
      out.put_double(in.x);
      out.put_double(in.y);
    }
    return true;
  }
};

/// max(a, b) or min(a, b), by label.
struct ExtremumNode final : ExprNode {
  FusedOp op = FusedOp::maximum;
  std::string_view kind_name() const override { return op == FusedOp::maximum ? "max" : "min"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(static_cast<std::uint64_t>(op));
    return true;
  }
};

/// sum / max_over / min_over: the operand without `reduced`.
struct ReductionNode final : ExprNode {
  ReduceOp op = ReduceOp::sum;
  std::vector<std::string> reduced;
  std::string_view kind_name() const override { return "reduction"; }
  std::vector<std::string> child_keep(std::size_t i, const std::vector<std::string>& keep) const override;
  NodeId emit(Lowering&, const std::vector<std::string>&, const std::vector<NodeId>&) const override;
  bool write_signature(SignatureWriter& out) const override {
    out.put(static_cast<std::uint64_t>(op));
    out.put(reduced);
    return true;
  }
};

}  // namespace tenex::detail
