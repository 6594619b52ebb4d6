// tenex/truncation.hpp — how many singular values or eigenpairs a truncated decomposition
// keeps, and what the last one kept (docs/linear-algebra.md, "Truncated decompositions").
//
//   auto [u, s, vt] = tenex::svd(a("i,j"), tenex::Truncation{.max_rank = 64, .cutoff = 1e-10});
//   U("i,k") = u;  S("k") = s;  Vt("k,j") = vt;   // extent of k: the kept rank
//   ...                                           // once the set has run:
//   tenex::TruncationResult r = tenex::last_truncation();   // r.rank, r.discarded_weight
#pragma once

#include <cstddef>

#include "tenex/export.hpp"

namespace tenex {

/// What a truncated decomposition keeps (ITensor's definition). Of the values sorted by
/// magnitude, the smallest whose squares sum to at most `cutoff` times the sum of all squares
/// are dropped, then at most `max_rank` are kept; at least one value is always kept.
/// `max_rank == 0` caps nothing, `cutoff == 0` drops nothing by weight. A cutoff that is
/// negative, NaN or above 1 is a tenex::Error where the decomposition is written.
///
///   tenex::Truncation t{.max_rank = 64, .cutoff = 1e-10};
///   auto [u, s, vt] = tenex::svd(a("i,j"), t);
struct Truncation {
  std::size_t max_rank = 0;  ///< at most this many values kept; 0: no cap
  double cutoff = 0.0;       ///< drop the smallest values whose squares sum to at most cutoff * sum of squares
};

/// What the last truncated decomposition run on a thread kept.
///
///   auto [r, w] = tenex::last_truncation();   // kept rank, discarded weight
struct TruncationResult {
  std::size_t rank = 0;           ///< values kept: the extent of the truncated mode
  double discarded_weight = 0.0;  ///< sum of the dropped squares over the sum of all squares (0 for a zero matrix)
};

/// The result of the last truncated decomposition (svd or eigen_solve with a Truncation) that
/// ran on this thread, i.e. in a set this thread evaluated; {0, 0} before any has run. A set
/// with several truncated decompositions leaves the one that ran last. Like explain(), it is
/// kept per thread: read it on the thread that evaluated the set (the one that read a result).
///
///   S("k") = std::get<1>(tenex::svd(a("i,j"), {.max_rank = 8}));
///   S.wait();
///   std::size_t kept = tenex::last_truncation().rank;   // == S.shape().extent(0)
TENEX_API TruncationResult last_truncation();

}  // namespace tenex
