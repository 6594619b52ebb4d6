#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

void optimize(OpGraph& graph) {
  eliminate_common_subexpressions(graph);
  order_contractions(graph);
  eliminate_common_subexpressions(graph);
  fold_scales(graph);
  insert_masks(graph);
  graph.prune();
  graph.validate();
}

}  // namespace tenex::passes
