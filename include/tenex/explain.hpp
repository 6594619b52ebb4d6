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

#include <string>

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

#define TENEX_DECLARE_EXPLAIN(T) extern template TENEX_API std::string explain<T>(const Expression<T>&);
TENEX_FOR_EACH_OBJECT(TENEX_DECLARE_EXPLAIN)
#undef TENEX_DECLARE_EXPLAIN

}  // namespace tenex
