// Placeholder until the slice finder lands (branch h-tree).
#include <cmath>

#include "tenex/graph/contraction_tree/methods.hpp"
namespace tenex::tree {
std::optional<Slicing> find_slices(const Network& network, const Path& path, double log2_max_size) {
  Slicing s;
  s.sliced = score(network, path);
  std::vector<char> used(network.labels(), 0);
  while (s.sliced.log2_largest > log2_max_size) {
    Label pick = -1;
    for (std::size_t l = 0; l < network.labels(); ++l) {
      if (!network.kept[l] && !used[l] && network.extent[l] > 1 &&
          (pick < 0 || network.extent[l] > network.extent[static_cast<std::size_t>(pick)])) {
        pick = static_cast<Label>(l);
      }
    }
    if (pick < 0) return std::nullopt;
    used[static_cast<std::size_t>(pick)] = 1;
    s.labels.push_back(pick);
    s.slices *= network.extent[static_cast<std::size_t>(pick)];
    s.sliced = score(network.with_fixed(s.labels), path);
  }
  s.log2_total_flops = std::log2(s.slices) + s.sliced.log2_flops;
  return s;
}
}  // namespace tenex::tree
