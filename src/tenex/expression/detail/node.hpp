// The immutable node behind an expression handle. Handles share nodes, so a
// named intermediate used twice is one node (and one graph node).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tenex/graph/op_kind.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail {

#define TENEX_FOR_EACH_EXPR_KIND(X) \
  X(indexed)                        \
  X(addition)                       \
  X(subtraction)                    \
  X(multiplication)                 \
  X(division)                       \
  X(scale)                          \
  X(permutation)                    \
  X(decomposition)                  \
  X(factor)                         \
  X(slice)                          \
  X(chip)                           \
  X(pow)

enum class ExprKind {
#define TENEX_EXPR_KIND_ENUM(name) name,
  TENEX_FOR_EACH_EXPR_KIND(TENEX_EXPR_KIND_ENUM)
#undef TENEX_EXPR_KIND_ENUM
};

struct ExprNode {
  ExprKind kind = ExprKind::indexed;
  DType dtype = DType::f64;
  std::vector<std::string> labels;    // free labels: unique, in natural order
  std::vector<std::size_t> extents;   // one per label
  std::vector<std::shared_ptr<const ExprNode>> children;

  // indexed
  std::vector<std::string> written;   // labels as written (may repeat: a diagonal)
  std::shared_ptr<void> storage;      // the value read (tensors); null for shapes
  std::string unreadable;             // why this operand cannot be read, if it cannot

  // parameters
  double factor = 1.0;                // scale
  OpKind decomposition = OpKind::cholesky;  // decomposition: cholesky, eigen_solve, qr, svd
  std::size_t which = 0;              // factor: index of the factor of the decomposition
  std::vector<std::size_t> lo, hi;    // slice
  std::size_t mode = 0, index = 0;    // chip
  unsigned power = 0;                 // pow

  std::string text() const;           // ("i,j") {3, 4}
};

using NodePtr = std::shared_ptr<const ExprNode>;

}  // namespace tenex::detail
