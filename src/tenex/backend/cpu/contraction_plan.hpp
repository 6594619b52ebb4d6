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

// The kinds, each in its own file, each answering whether it applies to a problem and what
// the model predicts it costs (its plan, or none), how it reads in plans, and how it runs:
//
//   kind            plan and cost          describe_kernel     runs
//   plain loops     kind_naive.cpp         kind_naive.cpp      run_naive (kind_naive.cpp)
//   narrow kernel   kind_narrow.cpp        kind_narrow.cpp     run_narrow (narrow_kernel.cpp)
//   GETT kernel     kind_gett.cpp          kind_gett.cpp       run_gett (gett_kernel.cpp)
//   GEMM plans      contraction_plan.cpp   contraction_plan.cpp  run_gemm (plan_execution.cpp)
//
// kind_plans (plan_kinds.cpp) asks each kind once per problem; the search picks among what it
// returns (plan_search.cpp) and run_plan runs the kind chosen (plan_execution.cpp).

// The model's rates, flops per second of one core, read once per problem (plan_search.hpp's
// gemm_rate and gett_rate; model_rates is defined beside them): the kinds' costs all use the same.
struct ModelRates {
  double gemm = 0, gett = 0;
  bool ranked = false;  // both probed on this machine (or loaded): the model may rank GETT
};
ModelRates model_rates(std::size_t element_size);

Plan naive_plan(const Problem& p);
std::optional<Plan> narrow_plan(const Problem& p, const ModelRates& rates);
std::optional<Plan> gett_plan(const Problem& p, const ModelRates& rates);
// Every GEMM plan that can run (finite cost), passed to `visit`: which of a and b to permute,
// how c is written, over which tile modes, and which groups to fuse. Tiled plans of small
// problems and chunked plans of small operands are left out unless `every` (the list of all
// plans, all_plans).
void for_each_gemm_plan(const Problem& p, double flops, bool every, const ModelRates& rates,
                        const std::function<void(const Plan&)>& visit);

std::string describe_kernel(const Problem& p, const NaiveLoops& kernel);
std::string describe_kernel(const Problem& p, const Narrow& kernel);
std::string describe_kernel(const Problem& p, const Gett& kernel);
std::string describe_kernel(const Problem& p, const Gemm& kernel);

// What every kind offers for one problem, each asked once:
//   - the plain loops;
//   - the narrow kernel's plan, where it can run: the model's guess at it is rough
//     (kNarrowEfficiency), so it never ranks the plans and is only timed;
//   - the GETT kernel's, where it can run; it ranks against the GEMM plans (gett_ranked) only
//     where both rates were probed on this machine (or loaded), so that the model compares the
//     two rates it gets (where the BLAS is slow, the kernel can be several times faster; where
//     it is fast, slower); with the constants it is only timed, as the narrow kernel always is;
//   - every GEMM plan (for_each_gemm_plan, `every` as there), in the order it gives them;
//   - the cheapest by the model: the plain loops, a GEMM plan, or the GETT kernel where it ranks.
struct KindPlans {
  Plan naive;
  std::optional<Plan> narrow, gett;
  bool gett_ranked = false;
  std::vector<Plan> gemm;
  Plan cheapest;
};
KindPlans kind_plans(const Problem& p, double flops, bool every);

// Every candidate, the plain loops last (see contract_with_plan): kind_plans with `every`.
// The last problem's list is kept, as a test runs each of its plans in turn.
const std::vector<Plan>& all_plans(const Problem& p, double flops);
// The cheapest plan by the model (KindPlans::cheapest).
Plan cheapest_plan(const Problem& p, double flops);

// One line: what the plan does (operands permuted or packed per tile, how c is written, the
// fused groups as mode:extent) and the model's predicted time.
std::string describe(const Problem& p, const Plan& plan);

}  // namespace tenex::detail::cpu::contraction
