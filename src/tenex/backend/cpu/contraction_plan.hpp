// Contraction plans: which operands to lay out afresh, which groups of modes to fuse into
// the GEMM's m, n and k, and how c is written, every candidate costed by a small model and
// the cheapest chosen (or the plain loops), or the few best timed (contract.cpp).
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {

enum class Output : unsigned char { direct, buffered, tiled };

struct Plan {
  bool naive = true;  // plain loops instead of GEMM
  // The narrow kernel instead of GEMM (narrow_kernel.hpp): the other fields stay as they are.
  bool narrow = false;
  // The GETT kernel instead of GEMM (gett_kernel.hpp): the other fields stay as they are.
  bool gett = false;
  bool permute_a = false, permute_b = false;
  Output output = Output::direct;
  // Tiled plans: the permuted operands are packed per task, only the part the tile reads
  // (laid out as fresh_layout with the tile modes skipped), so that the copy stays in cache.
  bool tile_pack = false;
  // Buffered and tiled plans: the buffer's inner group is the other one (see fresh_layout).
  bool flip_c = false;
  // Permuted operands: their inner group is the other one (see fresh_layout), which can
  // give the GEMM an untransposed first matrix.
  bool flip_a = false, flip_b = false;
  std::vector<int> gm, gn, gk;  // fused groups, slowest mode first
  std::vector<int> tiles;       // tiled: modes of c the tasks loop over
  // Direct and buffered plans that permute one operand: it is packed this many values of
  // gk's slowest mode at a time into a buffer that stays in cache, and the GEMMs accumulate
  // chunk by chunk (0: permuted whole).
  std::size_t k_chunk = 0;
  double seconds = std::numeric_limits<double>::infinity();
};

// Every candidate, the plain loops last (see contract_with_plan). The last problem's list is
// kept, as a test runs each of its plans in turn.
const std::vector<Plan>& all_plans(const Problem& p, double flops);

// The cheapest plan first; where it writes c through a buffer or tiles (and is worth
// timing), its twin with the buffer in the other order next (or, where it has none, the
// cheapest plan with the same groups and the other order), whatever the model predicts
// for it; the narrow and GETT kernels where they run (the GETT kernel first instead where the
// model ranks it, with probed rates, and predicts it cheapest: see ranked_gett_plan);
// where the cheapest makes more GEMM calls than another within kCandidateSpread,
// the cheapest of those with the fewest calls; the cheapest of each way to write c (direct,
// or buffered or tiled in either order) within kOutputSpread that no plan so far has; then,
// up to `count` in all, others within kCandidateSpread that differ from every plan before
// them in what they do to memory (which operands they permute, how c is written and in which
// order, whether tiles pack): the plans worth timing when the model's ranking is in doubt
// (see contract.cpp). Then, where the model predicts the cheapest to take so little that
// more of them together run within `search_seconds`, the cheapest others within
// kOutputSpread not yet among them, up to kPlansTriedSmall in all: on problems of a
// millisecond the model's error is wider than its spread (a 6-index contraction of a
// millisecond: six candidates ran 1.15-1.3 ms; a plan predicted 1.1x the cheapest, packing a
// chunk by chunk, ran 0.89 ms). Only the cheapest when the plain loops win.
std::vector<Plan> candidate_plans(const Problem& p, double flops, std::size_t count, double search_seconds = 0);

// The search's limits (tuning.hpp): candidates timed, at most for small problems, and the
// model's spreads within which a plan is worth a try.
using tuning::kCandidateSpread;
using tuning::kOutputSpread;
using tuning::kPlansTried;
using tuning::kPlansTriedSmall;

// One line: what the plan does (operands permuted or packed per tile, how c is written, the
// fused groups as mode:extent) and the model's predicted time.
std::string describe(const Problem& p, const Plan& plan);

}  // namespace tenex::detail::cpu::contraction
