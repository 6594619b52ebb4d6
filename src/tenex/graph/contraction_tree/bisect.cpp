// Placeholder until the partitioner lands (branch h-tree): greedy.
#include "tenex/graph/contraction_tree/methods.hpp"
namespace tenex::tree {
Path bisect(const Network& network, const BisectOptions& options) {
  GreedyOptions o;
  o.seed = options.seed;
  o.temperature = 0.1;
  return greedy(network, o);
}
}  // namespace tenex::tree
