// tenex/graph/storage_kind.hpp — what a value's buffer holds (docs/architecture.md,
// "Storage kinds"): every element (dense), the unique elements under a symmetry (packed), or
// the allowed blocks of a sparsity (blocks). The compiler chooses each node's kind
// (OpNode::layout); a backend says which kinds its kernels read and write
// (BackendCapabilities::storage_kinds), and the pipeline never hands it another.
#pragma once

#include <initializer_list>
#include <string>

namespace tenex {

enum class StorageKind : unsigned char {
  dense,   // every element, row-major: the product of the extents
  packed,  // the unique elements under a Symmetry, in its documented order
  blocks,  // the allowed blocks, each contiguous and row-major inside (today: a sparse map's per-key blocks)
};

/// "dense", "packed", "blocks".
constexpr const char* storage_kind_name(StorageKind kind) {
  switch (kind) {
    case StorageKind::dense: return "dense";
    case StorageKind::packed: return "packed";
    case StorageKind::blocks: return "blocks";
  }
  return "?";
}

/// A set of storage kinds: StorageKinds{StorageKind::dense, StorageKind::blocks}.
class StorageKinds {
 public:
  constexpr StorageKinds() = default;
  constexpr StorageKinds(std::initializer_list<StorageKind> kinds) {
    for (StorageKind k : kinds) add(k);
  }
  constexpr StorageKinds& add(StorageKind kind) {
    bits_ |= bit(kind);
    return *this;
  }
  constexpr bool contains(StorageKind kind) const { return (bits_ & bit(kind)) != 0; }
  constexpr bool operator==(const StorageKinds&) const = default;
  /// "dense, blocks" (empty: "none").
  std::string text() const {
    std::string out;
    for (StorageKind k : {StorageKind::dense, StorageKind::packed, StorageKind::blocks}) {
      if (!contains(k)) continue;
      if (!out.empty()) out += ", ";
      out += storage_kind_name(k);
    }
    return out.empty() ? "none" : out;
  }

 private:
  static constexpr unsigned bit(StorageKind kind) { return 1u << static_cast<unsigned>(kind); }
  unsigned bits_ = 0;
};

}  // namespace tenex
