// Placeholder until reconfiguration lands (branch h-tree).
#include "tenex/graph/contraction_tree/methods.hpp"
namespace tenex::tree {
Path reconfigure(const Network&, Path path, std::size_t, double) { return path; }
}  // namespace tenex::tree
