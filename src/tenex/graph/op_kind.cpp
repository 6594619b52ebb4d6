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

}  // namespace

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
