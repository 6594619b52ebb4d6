// DistMatrix: a tensor's 2-D block-cyclic matricization on the grid of a DistContext, and
// the collective operations on it (remaps between matricizations, gathers, p?gemm).
//
// A tensor of extents (e_0, ..., e_{r-1}) with `split` row modes is the matrix whose row
// index is (i_0, ..., i_{split-1}) flattened row-major and whose column index is the rest
// flattened likewise. Each rank keeps its blocks column-major (ScaLAPACK's local layout).
// Every value the backend holds is in the canonical layout of its extents
// (split = (rank + 1) / 2), so that values of equal extents match element for element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tenex/backend/dist/dist_context.hpp"

namespace tenex::dist::detail {

/// The canonical number of row modes of a tensor of `rank` modes.
inline std::size_t canonical_split(std::size_t rank) { return (rank + 1) / 2; }

template <class T>
struct DistMatrix {
  std::vector<std::size_t> extents;
  std::size_t split = 0;
  int rows = 1, cols = 1;              // global matrix
  int local_rows = 0, local_cols = 0;  // this rank's part
  int desc[9] = {};
  std::vector<T> local;  // column-major, leading dimension max(1, local_rows)

  int lld() const { return local_rows > 0 ? local_rows : 1; }
  /// Global (row, col) of local (r, c).
  std::int64_t global_row(const DistContext& ctx, int r) const;
  std::int64_t global_col(const DistContext& ctx, int c) const;
  /// The tensor multi-index of global (row, col).
  void tensor_index(std::int64_t row, std::int64_t col, std::vector<std::size_t>& index) const;
};

/// A matrix of `extents` in the layout with `split` row modes, zero-filled (local work: a
/// failure to allocate throws on this rank only; callers agree).
template <class T>
std::shared_ptr<DistMatrix<T>> make_matrix(const DistContext& ctx, std::vector<std::size_t> extents, std::size_t split);
/// The same layout with no local elements (`local` empty): for walking a layout's elements
/// without storing them.
template <class T>
std::shared_ptr<DistMatrix<T>> make_layout(const DistContext& ctx, std::vector<std::size_t> extents, std::size_t split);
template <class T>
std::shared_ptr<DistMatrix<T>> make_canonical(const DistContext& ctx, std::vector<std::size_t> extents) {
  const std::size_t split = canonical_split(extents.size());
  return make_matrix<T>(ctx, std::move(extents), split);
}

/// How a remap maps a source element to destination elements.
///   dst mode k takes source mode from[k] (>= 0), plus offset[k]; or is broadcast (from[k] == -1:
///   every value of the mode); source elements outside [lo, hi) of a mode are skipped; the
///   source modes in each group of `equal` must agree (diagonals); source modes no dst mode
///   reads are reduced by `reduce`.
enum class Accumulate { sum, max, min };
struct RemapRule {
  std::vector<int> from;
  std::vector<std::ptrdiff_t> offset;   // by dst mode (empty: none)
  std::vector<std::size_t> lo, hi;      // by source mode (empty: whole)
  std::vector<std::vector<int>> equal;  // groups of source modes
  Accumulate reduce = Accumulate::sum;
};

/// The rule that maps a tensor labelled `src` to labels `dst` (dst labels missing from src are
/// broadcast, src labels missing from dst are reduced, repeated src labels take diagonals).
RemapRule rule_by_labels(const std::vector<std::string>& src, const std::vector<std::string>& dst);

/// Collective: `dst` (as make_matrix made it, zero-filled, any layout) receives the elements of
/// `src` by `rule`. This rank's own elements are combined in place; the others travel as
/// (offset, value) pairs in MPI_Alltoallv rounds of at most 8 MiB per rank.
template <class T>
void remap(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule, DistMatrix<T>& dst);

/// Collective: the whole tensor, row-major, on `root` (root < 0: on every rank); an empty
/// vector on the other ranks.
template <class T>
std::vector<T> gather(const DistContext& ctx, const DistMatrix<T>& m, int root);

/// Local: this rank's blocks of a tensor every rank holds in full (row-major).
template <class T>
void scatter_local(const DistContext& ctx, const T* full, DistMatrix<T>& m);

/// Collective: c = alpha * op(a) op(b) + beta * c with p?gemm (whole matrices); trans 'N', 'T', or
/// 'C' (complex: conjugate transpose).
template <class T>
void gemm(const DistContext& ctx, char trans_a, char trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b,
          T beta, DistMatrix<T>& c);

/// Collective: copies the rows x cols block at (src_row, src_col) of `src` to (dst_row,
/// dst_col) of `dst` (0-based) with p?gemr2d.
template <class T>
void copy_block(const DistContext& ctx, int rows, int cols, const DistMatrix<T>& src, int src_row, int src_col,
                DistMatrix<T>& dst, int dst_row, int dst_col);

/// What a handle of the backend holds: the value of a node (decompositions: one part per
/// factor, in packed_factor_offset's order).
template <class T>
struct DistValue {
  std::vector<std::shared_ptr<DistMatrix<T>>> parts;
};

/// Checks that a size fits ScaLAPACK's int (throws tenex::Error naming `what`).
int checked_int(std::size_t n, const char* what);

}  // namespace tenex::dist::detail
