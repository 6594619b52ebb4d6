#include "tenex/graph/op_kind.hpp"

#include <algorithm>
#include <sstream>

#include "tenex/error.hpp"
#include "tenex/labels.hpp"

namespace tenex {

namespace {

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Joins its pieces by appending. Written a + b + c, std::string's operator+ inlines into
// GCC 12's false -Wrestrict warning in a Release build (GCC bug 105329).
template <class... Pieces>
std::string concat(const Pieces&... pieces) {
  std::string text;
  (text += ... += pieces);
  return text;
}

// The DOT text of each parameter struct: one overload per struct of the op table, so a
// new kind without one is a compile error in describe_params.
std::string describe(const InputParams& p) {
  if (p.truncated_modes.empty()) return {};
  return concat(" truncated_modes=", detail::format_extents(p.truncated_modes));
}
std::string describe(const OutputParams&) { return {}; }
std::string describe(const ReduceParams&) { return {}; }
std::string describe(const ContractParams& p) {
  std::string text;
  if (p.alpha != 1.0) text += concat(" alpha=", number(p.alpha));
  if (p.beta != 0.0) text += concat(" beta=", number(p.beta));
  if (p.conj_a) text += " conj_a";
  if (p.conj_b) text += " conj_b";
  return text;
}
std::string describe(const ElementwiseParams& p) {
  if (p.alpha == 1.0 && p.alpha_b == 1.0) return {};
  return concat(" alpha=", number(p.alpha), ",", number(p.alpha_b));
}
std::string describe(const AddParams& p) { return describe(static_cast<const ElementwiseParams&>(p)); }
std::string describe(const SubtractParams& p) { return describe(static_cast<const ElementwiseParams&>(p)); }
std::string describe(const DivideParams& p) { return describe(static_cast<const ElementwiseParams&>(p)); }
std::string describe(const ScaleParams& p) {
  if (p.alpha_imag != 0.0) return concat(" alpha=(", number(p.alpha), ", ", number(p.alpha_imag), ")");
  return p.alpha != 1.0 ? concat(" alpha=", number(p.alpha)) : "";
}
std::string describe(const CholeskyParams& p) { return p.upper ? " upper" : ""; }
std::string describe(const TruncationParams& p) {
  if (!p.truncated) return {};
  return concat(" max_rank=", p.max_rank == 0 ? std::string("none") : std::to_string(p.max_rank),
                " cutoff=", number(p.cutoff));
}
std::string describe_rows(std::size_t rows) {
  return rows == 1 ? std::string() : concat(" rows=", std::to_string(rows));
}
std::string describe(const EigenSolveParams& p) { return describe_rows(p.rows) + describe(p.truncation); }
std::string describe(const QrParams& p) { return describe_rows(p.rows); }
std::string describe(const SvdParams& p) { return describe_rows(p.rows) + describe(p.truncation); }
std::string describe(const FactorParams& p) { return concat(" ", std::to_string(p.which)); }
std::string describe(const SliceParams& p) {
  return concat(" lo=", detail::format_extents(p.lo), " hi=", detail::format_extents(p.hi));
}
std::string describe(const ChipParams& p) {
  return concat(" mode=", std::to_string(p.mode), " index=", std::to_string(p.index));
}
std::string describe(const PowParams& p) { return concat(" n=", std::to_string(p.power)); }
std::string describe(const MaskParams& p) {
  std::string text;
  for (const SparseMapUse& use : p.maps) {
    text += concat(" ", detail::join_labels(use.source), "->", detail::join_labels(use.target));
  }
  return text;
}
// Matrix functions.
std::string describe(const InverseParams&) { return {}; }
std::string describe(const SolveParams& p) { return concat(" mode=", std::to_string(p.mode)); }
std::string describe(const SpdPowParams& p) { return concat(" p=", number(p.power)); }

std::string describe(const FusedParams& p) {
  std::string text = concat(" ", describe_program(p));
  if (p.reduce == ReduceOp::max) text += " reduce=max";
  if (p.reduce == ReduceOp::min) text += " reduce=min";
  return text;
}

}  // namespace

std::string_view fused_op_name(FusedOp op) {
  if (op == FusedOp::load) return "load";
  if (op == FusedOp::constant) return "constant";
  if (op == FusedOp::call) return "call";
  return is_function(op) ? function_info(op).name : "unknown";
}

int fused_op_values(FusedOp op) {
  if (op == FusedOp::load || op == FusedOp::constant) return 0;
  return op == FusedOp::call ? 1 : function_info(op).values;
}

int fused_op_parameters(FusedOp op) { return op == FusedOp::constant ? 1 : function_info(op).parameters; }

bool fused_op_keeps_zero(const FusedInstr& in, bool a_zero, bool b_zero) {
  switch (in.op) {
    case FusedOp::load: return false;
    case FusedOp::constant: return in.x == 0.0 && in.y == 0.0;
    case FusedOp::call: return false;  // unknown
#define TENEX_FUSED_OP_KEEPS_ZERO(op_, name, values, parameters, keeps_zero_, scalar, text, cuda) \
  case FusedOp::op_: return Function<FusedOp::op_>::keeps_zero(a_zero, b_zero, in.x, in.y);
      TENEX_FOR_EACH_FUNCTION(TENEX_FUSED_OP_KEEPS_ZERO)
#undef TENEX_FUSED_OP_KEEPS_ZERO
  }
  return false;
}

namespace {

/// A function's text column with {a}, {b}, {x}, {y} replaced.
std::string fill_text(std::string_view text, const std::string& a, const std::string& b, const std::string& x,
                      const std::string& y) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{' && i + 2 < text.size() && text[i + 2] == '}') {
      const char c = text[i + 1];
      if (c == 'a' || c == 'b' || c == 'x' || c == 'y') {
        out += c == 'a' ? a : c == 'b' ? b : c == 'x' ? x : y;
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

}  // namespace

std::string describe_program(const FusedParams& p) {
  // Values used once are written inline; values used more often get a name (t3 = ...).
  const std::size_t n = p.program.size();
  std::vector<std::size_t> uses(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const FusedInstr& in = p.program[i];
    if (in.op == FusedOp::load || in.op == FusedOp::constant) continue;
    if (in.a < n) ++uses[in.a];
    if (fused_op_values(in.op) == 2 && in.b < n) ++uses[in.b];
  }
  std::vector<std::string> text(n);
  std::string names;
  auto ref = [&](std::uint32_t v) -> std::string { return v < n ? text[v] : "?"; };
  for (std::size_t i = 0; i < n; ++i) {
    const FusedInstr& in = p.program[i];
    std::string t;
    if (in.op == FusedOp::load) {
      t = concat("x", std::to_string(in.a));
    } else if (in.op == FusedOp::constant) {
      t = in.y == 0.0 ? number(in.x) : concat("(", number(in.x), ", ", number(in.y), ")");
    } else if (in.op == FusedOp::call) {
      const bool named = in.b < p.functions.size() && p.functions[in.b];
      t = concat(named ? std::string_view(p.functions[in.b]->name) : std::string_view("f"), "(", ref(in.a), ")");
    } else {
      const bool two = fused_op_values(in.op) == 2;
      t = fill_text(function_info(in.op).text, ref(in.a), two ? ref(in.b) : "?", number(in.x), number(in.y));
    }
    if (uses[i] > 1 && i + 1 < n && in.op != FusedOp::load && in.op != FusedOp::constant) {
      std::string temporary = concat("t", std::to_string(i));
      names += concat(temporary, "=", t, "; ");
      t = std::move(temporary);
    }
    text[i] = std::move(t);
  }
  return n ? concat(names, text[n - 1]) : std::string("(empty program)");
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
#define TENEX_OP_KIND_NAME(name, arity, Params) \
  case OpKind::name: return #name;
    TENEX_FOR_EACH_OP(TENEX_OP_KIND_NAME)
#undef TENEX_OP_KIND_NAME
  }
  return "unknown";
}

int op_kind_arity(OpKind kind) {
  switch (kind) {
#define TENEX_OP_KIND_ARITY(name, arity, Params) \
  case OpKind::name: return arity;
    TENEX_FOR_EACH_OP(TENEX_OP_KIND_ARITY)
#undef TENEX_OP_KIND_ARITY
  }
  return -1;
}

OpKind op_kind_of_params(const OpParams& params) {
  if (params.index() == 0) throw InternalError("tenex: OpGraph: a node has no parameters and no kind");
  return static_cast<OpKind>(params.index() - 1);
}

OpParams default_params(OpKind kind) {
  switch (kind) {
#define TENEX_OP_DEFAULT_PARAMS(name, arity, Params) \
  case OpKind::name: return Params{};
    TENEX_FOR_EACH_OP(TENEX_OP_DEFAULT_PARAMS)
#undef TENEX_OP_DEFAULT_PARAMS
  }
  throw InternalError("tenex: OpGraph: unknown op kind " + std::to_string(static_cast<int>(kind)));
}

std::string describe_params(const OpParams& params) {
  return std::visit(
      [](const auto& p) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>, std::monostate>) {
          return {};
        } else {
          return describe(p);
        }
      },
      params);
}

