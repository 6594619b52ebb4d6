// tenex/graph/op_kind.hpp — the closed set of operations an OpGraph node can be.
//
// TENEX_FOR_EACH_OP_KIND(X) lists every kind once; the enum, the names, and the
// backends' visitor methods are generated from it, so a new kind is a compile
// error wherever it is not handled.
#pragma once

#include <string_view>

#include "tenex/export.hpp"

//  X(name, arity)   arity -1: variadic
#define TENEX_FOR_EACH_OP_KIND(X)                                                       \
  X(input, -1)          /* a tensor's value; operand: the output that writes it, if any */ \
  X(output, 1)          /* writes its operand into an assignment target, permuting      */ \
  X(reduce, 1)          /* diagonal / sum over modes / permutation of one operand       */ \
  X(contract, 2)        /* alpha * sum a*b over modes the result lacks (GEMM)           */ \
  X(add, 2)             /* element-wise, broadcasting by label                          */ \
  X(subtract, 2)                                                                          \
  X(divide, 2)                                                                            \
  X(scale, 1)           /* alpha * operand                                              */ \
  X(cholesky, 1)        /* lower factor L of a = L L^T                                  */ \
  X(eigen_solve, -1)    /* packed eigenvectors and eigenvalues of a (or a, b)           */ \
  X(qr, 1)              /* packed reduced Q and R                                       */ \
  X(svd, 1)             /* packed thin U, S, Vt                                         */ \
  X(factor, 1)          /* one factor of a packed decomposition                         */ \
  X(slice, 1)           /* half-open block [lo, hi)                                     */ \
  X(chip, 1)            /* fixes one mode at an index, dropping it                      */ \
  X(pow, 1)             /* matrix power                                                 */

namespace tenex {

enum class OpKind {
#define TENEX_OP_KIND_ENUM(name, arity) name,
  TENEX_FOR_EACH_OP_KIND(TENEX_OP_KIND_ENUM)
#undef TENEX_OP_KIND_ENUM
};

/// "contract", "cholesky", ...
TENEX_API std::string_view op_kind_name(OpKind kind);
/// Number of operands the kind takes, -1 when it varies.
TENEX_API int op_kind_arity(OpKind kind);

}  // namespace tenex
