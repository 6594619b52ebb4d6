// The GETT kernel, one kind of contraction plan (contraction_plan.hpp): it applies where one
// operand can be packed in panels (gett_panel_operand, gett_kernel.hpp); the model prices its
// arithmetic (the panel operand's free values padded to whole panels) at the GETT rate
// (probed, or kGettEfficiency of the GEMM's constant), or the strip operand and c through
// memory where that takes longer; run_gett (gett_kernel.cpp) runs it.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/gett_kernel.hpp"
#include "tenex/backend/cpu/operand_offsets.hpp"
#include "tenex/backend/cpu/tuning.hpp"

namespace tenex::detail::cpu::contraction {

std::optional<Plan> gett_plan(const Problem& p, const ModelRates& rates) {
  const int panel = gett_panel_operand(p);
  if (panel < 0) return std::nullopt;
  const int strip = panel == kA ? kB : kA;
  const auto es = static_cast<double>(p.element_size);
  const double m = static_cast<double>(round_up(free_size(p, panel), 2));
  const auto strip_size = static_cast<double>(p.size[static_cast<std::size_t>(strip)]);
  const double compute = 2.0 * m * strip_size / (static_cast<double>(p.threads) * rates.gett);
  const double bytes = (strip_size + static_cast<double>(p.size[kC])) * es;
  const double memory = bytes > tuning::kCachedOperandBytes ? bytes / tuning::kMemoryBandwidth : 0.0;
  return Plan{Gett{}, std::max(compute, memory) + tuning::kCallSeconds};
}

std::string describe_kernel(const Problem& p, const Gett&) {
  const bool a_panels = gett_panel_operand(p) == kA;
  return std::string("GETT kernel, ") + (a_panels ? "a" : "b") + " packed in panels, " + (a_panels ? "b" : "a") +
         " in strips" + (gett_boxed(p, p.threads) ? ", c written in boxes" : "");
}

}  // namespace tenex::detail::cpu::contraction
