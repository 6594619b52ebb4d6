// tenex/graph/functions.hpp — the element-wise functions, defined once.
//
// TENEX_FOR_EACH_FUNCTION(X) lists every function a fused program (FusedParams) can apply,
// one line each: its FusedOp, its name in plans, how many program values it reads (1: a;
// 2: a and b) and how many parameters it takes (x, y: the instruction's numbers), whether it
// is zero where its inputs are (the sparse-map rule), its one scalar definition in C++, its
// text in plans and its definition in CUDA C. From the table come the FusedOp enum, the
// names, the sparse rule, the CPU and distributed backends' scalar evaluation
// (Function<op>::apply) and the CUDA code generator's device functions, so the semantics,
// NaN and Inf included, are the same on every backend. NaN follows numpy's rules: it
// propagates through every function, max and min included (whichever side it is on, unlike
// std::max and fmax), and sign(NaN) is NaN.
//
// A new function is one line here (plus its tests, and a declaration in
// expression/elementwise.hpp when users call it by name):
//
//   X(erf, "erf", 1, 0, a_zero, std::erf(a), "erf({a})", "erf(a)")
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <string_view>

#include "tenex/scalar.hpp"

namespace tenex {

// The complex forms the table's scalar column uses (for a real T: conj(a) = a, real(a) = a,
// imag(a) = 0, arg(a) = 0 or pi, NaN for NaN), each returning T: a complex T keeps the result in
// its real part.
template <class T>
T conj_value(T a) {
  if constexpr (is_complex_v<T>) {
    return std::conj(a);
  } else {
    return a;
  }
}
template <class T>
T real_value(T a) {
  if constexpr (is_complex_v<T>) {
    return T(a.real());
  } else {
    return a;
  }
}
template <class T>
T imag_value([[maybe_unused]] T a) {
  if constexpr (is_complex_v<T>) {
    return T(a.imag());
  } else {
    return T(0);
  }
}
template <class T>
T arg_value(T a) {
  if constexpr (is_complex_v<T>) {
    return T(std::arg(a));
  } else {
    return a != a ? a : T(std::arg(a));
  }
}

// The columns:
//   op          the FusedOp enumerator
//   name        in plans and messages
//   values      program values read: 1 (a) or 2 (a, b)
//   parameters  numbers of the instruction used: 0, 1 (x) or 2 (x, y)
//   keeps_zero  whether the result is zero, given a_zero, b_zero (whether a and b are zero)
//               and x, y: f(0) = 0 is a_zero; false when f(0) may be non-zero
//   scalar      the definition in C++ of a, b (values) and x, y (parameters), all of type T
//   text        the function in plans: {a}, {b}, {x}, {y} stand for its operands
//   cuda        the definition in CUDA C of a, b, x, y of type T (float or double); the
//               code generator writes it as a __device__ function of the same four
// clang-format off
#define TENEX_FOR_EACH_FUNCTION(X)                                                                                     \
  X(add,        "add",        2, 0, a_zero && b_zero,            a + b, "({a} + {b})", "a + b")                        \
  X(subtract,   "subtract",   2, 0, a_zero && b_zero,            a - b, "({a} - {b})", "a - b")                        \
  X(multiply,   "multiply",   2, 0, a_zero || b_zero,            a * b, "{a}*{b}", "a * b")                            \
  X(divide,     "divide",     2, 0, a_zero,                      a / b, "{a}/{b}", "a / b")                            \
  X(maximum,    "max",        2, 0, a_zero && b_zero,            (a < b || b != b) ? b : a,                            \
                                                                 "max({a}, {b})", "(a < b || b != b) ? b : a")         \
  X(minimum,    "min",        2, 0, a_zero && b_zero,            (b < a || b != b) ? b : a,                            \
                                                                 "min({a}, {b})", "(b < a || b != b) ? b : a")         \
  X(negate,     "negate",     1, 0, a_zero,                      -a, "-{a}", "-a")                                     \
  X(exp,        "exp",        1, 0, false,                       std::exp(a), "exp({a})", "exp(a)")                    \
  X(log,        "log",        1, 0, false,                       std::log(a), "log({a})", "log(a)")                    \
  X(sqrt,       "sqrt",       1, 0, a_zero,                      std::sqrt(a), "sqrt({a})", "sqrt(a)")                 \
  X(abs,        "abs",        1, 0, a_zero,                      std::abs(a), "abs({a})", "fabs(a)")                   \
  X(square,     "square",     1, 0, a_zero,                      a * a, "square({a})", "a * a")                        \
  X(sin,        "sin",        1, 0, a_zero,                      std::sin(a), "sin({a})", "sin(a)")                    \
  X(cos,        "cos",        1, 0, false,                       std::cos(a), "cos({a})", "cos(a)")                    \
  X(tanh,       "tanh",       1, 0, a_zero,                      std::tanh(a), "tanh({a})", "tanh(a)")                 \
  X(sign,       "sign",       1, 0, a_zero,                      a != a ? a : T((T(0) < a) - (a < T(0))),              \
                                                                 "sign({a})", "a != a ? a : T((T(0) < a) - (a < T(0)))") \
  X(reciprocal, "reciprocal", 1, 0, false,                       T(1) / a, "reciprocal({a})", "T(1) / a")              \
  X(power,      "pow",        1, 1, a_zero && x > 0,             std::pow(a, x), "pow({a}, {x})", "pow(a, x)")         \
  X(clamp,      "clamp",      1, 2, a_zero && x <= 0 && y >= 0,  a < x ? x : (y < a ? y : a),                          \
                                                                 "clamp({a}, {x}, {y})", "a < x ? x : (y < a ? y : a)") \
  X(erf,        "erf",        1, 0, a_zero,                      std::erf(a), "erf({a})", "erf(a)")                    \
  X(conj,       "conj",       1, 0, a_zero,                      conj_value(a), "conj({a})", "a")                      \
  X(real_part,  "real",       1, 0, a_zero,                      real_value(a), "real({a})", "a")                      \
  X(imag_part,  "imag",       1, 0, true,                        imag_value(a), "imag({a})", "T(0)")                   \
  X(arg,        "arg",        1, 0, a_zero,                      arg_value(a), "arg({a})", "a < T(0) ? T(3.14159265358979323846) : (a != a ? a : T(0))")
// clang-format on

/// One instruction of a fused element-wise program (FusedParams): a load, a constant, a
/// function of the table, or a C++ callable. Values are numbered by instruction; an
/// instruction reads only values before it.
enum class FusedOp : unsigned char {
  load,      // operand `a`, read at the point of the iteration space (broadcast by label)
  constant,  // x
#define TENEX_FUSED_OP_ENUM(op, name, values, parameters, keeps_zero, scalar, text, cuda) op,
  TENEX_FOR_EACH_FUNCTION(TENEX_FUSED_OP_ENUM)
#undef TENEX_FUSED_OP_ENUM
      call  // functions[b](a): a C++ callable of tenex::map
};

/// Whether `op` is defined for complex numbers: not the functions that compare (max, min,
/// clamp, sign) and not erf.
constexpr bool defined_for_complex(FusedOp op) {
  return op != FusedOp::maximum && op != FusedOp::minimum && op != FusedOp::clamp && op != FusedOp::sign &&
         op != FusedOp::erf;
}

/// The columns of the table's line for `op`, as constants, and its scalar definition:
/// Function<FusedOp::maximum>::apply(a, b, x, y). Not defined for load, constant and call.
template <FusedOp op>
struct Function;  // defined for the functions of TENEX_FOR_EACH_FUNCTION only
#define TENEX_FUNCTION_STRUCT(op_, name_, values_, parameters_, keeps_zero_, scalar_, text_, cuda_)          \
  template <>                                                                                                \
  struct Function<FusedOp::op_> {                                                                            \
    static constexpr std::string_view name = name_;                                                          \
    static constexpr int values = values_;                                                                   \
    static constexpr int parameters = parameters_;                                                           \
    static constexpr std::string_view text = text_;                                                          \
    static constexpr std::string_view cuda = cuda_;                                                          \
    static constexpr bool keeps_zero([[maybe_unused]] bool a_zero, [[maybe_unused]] bool b_zero,             \
                                     [[maybe_unused]] double x, [[maybe_unused]] double y) {                 \
      return keeps_zero_;                                                                                    \
    }                                                                                                        \
    template <class T>                                                                                       \
    static T apply([[maybe_unused]] T a, [[maybe_unused]] T b, [[maybe_unused]] T x, [[maybe_unused]] T y) { \
      if constexpr (is_complex_v<T> && !defined_for_complex(FusedOp::op_)) {                                 \
        return T(std::numeric_limits<real_type_t<T>>::quiet_NaN(), 0);                                       \
      } else {                                                                                               \
        return scalar_;                                                                                      \
      }                                                                                                      \
    }                                                                                                        \
  };
TENEX_FOR_EACH_FUNCTION(TENEX_FUNCTION_STRUCT)
#undef TENEX_FUNCTION_STRUCT

/// The columns of a line of the table as data (all but keeps_zero and scalar, which are code).
struct FunctionInfo {
  std::string_view id;  // the FusedOp enumerator: "maximum"
  std::string_view name;
  int values = 0;
  int parameters = 0;
  std::string_view text;
  std::string_view cuda;
};

/// The line of function `op`; load, constant and call are not functions: empty (id "").
constexpr FunctionInfo function_info(FusedOp op) {
  switch (op) {
#define TENEX_FUNCTION_INFO(op_, name, values, parameters, keeps_zero, scalar, text, cuda) \
  case FusedOp::op_: return {#op_, name, values, parameters, text, cuda};
    TENEX_FOR_EACH_FUNCTION(TENEX_FUNCTION_INFO)
#undef TENEX_FUNCTION_INFO
    case FusedOp::load:
    case FusedOp::constant:
    case FusedOp::call: break;
  }
  return {};
}

/// Whether `op` is a function of the table (not load, constant or call).
constexpr bool is_function(FusedOp op) { return !function_info(op).id.empty(); }

/// The scalar definition of function `op` on a, b (values) and x, y (parameters), chosen at
/// run time: what a backend that evaluates one element at a time calls. A loop over many
/// elements calls Function<op>::apply for a fixed op instead, which inlines. Not a function
/// of the table (load, constant, call): NaN.
template <class T>
T apply_function(FusedOp op, T a, T b, T x, T y) {
  switch (op) {
#define TENEX_APPLY_FUNCTION(op_, name, values, parameters, keeps_zero, scalar, text, cuda) \
  case FusedOp::op_: return Function<FusedOp::op_>::apply(a, b, x, y);
    TENEX_FOR_EACH_FUNCTION(TENEX_APPLY_FUNCTION)
#undef TENEX_APPLY_FUNCTION
    case FusedOp::load:
    case FusedOp::constant:
    case FusedOp::call: break;
  }
  if constexpr (is_complex_v<T>) {
    return T(std::numeric_limits<real_type_t<T>>::quiet_NaN(), 0);
  } else {
    return std::numeric_limits<T>::quiet_NaN();
  }
}

}  // namespace tenex
