// tenex/graph/op_kind.hpp — the op table: the closed set of operations an OpGraph node can be.
//
// TENEX_FOR_EACH_OP(X) lists every kind once, with its arity and its parameter
// struct. From it come the OpKind enum, the names, the parameter variant
// OpParams (compared by each struct's defaulted operator==, so common
// subexpression elimination can never forget a field), the DOT text of the
// parameters, the result-shape rule and the backends' strict visitor. A new
// kind is a compile error wherever it is not handled:
//
//   struct SqrtParams { bool operator==(const SqrtParams&) const = default; };
//   X(sqrt, 1, SqrtParams)   // then: describe(SqrtParams), the shape rule, run_sqrt in every backend
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/graph/functions.hpp"

namespace tenex {

class SparseMap;

/// A sparse map as a graph uses it: for each value of the `source` modes only the listed
/// values of the `target` modes may be non-zero.
struct SparseMapUse {
  std::vector<std::string> source;
  std::vector<std::string> target;
  std::shared_ptr<const SparseMap> map;
  bool operator==(const SparseMapUse&) const = default;
};

/// A tensor's value. Operand: the output node that writes it, when the set produces it.
/// `truncated_modes`: the modes (positions) whose extent is the kept rank of a truncated
/// decomposition run in another set (the real values of a complex svd or eigen_solve with a
/// Truncation, read through their own set): the node's extent there is the upper bound, the
/// tensor's own the kept rank once it is read; the set treats the mode as truncated.
struct InputParams {
  std::vector<std::size_t> truncated_modes;
  bool operator==(const InputParams&) const = default;
};
/// Writes its operand into an assignment target (OpNode::storage), permuting it.
struct OutputParams {
  std::vector<std::string> operand_labels;  // the operand's labels renamed to the target's
  bool operator==(const OutputParams&) const = default;
};
/// Diagonal, sum over modes, or permutation of one operand (labels decide which).
struct ReduceParams {
  bool operator==(const ReduceParams&) const = default;
};
/// alpha * sum of a*b over the labels the result lacks (a GEMM), plus beta * d when a
/// third operand d (the addend, with the result's labels in any order) is given.
/// Complex sets: a (conj_a) or b (conj_b) is read conjugated (fold_scales folds a
/// tenex::conj of a factor into its product).
struct ContractParams {
  double alpha = 1.0;
  double beta = 0.0;
  bool conj_a = false, conj_b = false;
  bool operator==(const ContractParams&) const = default;
};
/// Element-wise alpha * a (op) alpha_b * b, broadcasting by label.
struct ElementwiseParams {
  double alpha = 1.0;    // factor of the result (of a, for add and subtract)
  double alpha_b = 1.0;  // factor of the second operand (add and subtract)
  bool operator==(const ElementwiseParams&) const = default;
};
struct AddParams : ElementwiseParams {
  bool operator==(const AddParams&) const = default;
};
struct SubtractParams : ElementwiseParams {
  bool operator==(const SubtractParams&) const = default;
};
struct DivideParams : ElementwiseParams {
  bool operator==(const DivideParams&) const = default;
};
/// alpha * operand; in a complex set the factor is alpha + i alpha_imag (the passes fold only
/// real factors into other nodes).
struct ScaleParams {
  double alpha = 1.0;
  double alpha_imag = 0.0;
  bool operator==(const ScaleParams&) const = default;
};
/// A factor alpha + i alpha_imag as element type T (a real T takes alpha: real sets have
/// alpha_imag 0).
template <class T>
T scalar_factor(double alpha, double alpha_imag) {
  if constexpr (requires { typename T::value_type; }) {
    return T(static_cast<typename T::value_type>(alpha), static_cast<typename T::value_type>(alpha_imag));
  } else {
    return static_cast<T>(alpha);
  }
}
/// Lower factor L of a = L L^T, a read from its lower triangle (upper: from its upper
/// triangle, i.e. the factor of a^T, which the operand's labels asked for).
struct CholeskyParams {
  bool upper = false;
  bool operator==(const CholeskyParams&) const = default;
};
/// A truncated decomposition (tenex::Truncation): `truncated` set, at most `max_rank` values
/// kept (0: no cap), the smallest whose squares sum to at most `cutoff` times the total
/// dropped. The packed layout holds min(max_rank, k) values (packed_rank); the values beyond
/// the kept rank, and their vectors, are zero; two elements after the factors hold the kept
/// rank and the discarded weight (packed_truncation_offset).
struct TruncationParams {
  bool truncated = false;
  std::size_t max_rank = 0;
  double cutoff = 0.0;
  bool operator==(const TruncationParams&) const = default;
};
/// Packed eigenvectors then eigenvalues of a (one operand) or of a v = w b v (two).
/// Truncated: the kept eigenpairs by descending |w| (of either problem).
/// A decomposition's operand may have any rank: its first `rows` modes form the matrix's rows,
/// the rest its columns (decomposition_matrix); a matrix has rows = 1.
struct EigenSolveParams {
  TruncationParams truncation;
  std::size_t rows = 1;
  bool operator==(const EigenSolveParams&) const = default;
};
/// Packed reduced Q then R.
struct QrParams {
  std::size_t rows = 1;
  bool operator==(const QrParams&) const = default;
};
/// Packed thin U, S, Vt (truncated: the kept singular triplets).
struct SvdParams {
  TruncationParams truncation;
  std::size_t rows = 1;
  bool operator==(const SvdParams&) const = default;
};
/// Factor `which` of a packed decomposition (see packed_factor_offset).
struct FactorParams {
  std::size_t which = 0;
  bool operator==(const FactorParams&) const = default;
};
/// The half-open block [lo, hi) of every mode.
struct SliceParams {
  std::vector<std::size_t> lo, hi;
  bool operator==(const SliceParams&) const = default;
};
/// Fixes operand mode `mode` at `index`, dropping it.
struct ChipParams {
  std::size_t mode = 0;
  std::size_t index = 0;
  bool operator==(const ChipParams&) const = default;
};
/// Matrix power (n = 0: the identity).
struct PowParams {
  unsigned power = 0;
  bool operator==(const PowParams&) const = default;
};
/// Zeroes the elements of its operand that the sparse maps exclude.
struct MaskParams {
  std::vector<SparseMapUse> maps;
  bool operator==(const MaskParams&) const = default;
};
// Matrix functions: inverse, solve, powers of symmetric positive (semi)definite matrices.
/// Inverse of a square matrix (LU: getrf, getri); singular: NumericalError.
struct InverseParams {
  bool operator==(const InverseParams&) const = default;
};
/// x with a x = b: operand 0 is a (n x n), operand 1 is b, whose mode `mode` (extent n) is
/// solved; every other mode of b is a right-hand side. Cholesky when a is symmetric
/// positive definite, LU otherwise; singular: NumericalError.
struct SolveParams {
  std::size_t mode = 0;
  bool operator==(const SolveParams&) const = default;
};
/// a^power of a symmetric positive (semi)definite matrix: V diag(w^power) V^T.
struct SpdPowParams {
  double power = 1.0;
  bool operator==(const SpdPowParams&) const = default;
};

/// One instruction of a fused program: `op` (tenex/graph/functions.hpp) reads values `a`
/// (and `b`) and takes the numbers `x` (and `y`); a load reads operand `a`, a call runs
/// functions[b].
///
/// A constant of a complex set is x + i y (a real set's constants have y = 0).
struct FusedInstr {
  FusedOp op = FusedOp::load;
  std::uint32_t a = 0, b = 0;
  double x = 0, y = 0;
  bool operator==(const FusedInstr&) const = default;
};
/// A C++ callable applied element-wise (tenex::map). Only the CPU runs it.
struct ScalarFunction {
  std::string name;
  std::function<double(double)> f64;                               // set for double sets
  std::function<float(float)> f32;                                 // set for float sets
  std::function<std::complex<float>(std::complex<float>)> c64;     // set for complex<float> sets
  std::function<std::complex<double>(std::complex<double>)> c128;  // set for complex<double> sets
};
/// How a fused node reduces over the labels its operands have and its result lacks.
enum class ReduceOp : unsigned char { sum, max, min };
/// Element-wise work over the union of the operands' labels in one pass: the value of the
/// program's last instruction at every point, reduced over the labels the result lacks.
/// The fusion pass merges regions of element-wise nodes into one; the element-wise
/// functions (exp, max, clamp, scalars, ...) are single-region programs.
struct FusedParams {
  std::vector<FusedInstr> program;
  ReduceOp reduce = ReduceOp::sum;
  std::vector<std::shared_ptr<const ScalarFunction>> functions;  // compared by identity
  bool operator==(const FusedParams&) const = default;
};

//  X(name, arity, parameter struct)   arity -1: it varies (input: 0 or 1; eigen_solve: 1 or 2;
//                                    contract: 2, or 3 with the addend)
#define TENEX_FOR_EACH_OP(X)           \
  X(input, -1, InputParams)            \
  X(output, 1, OutputParams)           \
  X(reduce, 1, ReduceParams)           \
  X(contract, -1, ContractParams)      \
  X(add, 2, AddParams)                 \
  X(subtract, 2, SubtractParams)       \
  X(divide, 2, DivideParams)           \
  X(scale, 1, ScaleParams)             \
  X(cholesky, 1, CholeskyParams)       \
  X(eigen_solve, -1, EigenSolveParams) \
  X(qr, 1, QrParams)                   \
  X(svd, 1, SvdParams)                 \
  X(factor, 1, FactorParams)           \
  X(slice, 1, SliceParams)             \
  X(chip, 1, ChipParams)               \
  X(pow, 1, PowParams)                 \
  X(mask, 1, MaskParams)               \
  X(fused, -1, FusedParams)            \
  X(inverse, 1, InverseParams)         \
  X(solve, 2, SolveParams)             \
  X(spd_pow, 1, SpdPowParams)

enum class OpKind {
#define TENEX_OP_KIND_ENUM(name, arity, Params) name,
  TENEX_FOR_EACH_OP(TENEX_OP_KIND_ENUM)
#undef TENEX_OP_KIND_ENUM
};

#define TENEX_OP_PARAMS_ALTERNATIVE(name, arity, Params) , Params
/// The parameters of a node: alternative k + 1 belongs to OpKind k; std::monostate means
/// "the defaults of the node's kind" (OpGraph::add_node fills them in).
using OpParams = std::variant<std::monostate TENEX_FOR_EACH_OP(TENEX_OP_PARAMS_ALTERNATIVE)>;
#undef TENEX_OP_PARAMS_ALTERNATIVE

/// The kind whose parameter struct is P: op_kind_of<ContractParams> == OpKind::contract.
template <class P>
inline constexpr OpKind op_kind_of = [] {
  static_assert(!std::is_same_v<P, P>, "tenex: not a parameter struct of TENEX_FOR_EACH_OP");
  return OpKind::input;
}();
#define TENEX_OP_KIND_OF(name, arity, Params) \
  template <>                                 \
  inline constexpr OpKind op_kind_of<Params> = OpKind::name;
TENEX_FOR_EACH_OP(TENEX_OP_KIND_OF)
#undef TENEX_OP_KIND_OF

/// "contract", "cholesky", ...
TENEX_API std::string_view op_kind_name(OpKind kind);
/// Number of operands the kind takes, -1 when it varies.
TENEX_API int op_kind_arity(OpKind kind);
/// The kind of `params` (an empty variant is no kind: InternalError).
TENEX_API OpKind op_kind_of_params(const OpParams& params);
/// Default parameters of `kind`.
TENEX_API OpParams default_params(OpKind kind);
/// The parameters as DOT shows them: " alpha=2", " lo={0, 1} hi={2, 3}", "" for none.
TENEX_API std::string describe_params(const OpParams& params);
/// A fused program as text: "exp(x0) + 2 * x1" (x<k> is operand k).
TENEX_API std::string describe_program(const FusedParams& params);
/// "exp", "add", "max", ... the name of a fused instruction (the table's name column).
TENEX_API std::string_view fused_op_name(FusedOp op);
/// How many earlier values an instruction of `op` reads: 0 (load, constant), 1 (a) or 2 (a, b).
TENEX_API int fused_op_values(FusedOp op);
/// How many of the numbers x, y an instruction of `op` uses: 1 for a constant (x), the
/// table's parameters column for a function (pow: x; clamp: x and y), 0 for load and call.
TENEX_API int fused_op_parameters(FusedOp op);
/// Whether instruction `in` is zero wherever the values it reads are zero as `a_zero` and
/// `b_zero` say (the sparse-map rules, the table's keeps_zero column: a product with a zero,
/// a sum of two zeros, f(0) = 0 for sqrt, sin, ...). A load answers false: whether its
/// operand is zero is the caller's.
TENEX_API bool fused_op_keeps_zero(const FusedInstr& in, bool a_zero, bool b_zero);

/// The packed layout of a decomposition of an m x n operand, defined once: number of
/// elements of the packed buffer, and where factor `which` starts in it.
/// eigen_solve: vectors (m*m), values (m). qr: Q (m*k), R (k*n). svd: U (m*k), S (k), Vt (k*n);
/// k = min(m, n).
TENEX_API std::size_t packed_size(OpKind decomposition, std::size_t m, std::size_t n);
TENEX_API std::size_t packed_factor_offset(OpKind decomposition, std::size_t which, std::size_t m, std::size_t n);
/// The same for a node's parameters, which may truncate: k is then packed_rank(params, m, n)
/// and two elements follow the factors (the kept rank and the discarded weight, as real parts).
TENEX_API std::size_t packed_size(const OpParams& params, std::size_t m, std::size_t n);
TENEX_API std::size_t packed_factor_offset(const OpParams& params, std::size_t which, std::size_t m, std::size_t n);
/// The truncation of a decomposition's parameters; null when they truncate nothing.
TENEX_API const TruncationParams* truncation_of(const OpParams& params);
/// The number of values a packed decomposition holds: min(m, n) (eigen_solve: n), capped by a
/// truncation's max_rank.
TENEX_API std::size_t packed_rank(const OpParams& params, std::size_t m, std::size_t n);
/// Where a truncated decomposition's packed buffer holds the kept rank, then the discarded weight.
TENEX_API std::size_t packed_truncation_offset(const OpParams& params, std::size_t m, std::size_t n);
/// The m x n matrix a decomposition (eigen_solve, qr, svd) of an operand with `extents` sees: m
/// the product of the first `rows` extents of its parameters, n that of the rest.
struct MatrixExtents {
  std::size_t m = 0, n = 0;
};
TENEX_API MatrixExtents decomposition_matrix(const OpParams& params, const std::vector<std::size_t>& extents);
/// The number of row modes of a decomposition's parameters (1 for other kinds).
TENEX_API std::size_t decomposition_rows(const OpParams& params);
/// Number of factors of a packed decomposition (0 when `kind` is not one) and their DOT names.
TENEX_API std::size_t packed_factor_count(OpKind decomposition);
TENEX_API std::string_view packed_factor_name(OpKind decomposition, std::size_t which);

}  // namespace tenex
