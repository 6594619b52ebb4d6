// The narrow kernel, one kind of contraction plan (contraction_plan.hpp): it applies where one
// operand is small enough to pack whole (narrow_small_operand, narrow_kernel.hpp); the model
// prices its arithmetic at kNarrowEfficiency of the GETT rate on the values the panel holds
// (padded ones too), or the large operand read from memory where that takes longer, and the
// panel packed; run_narrow (narrow_kernel.cpp) runs it. The guess is rough, so the search
// only times it, never ranks by it.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/narrow_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {

std::optional<Plan> narrow_plan(const Problem& p, const ModelRates& rates) {
  const int small = narrow_small_operand(p);
  if (small < 0) return std::nullopt;
  const int big = small == kA ? kB : kA;
  const auto es = static_cast<double>(p.element_size);
  const auto panel = static_cast<double>(narrow_panel_elements(p));
  const auto big_size = static_cast<double>(p.size[static_cast<std::size_t>(big)]);
  const double big_free = big_size / static_cast<double>(k_size(p));
  const double flops = 2.0 * big_free * panel;
  const double big_bytes = big_size * es;
  const double compute = flops / (static_cast<double>(p.threads) * rates.gett * tuning::kNarrowEfficiency);
  const double memory = big_bytes > tuning::kCachedOperandBytes ? big_bytes / tuning::kMemoryBandwidth : 0.0;
  return Plan{Narrow{}, std::max(compute, memory) + tuning::permute_seconds(panel * es) + tuning::kCallSeconds};
}

std::string describe_kernel(const Problem& p, const Narrow&) {
  const int small = narrow_small_operand(p);
  return std::string("narrow kernel, ") + (small == kA ? "a" : "b") + " packed";
}

}  // namespace tenex::detail::cpu::contraction
