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

// The DOT text of each parameter struct: one overload per struct of the op table, so a
// new kind without one is a compile error in describe_params.
std::string describe(const InputParams&) { return {}; }
std::string describe(const OutputParams&) { return {}; }
std::string describe(const ReduceParams&) { return {}; }
std::string describe(const ContractParams& p) {
  return (p.alpha != 1.0 ? " alpha=" + number(p.alpha) : "") + (p.beta != 0.0 ? " beta=" + number(p.beta) : "");
}
std::string describe(const ElementwiseParams& p) {
  return p.alpha != 1.0 || p.alpha_b != 1.0 ? " alpha=" + number(p.alpha) + "," + number(p.alpha_b) : "";
}
std::string describe(const AddParams& p) { return describe(static_cast<const ElementwiseParams&>(p)); }
std::string describe(const SubtractParams& p) { return describe(static_cast<const ElementwiseParams&>(p)); }
std::string describe(const DivideParams& p) { return describe(static_cast<const ElementwiseParams&>(p)); }
std::string describe(const ScaleParams& p) { return p.alpha != 1.0 ? " alpha=" + number(p.alpha) : ""; }
std::string describe(const CholeskyParams& p) { return p.upper ? " upper" : ""; }
std::string describe(const EigenSolveParams&) { return {}; }
std::string describe(const QrParams&) { return {}; }
std::string describe(const SvdParams&) { return {}; }
std::string describe(const FactorParams& p) { return " " + std::to_string(p.which); }
std::string describe(const SliceParams& p) {
  return " lo=" + detail::format_extents(p.lo) + " hi=" + detail::format_extents(p.hi);
}
std::string describe(const ChipParams& p) {
  return " mode=" + std::to_string(p.mode) + " index=" + std::to_string(p.index);
}
std::string describe(const PowParams& p) { return " n=" + std::to_string(p.power); }
std::string describe(const MaskParams& p) {
  std::string text;
  for (const SparseMapUse& use : p.maps) {
    text += " " + detail::join_labels(use.source) + "->" + detail::join_labels(use.target);
  }
  return text;
}
// Matrix functions.
std::string describe(const InverseParams&) { return {}; }
std::string describe(const SolveParams& p) { return " mode=" + std::to_string(p.mode); }
std::string describe(const SpdPowParams& p) { return " p=" + number(p.power); }

std::string describe(const FusedParams& p) {
  std::string text = " " + describe_program(p);
  if (p.reduce == ReduceOp::max) text += " reduce=max";
  if (p.reduce == ReduceOp::min) text += " reduce=min";
  return text;
}

}  // namespace

std::string_view fused_op_name(FusedOp op) {
  switch (op) {
    case FusedOp::load: return "load";
    case FusedOp::constant: return "constant";
    case FusedOp::add: return "add";
    case FusedOp::subtract: return "subtract";
    case FusedOp::multiply: return "multiply";
    case FusedOp::divide: return "divide";
    case FusedOp::maximum: return "max";
    case FusedOp::minimum: return "min";
    case FusedOp::negate: return "negate";
    case FusedOp::exp: return "exp";
    case FusedOp::log: return "log";
    case FusedOp::sqrt: return "sqrt";
    case FusedOp::abs: return "abs";
    case FusedOp::square: return "square";
    case FusedOp::sin: return "sin";
    case FusedOp::cos: return "cos";
    case FusedOp::tanh: return "tanh";
    case FusedOp::sign: return "sign";
    case FusedOp::reciprocal: return "reciprocal";
    case FusedOp::power: return "pow";
    case FusedOp::clamp: return "clamp";
    case FusedOp::call: return "call";
  }
  return "unknown";
}

int fused_op_values(FusedOp op) {
  switch (op) {
    case FusedOp::load:
    case FusedOp::constant: return 0;
    case FusedOp::add:
    case FusedOp::subtract:
    case FusedOp::multiply:
    case FusedOp::divide:
    case FusedOp::maximum:
    case FusedOp::minimum: return 2;
    case FusedOp::negate:
    case FusedOp::exp:
    case FusedOp::log:
    case FusedOp::sqrt:
    case FusedOp::abs:
    case FusedOp::square:
    case FusedOp::sin:
    case FusedOp::cos:
    case FusedOp::tanh:
    case FusedOp::sign:
    case FusedOp::reciprocal:
    case FusedOp::power:
    case FusedOp::clamp:
    case FusedOp::call: return 1;
  }
  return 0;
}

bool fused_op_keeps_zero(const FusedInstr& in, bool a_zero, bool b_zero) {
  switch (in.op) {
    case FusedOp::load: return false;
    case FusedOp::constant: return in.x == 0.0;
    case FusedOp::add:
    case FusedOp::subtract:
    case FusedOp::maximum:
    case FusedOp::minimum: return a_zero && b_zero;
    case FusedOp::multiply: return a_zero || b_zero;
    case FusedOp::divide:
    case FusedOp::negate:
    case FusedOp::sqrt:
    case FusedOp::abs:
    case FusedOp::square:
    case FusedOp::sin:
    case FusedOp::tanh:
    case FusedOp::sign: return a_zero;
    case FusedOp::power: return a_zero && in.x > 0.0;
    case FusedOp::clamp: return a_zero && in.x <= 0.0 && in.y >= 0.0;
    case FusedOp::exp:
    case FusedOp::log:
    case FusedOp::cos:
    case FusedOp::reciprocal:
    case FusedOp::call: return false;  // non-zero at zero, or unknown
  }
  return false;
}

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
    switch (in.op) {
      case FusedOp::load: t = "x" + std::to_string(in.a); break;
      case FusedOp::constant: t = number(in.x); break;
      case FusedOp::add: t = "(" + ref(in.a) + " + " + ref(in.b) + ")"; break;
      case FusedOp::subtract: t = "(" + ref(in.a) + " - " + ref(in.b) + ")"; break;
      case FusedOp::multiply: t = ref(in.a) + "*" + ref(in.b); break;
      case FusedOp::divide: t = ref(in.a) + "/" + ref(in.b); break;
      case FusedOp::maximum:
      case FusedOp::minimum: t = std::string(fused_op_name(in.op)) + "(" + ref(in.a) + ", " + ref(in.b) + ")"; break;
      case FusedOp::negate: t = "-" + ref(in.a); break;
      case FusedOp::power: t = "pow(" + ref(in.a) + ", " + number(in.x) + ")"; break;
      case FusedOp::clamp: t = "clamp(" + ref(in.a) + ", " + number(in.x) + ", " + number(in.y) + ")"; break;
      case FusedOp::call:
        t = (in.b < p.functions.size() && p.functions[in.b] ? p.functions[in.b]->name : std::string("f")) + "(" +
            ref(in.a) + ")";
        break;
      case FusedOp::exp:
      case FusedOp::log:
      case FusedOp::sqrt:
      case FusedOp::abs:
      case FusedOp::square:
      case FusedOp::sin:
      case FusedOp::cos:
      case FusedOp::tanh:
      case FusedOp::sign:
      case FusedOp::reciprocal: t = std::string(fused_op_name(in.op)) + "(" + ref(in.a) + ")"; break;
    }
    if (uses[i] > 1 && i + 1 < n && in.op != FusedOp::load && in.op != FusedOp::constant) {
      names += "t" + std::to_string(i) + "=" + t + "; ";
      t = "t" + std::to_string(i);
    }
    text[i] = std::move(t);
  }
  return n ? names + text[n - 1] : std::string("(empty program)");
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
