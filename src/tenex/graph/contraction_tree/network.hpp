// A product of many factors as a hypergraph: the inputs are vertices, the labels hyperedges.
// What every method of the tree optimizer reads (see README.md).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tenex::tree {

/// A label by number (0 .. Network::labels() - 1).
using Label = int;

/// An intermediate's labels, sorted by number, each with how many inputs inside it hold the
/// label: a label is summed away when that count reaches Network::holders (and it is not kept).
using Legs = std::vector<std::pair<Label, int>>;

/// One pairwise step: operands `first` and `second` make a new operand numbered after all
/// earlier ones (SSA: the inputs are 0 .. n-1, step i makes n + i).
using Path = std::vector<std::pair<std::size_t, std::size_t>>;

struct Network {
  std::vector<std::vector<Label>> inputs;  // each sorted, unique
  std::vector<double> extent;              // by label
  std::vector<double> log2_extent;         // by label
  std::vector<char> kept;                  // by label: in the result
  std::vector<int> holders;                // by label: inputs holding it
  std::vector<std::string> names;          // by label: as written (for explain() and errors)

  std::size_t size() const { return inputs.size(); }
  std::size_t labels() const { return extent.size(); }
  Legs leaf(std::size_t input) const;
  /// log2 of the elements of a tensor with these legs.
  double log2_size(const Legs& legs) const;
  /// The legs of contracting `a` and `b`; `log2_union` gets log2 of the size of every label
  /// either holds, `summed` whether the step sums a label (opt_einsum's `inner`).
  Legs merge(const Legs& a, const Legs& b, double& log2_union, bool& summed) const;
  /// The same network with the labels `fixed` of extent 1 (one slice of them).
  Network with_fixed(const std::vector<Label>& fixed) const;
};

/// Numbers the labels of `operands` (a label repeated inside one operand counts once),
/// `keep`: the labels of the result. Extents as given.
Network make_network(const std::vector<std::vector<std::string>>& operands,
                     const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep);

/// log2(2^a + 2^b), without overflow.
double log2_add(double a, double b);

}  // namespace tenex::tree