// Not switches: only three kinds are packed, and -Wswitch-enum wants every kind listed.
std::size_t packed_size(OpKind decomposition, std::size_t m, std::size_t n) {
  const std::size_t k = std::min(m, n);
  if (decomposition == OpKind::eigen_solve) return m * m + m;
  if (decomposition == OpKind::qr) return m * k + k * n;
  if (decomposition == OpKind::svd) return m * k + k + k * n;
  return m * n;
}

std::size_t packed_factor_offset(OpKind decomposition, std::size_t which, std::size_t m, std::size_t n) {
  const std::size_t k = std::min(m, n);
  if (which == 0) return 0;
  if (decomposition == OpKind::eigen_solve) return m * m;
  if (decomposition == OpKind::qr) return m * k;
  if (decomposition == OpKind::svd) return which == 1 ? m * k : m * k + k;
  return 0;
}

// Truncated decompositions: the layouts above with k = packed_rank, then the kept rank and
// the discarded weight.
const TruncationParams* truncation_of(const OpParams& params) {
  const TruncationParams* t = nullptr;
  if (const auto* svd = std::get_if<SvdParams>(&params)) t = &svd->truncation;
  if (const auto* eigen = std::get_if<EigenSolveParams>(&params)) t = &eigen->truncation;
  return t && t->truncated ? t : nullptr;
}

