// How a contraction runs as one cuBLAS call (gemm, or strided batched gemm for the labels
// all three tensors share), planned like the CPU's: transposes and leading dimensions first,
// a permutation only for an operand whose labels no transpose can read in place.
//
// Labels: batch (in a, b and c), m (a and c), n (b and c), k (a and b). An operand is read in
// place when its labels are the batch labels followed by its two groups in either order, each
// group in the order the plan chose; otherwise it is permuted to that canonical order first
// (a: batch m k, b: batch k n), and c is written to a temporary (batch m n) and then permuted
// into the node's labels. Operands reach the planner without repeated labels and without
// labels that only they have (the backend sums those first).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tenex::detail::cuda {

struct GemmOperand {
  std::vector<std::string> labels;  // the operand's labels as it is read by the gemm
  bool permute = false;             // labels differs from the operand's own: permute first
  bool transpose = false;           // cuBLAS op of the operand (column-major view)
  long long ld = 1;                 // its leading dimension
  long long batch_stride = 0;       // elements between batch matrices
};

struct GemmPlan {
  GemmOperand a, b, c;  // c.permute: written as c.labels, then permuted to the node's labels
  long long m = 1, n = 1, k = 1, batch = 1;
  /// cuBLAS sees row-major data as column-major: without swap, c (batch m n) is the column-major
  /// n x m matrix c^T = b^T a^T (operands b, a); with swap, c (batch n m) is the column-major
  /// m x n matrix c = a b (operands a, b). rows x cols: the column-major result.
  bool swap = false;
  long long rows = 1, cols = 1;
  std::vector<std::string> batch_labels, m_labels, n_labels, k_labels;
};

/// Plans c(labels_c) = a(labels_a) * b(labels_b); extents by label come from `extent_of`
/// (a label -> extent function given as parallel vectors `labels`, `extents`).
GemmPlan plan_gemm(const std::vector<std::string>& labels_a, const std::vector<std::string>& labels_b,
                   const std::vector<std::string>& labels_c, const std::vector<std::string>& labels,
                   const std::vector<std::size_t>& extents);

/// True when a batched product is so small per batch element (m n k of at most 64, batch
/// over one: a Hadamard product has m = n = k = 1) that the strided kernel, which reads the
/// operands in place, runs it instead of cuBLAS.
inline bool tiny_batched_product(long long m, long long n, long long k, long long batch) {
  return batch > 1 && k > 0 && m * n * k <= 64;
}

/// "gemm(N,T) m=.. n=.. k=.. lda=.. ... [batch=..] [permute a] ..." for tests and explain().
std::string describe(const GemmPlan& plan);

}  // namespace tenex::detail::cuda
