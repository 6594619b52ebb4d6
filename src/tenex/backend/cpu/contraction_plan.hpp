// Contraction plans: which operands to lay out afresh, which groups of modes to fuse into
// the GEMM's m, n and k, and how c is written, every candidate costed by a small model and
// the cheapest chosen (or the plain loops), or the few best timed (plan_search.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

enum class Output : unsigned char { direct, buffered, tiled };

// A plan's kernel, one of four kinds (Kernel); only a GEMM plan has a layout to choose.

// The plain loops (run_naive): tiny problems, Hadamard products and scalars.
struct NaiveLoops {
  bool operator==(const NaiveLoops&) const = default;
};

// The narrow kernel (narrow_kernel.hpp): it finds the small operand and packs it itself.
struct Narrow {
  bool operator==(const Narrow&) const = default;
};

// The GETT kernel (gett_kernel.hpp): it picks its panel operand and how it writes c itself.
struct Gett {
  bool operator==(const Gett&) const = default;
};

// GEMMs over fused groups of modes, with the operands read as they are or laid out afresh,
// and c written in place, through a buffer, or one tile at a time (plan_execution.hpp).
struct Gemm {
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
  bool operator==(const Gemm&) const = default;
};

using Kernel = std::variant<NaiveLoops, Narrow, Gett, Gemm>;

struct Plan {
  Kernel kernel;                                             // the plain loops unless set
  double seconds = std::numeric_limits<double>::infinity();  // the model's prediction

  bool naive() const { return std::holds_alternative<NaiveLoops>(kernel); }
  // The GEMM layout, or null for the other kinds.
  const Gemm* gemm() const { return std::get_if<Gemm>(&kernel); }
};

// What a plan does to memory, as a GEMM layout: a GEMM plan's own; the narrow and GETT kernels
// read a and b where they lie and write c in place, as a GEMM plan that permutes nothing and
// writes c directly does (with no group fused). The search compares plans of every kind by it
// (plan_search::candidate_plans). Not for the plain loops.
const Gemm& memory_layout(const Plan& plan);

// Every candidate, the plain loops last (see contract_with_plan). The last problem's list is
// kept, as a test runs each of its plans in turn.
const std::vector<Plan>& all_plans(const Problem& p, double flops);

// The plans the search (plan_search.hpp) picks its candidates from, each with the model's time:
//   - the plain loops;
//   - the cheapest by the model: the plain loops, a GEMM plan, or the GETT kernel where the
//     model ranks it (ranked_gett_plan);
//   - the narrow kernel's, where it can run: the model's guess at it is rough
//     (kNarrowEfficiency), so it never ranks the plans and is only timed;
//   - the GETT kernel's, where it can run; ranked_gett_plan: the same, only where both rates
//     were probed on this machine (or loaded), so that the model compares the two rates it gets
//     (where the BLAS is slow, the kernel can be several times faster; where it is fast,
//     slower); with the constants it is only timed, as the narrow kernel always is;
//   - every GEMM plan that can run (finite cost), passed to `visit`: which of a and b to
//     permute, how c is written, over which tile modes, and which groups to fuse. Tiled plans
//     are left out of small problems unless `all_tiles`.
Plan naive_plan(const Problem& p);
Plan cheapest_plan(const Problem& p, double flops);
std::optional<Plan> narrow_plan(const Problem& p);
std::optional<Plan> gett_plan(const Problem& p);
std::optional<Plan> ranked_gett_plan(const Problem& p);
void for_each_gemm_plan(const Problem& p, double flops, bool all_tiles, const std::function<void(const Plan&)>& visit);

// One line: what the plan does (operands permuted or packed per tile, how c is written, the
// fused groups as mode:extent) and the model's predicted time.
std::string describe(const Problem& p, const Plan& plan);

}  // namespace tenex::detail::cpu::contraction
