// tenex/explain.hpp — the plan of a set, as text (docs/explain.md).
//
// One line per step in execution order (operation, operands and result with their labels
// and extents, the kernel class, flops, result size), then the totals, the largest
// intermediate and the theoretical speed-up over evaluating the products in written order.
//
//   auto e = a("i,j") * b("j,k") * c("k,l");
//   std::cout << tenex::explain(e);        // the plan e would run; nothing is evaluated
//   d("i,l") = e;
//   ...                                    // the set runs when e and the statement are gone
//   std::cout << tenex::explain();         // the plan of the last set run on this thread
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/scalar.hpp"

namespace tenex {

template <class T>
class Expression;

/// The plan of the last set evaluated on this thread (a message saying so when none has
/// run yet). Nothing of that set is kept but its optimized graph without the tensors.
TENEX_API std::string explain();

/// The plan that evaluating `e` would run: the statements its linked set has recorded, then
/// e's value, optimized as a set is. Nothing is evaluated, the set is left as it was and e
/// stays usable. A Shape expression's plan only says which shape it computes.
template <class T>
TENEX_API std::string explain(const Expression<T>& e);

/// One step of a plan, as explain(e) prints it: the operation (with its parameters), the
/// kernel class, the operands and the result (each with its labels and extents: "t0(i=2,j=3)",
/// "#1(i=2,k=4)" for step 1's result), the flops and the result's bytes.
struct PlanStep {
  std::string operation, kernel;
  std::vector<std::string> operands;
  std::string result;
  double flops = 0;
  std::size_t bytes = 0;
};

/// The plan explain(e) prints, as data, step by step in execution order: a program can read
/// it (Python: tenex.plan(e), a list of dicts). Nothing is evaluated. A Shape expression's
/// plan is empty.
template <class T>
TENEX_API std::vector<PlanStep> plan_of(const Expression<T>& e);

#define TENEX_DECLARE_EXPLAIN(T)                                          \
  extern template TENEX_API std::string explain<T>(const Expression<T>&); \
  extern template TENEX_API std::vector<PlanStep> plan_of<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_EXPLAIN)
#undef TENEX_DECLARE_EXPLAIN

}  // namespace tenex
