#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

void optimize(OpGraph& graph) {
  eliminate_common_subexpressions(graph);
  fold_scales(graph);
  graph.prune();
  graph.validate();
}

}  // namespace tenex::passes
