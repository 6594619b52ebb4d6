#include "tenex/graph/passes/passes.hpp"

namespace tenex::passes {

void optimize(OpGraph& graph, std::size_t memory_limit) {
  eliminate_common_subexpressions(graph);
  order_contractions(graph, memory_limit);
  eliminate_common_subexpressions(graph);
  fold_scales(graph);
  fold_gemm_beta(graph);
  insert_masks(graph);
  graph.prune();
  graph.validate();
}

}  // namespace tenex::passes
