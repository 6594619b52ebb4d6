// SparsePattern: the elements of one tensor that a list of sparse maps allows, grouped by
// key (docs/sparse.md).
//
// The key is the source modes of the first map. For each key value with at least one
// allowed element, the pattern lists, per other restricted mode (a "row" mode), the values
// it may take (its domain). Modes no map restricts are "free": every value. A compact
// buffer stores, key after key, the dense block [row modes..., free modes...] of the
// key's domains: memory proportional to what is allowed. That layout needs the allowed
// row tuples of each key to be the product of the domains (`product`); maps whose allowed
// tuples are not (i->a with a->Q on a node with i, a, Q) still give a pattern, with exact
// counts, that is evaluated dense and masked.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>


namespace tenex {

class SparseMap;

struct SparsePattern {
  struct Key {
    std::vector<std::size_t> index;                 // over key_modes
    std::vector<std::vector<std::size_t>> domains;  // per row mode: allowed values, ascending
    std::size_t rows = 0;                           // allowed row tuples (product: product of domain sizes)
    std::size_t offset = 0;                         // first element of the key's block in a compact buffer
  };
  std::vector<std::size_t> key_modes;   // modes of the node, in the first map's source order
  std::vector<std::size_t> row_modes;   // other modes some map restricts, in the node's order
  std::vector<std::size_t> free_modes;  // modes no map restricts, in the node's order
  std::vector<std::size_t> extents;     // of the node
  std::size_t free_size = 1;            // product of the free modes' extents
  bool product = true;                  // every key's rows are the product of its domains
  std::vector<Key> keys;                // ascending by index; keys with no allowed element left out
  std::size_t allowed = 0;              // allowed elements
  std::size_t total = 0;                // all elements

  double fraction() const { return total == 0 ? 1.0 : static_cast<double>(allowed) / static_cast<double>(total); }
  /// The key of `index` (over key_modes), or null when it allows nothing.
  const Key* find(const std::vector<std::size_t>& index) const;
};

namespace detail {

/// A map between groups of labels, as a pattern reads it.
struct LabeledMap {
  const std::vector<std::string>* source;
  const std::vector<std::string>* target;
  const SparseMap* map;
};

/// The pattern of a node with `labels` and `extents` under `maps` (each map's labels among
/// `labels`); null when `maps` is empty. Indices out of a mode's extent are ignored.
std::shared_ptr<const SparsePattern> make_sparse_pattern(const std::vector<std::string>& labels,
                                                         const std::vector<std::size_t>& extents,
                                                         const std::vector<LabeledMap>& maps);

/// The CPU's choice for a product of two operands where a map restricts the result or an
/// operand (docs/sparse.md, "CPU evaluation"): per-key gathered products, or one dense GEMM
/// on the expanded operands with the result's allowed elements kept. The estimate walks the
/// keys as the per-key loop does: per key, each label's domain is the smallest that a side
/// restricting it allows (an upper bound on the intersection); runs of consecutive keys
/// with equal domains that read the same second operand count as one GEMM. Its constants
/// were measured on one core of the development machine (docs/performance.md): 0.7 ns per
/// triple of a scattered row-times-matrix key, 40 ps per flop of a grouped GEMM, 1 ns per
/// element it gathers, 1 us per key; 11 ps per flop of the dense GEMM, 2 ns per element
/// expanded or gathered around it. Where the per-key products are estimated under 1 ms they
/// are kept whatever the dense estimate.
struct SparseProductCost {
  bool applies = false;          // some side has a per-key pattern
  double triples = 0;            // allowed (key, rows, summed, columns) combinations
  double dense_flops = 0;        // 2 x the product of every label's extent
  std::size_t keys = 0;          // keys of the loop
  std::size_t grouped_keys = 0;  // keys that share a GEMM with the key before
  double sparse_seconds = 0;     // estimated
  double dense_seconds = 0;      // estimated
  bool dense = false;            // the dense GEMM is estimated faster (and the products take over 1 ms)
};
SparseProductCost sparse_product_cost(const std::vector<std::string>& c_labels, const SparsePattern* c,
                                      const std::vector<std::string>& a_labels, const SparsePattern* a,
                                      const std::vector<std::string>& b_labels, const SparsePattern* b,
                                      const std::vector<std::size_t>& c_extents,
                                      const std::vector<std::size_t>& a_extents,
                                      const std::vector<std::size_t>& b_extents);

/// "5.0%" of a fraction, as explain() and DOT show it.
std::string format_fraction(double fraction);

}  // namespace detail
}  // namespace tenex