std::size_t packed_rank(const OpParams& params, std::size_t m, std::size_t n) {
  const std::size_t k = std::holds_alternative<EigenSolveParams>(params) ? n : std::min(m, n);
  const TruncationParams* t = truncation_of(params);
  return t && t->max_rank != 0 ? std::min(k, t->max_rank) : k;
}

std::size_t packed_size(const OpParams& params, std::size_t m, std::size_t n) {
  const OpKind kind = op_kind_of_params(params);
  if (!truncation_of(params)) return packed_size(kind, m, n);
  const std::size_t k = packed_rank(params, m, n);
  return (kind == OpKind::eigen_solve ? m * k + k : m * k + k + k * n) + 2;
}

std::size_t packed_factor_offset(const OpParams& params, std::size_t which, std::size_t m, std::size_t n) {
  const OpKind kind = op_kind_of_params(params);
  if (!truncation_of(params)) return packed_factor_offset(kind, which, m, n);
  const std::size_t k = packed_rank(params, m, n);
  if (which == 0) return 0;
  return which == 1 ? m * k : m * k + k;
}

std::size_t packed_truncation_offset(const OpParams& params, std::size_t m, std::size_t n) {
  return packed_size(params, m, n) - 2;
}

std::size_t decomposition_rows(const OpParams& params) {
  if (const auto* p = std::get_if<SvdParams>(&params)) return p->rows;
  if (const auto* p = std::get_if<QrParams>(&params)) return p->rows;
  if (const auto* p = std::get_if<EigenSolveParams>(&params)) return p->rows;
  return 1;
}

MatrixExtents decomposition_matrix(const OpParams& params, const std::vector<std::size_t>& extents) {
  const std::size_t rows = decomposition_rows(params);
  MatrixExtents matrix{1, 1};
  for (std::size_t d = 0; d < extents.size(); ++d) (d < rows ? matrix.m : matrix.n) *= extents[d];
  return matrix;
}

std::size_t packed_factor_count(OpKind decomposition) {
  if (decomposition == OpKind::eigen_solve || decomposition == OpKind::qr) return 2;
  if (decomposition == OpKind::svd) return 3;
  return 0;
}

std::string_view packed_factor_name(OpKind decomposition, std::size_t which) {
  static constexpr std::string_view eigen[] = {"vectors", "values"};
  static constexpr std::string_view qr[] = {"Q", "R"};
  static constexpr std::string_view svd[] = {"U", "S", "Vt"};
  if (which >= packed_factor_count(decomposition)) return "";
  if (decomposition == OpKind::eigen_solve) return eigen[which];
  if (decomposition == OpKind::qr) return qr[which];
  return svd[which];
}

}  // namespace tenex
