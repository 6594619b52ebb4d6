// The plan of a sparse product run key by key (sparse_contract.hpp): which labels form the
// loop's key and whose keys it runs over, how it reads each side (the result and the two
// operands), and, at each key, which block of each side pairs with it and the offsets of the
// elements they multiply (each label's domain, intersected where several sides restrict it).
// Independent of the scalar type: the kernel (sparse_contract.cpp) reads and writes the values.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tenex/graph/op_graph.hpp"
#include "tenex/sparse/sparse_pattern.hpp"

namespace tenex::detail::cpu::sparse {

using Offsets = std::vector<std::ptrdiff_t>;

/// One operand (or the result) of a sparse product, as the per-key loop reads it.
struct Side {
  const OpNode* node = nullptr;
  std::vector<std::size_t> strides;        // dense strides (when not compact)
  const SparsePattern* pattern = nullptr;  // product pattern whose key modes lie in the key
  bool compact = false;
  bool expanded = false;                  // a compact operand without such a pattern: read expanded
  std::vector<std::size_t> key_pick;      // for each key mode of the pattern: its place in the key
  std::vector<int> key_of_label;          // for each label: its place in the key, or -1
  std::vector<std::size_t> free_strides;  // compact: stride of each mode in the block, free modes
};

/// The per-key loop of a product c = a b.
struct KeyLoop {
  const SparsePattern* provider = nullptr;  // whose keys the loop runs over
  std::vector<std::string> key;             // the key's labels
  Side sides[3];                            // c, a, b
  // Whether the per-key loop runs: a key, labels it allows (every non-key label on the result
  // and one operand, or on both operands and not the result), and a result either dense or
  // with a pattern whose key lies in the loop's. Else the expanded, dense product runs, and
  // what follows is left empty.
  bool runs = false;
  // Labels of the problem: the result's, then the operands' others.
  std::vector<std::string> labels;
  std::vector<std::size_t> extent;
  std::vector<std::size_t> m_labels, n_labels, s_labels;  // ids, in the order of A, B, A
  std::vector<std::vector<std::size_t>> full;             // per label of the problem: every value
  std::vector<char> key_label;                            // per label of the problem: a key label
  std::vector<std::size_t> id_of[3];                      // per side and mode: the label of the problem
  bool key_in_result = true;
  bool shared_b = true;  // b carries no key label: every key reads the same b
};

/// The loop of c = a b: the key is the result's pattern's key, else an operand's.
KeyLoop key_loop(const OpNode& c, const OpNode& a, const OpNode& b);

/// Per-thread buffers of the loop's pairing, kept between keys.
struct KeyScratch {
  std::vector<std::size_t> index;
  std::vector<std::vector<std::size_t>> domain;            // by label of the problem: an intersection
  std::vector<const std::vector<std::size_t>*> domain_of;  // by label of the problem: the key's domain
  std::vector<char> restricted;
  std::vector<std::size_t> tmp, row_stride;
  std::vector<const Offsets*> list;
  std::vector<Offsets> offsets;  // by side and label
  // The key's offsets: of a's rows (M) and sums (S), b's sums and columns (N), c's rows and
  // columns (in A's and B's label order).
  Offsets am, as, bs, bn, cm, cn, next;
};

/// Sizes the buffers for the loop's labels (before its first key).
void start_pairing(const KeyLoop& loop, KeyScratch& w);

/// The blocks of every side that pair at the provider's key `pk`, and the offsets of the
/// elements they multiply (w.am .. w.cn), with each side's base offset (c, a, b); false where
/// the product is zero at that key (a side allows nothing there).
bool pair_blocks(const KeyLoop& loop, const SparsePattern::Key& pk, KeyScratch& w, std::ptrdiff_t (&base)[3]);

}  // namespace tenex::detail::cpu::sparse
