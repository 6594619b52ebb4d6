// The walk over the kinds of contraction plan (contraction_plan.hpp): kind_plans asks each
// kind once for a problem, with the model's rates read once (model_rates, plan_search.cpp,
// where the rates are kept); all_plans, the cheapest plan and a plan's description follow
// from it.
#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/machine.hpp"

namespace tenex::detail::cpu::contraction {

KindPlans kind_plans(const Problem& p, double flops, bool every) {
  const ModelRates rates = model_rates(p.element_size);
  KindPlans kinds{naive_plan(p), narrow_plan(p, rates), gett_plan(p, rates), rates.ranked, {}, {}};
  kinds.cheapest = kinds.naive;
  for_each_gemm_plan(p, flops, every, rates, [&](const Plan& plan) {
    kinds.gemm.push_back(plan);
    if (plan.seconds < kinds.cheapest.seconds) kinds.cheapest = plan;
  });
  if (kinds.gett_ranked && kinds.gett && kinds.gett->seconds < kinds.cheapest.seconds) kinds.cheapest = *kinds.gett;
  return kinds;
}

namespace {

// What a plan depends on: the canonical problem, and the L2 the model's sizes come from
// (tuning.hpp; a test may pin another machine's).
std::vector<std::size_t> plan_key(const Problem& p) {
  std::vector<std::size_t> key{p.element_size, p.beta_zero ? 1U : 0U, p.threads, p.modes(), machine::caches().l2};
  for (int op = 0; op < 3; ++op) {
    key.push_back(p.order[op].size());
    for (int d : p.order[op]) key.push_back(static_cast<std::size_t>(d));
  }
  key.insert(key.end(), p.extent.begin(), p.extent.end());
  return key;
}

}  // namespace

const std::vector<Plan>& all_plans(const Problem& p, double flops) {
  thread_local std::vector<std::size_t> key;
  thread_local std::vector<Plan> plans;
  std::vector<std::size_t> wanted = plan_key(p);
  if (wanted != key || plans.empty()) {
    KindPlans kinds = kind_plans(p, flops, true);
    plans.clear();
    if (kinds.narrow) plans.push_back(*kinds.narrow);
    if (kinds.gett) plans.push_back(*kinds.gett);
    plans.insert(plans.end(), kinds.gemm.begin(), kinds.gemm.end());
    plans.emplace_back();
    key = std::move(wanted);
  }
  return plans;
}

Plan cheapest_plan(const Problem& p, double flops) { return kind_plans(p, flops, false).cheapest; }

std::string describe(const Problem& p, const Plan& x) {
  std::string text = std::visit([&](const auto& kernel) { return describe_kernel(p, kernel); }, x.kernel);
  if (x.naive()) return text;
  return text + "; model " + std::to_string(x.seconds * 1e3) + " ms";
}

}  // namespace tenex::detail::cpu::contraction
