// The structural signature of expression nodes, which the plan cache (runtime/plan_cache.hpp)
// keys a set's optimized graph on. Each node class writes its own typed data
// (ExprNode::write_signature); the walk in plan_cache.cpp writes, per node, the class
// itself, its labels, extents and children around it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "tenex/expression/detail/label_store.hpp"

namespace tenex::detail {

/// Numbers pointers in the order first met: a linear scan of an inline array while few (the
/// common tiny set, with no allocation), a hash map beyond.
class Numbering {
 public:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  std::size_t find(const void* p) const {
    if (count_ > inline_.size()) {
      auto it = map_.find(p);
      return it == map_.end() ? npos : it->second;
    }
    for (std::size_t i = 0; i < count_; ++i) {
      if (inline_[i] == p) return i;
    }
    return npos;
  }
  std::size_t add(const void* p) {
    const std::size_t id = count_++;
    if (id < inline_.size()) {
      inline_[id] = p;
      return id;
    }
    if (id == inline_.size()) {
      for (std::size_t i = 0; i < inline_.size(); ++i) map_.emplace(inline_[i], i);
    }
    map_.emplace(p, id);
    return id;
  }
  std::size_t size() const { return count_; }

 private:
  std::array<const void*, 32> inline_{};
  std::size_t count_ = 0;
  std::unordered_map<const void*, std::size_t> map_;
};

/// Appends a signature's fields to a byte string (a cursor into the string's own buffer,
/// grown by doubling, so that each field costs a bounds check and a copy), and numbers the
/// storages it meets: a signature names a tensor by its slot, and `bound` collects the
/// storages in slot order for the run that binds them.
class SignatureWriter {
 public:
  SignatureWriter(std::string& out, std::vector<std::shared_ptr<void>>& bound) : out_(out), bound_(bound) {
    out_.resize(std::max<std::size_t>(out_.capacity(), 512));
  }
  ~SignatureWriter() { out_.resize(used_); }
  SignatureWriter(const SignatureWriter&) = delete;
  SignatureWriter& operator=(const SignatureWriter&) = delete;

  void put(std::uint64_t v) { append_word(v); }
  void put_double(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    append_word(bits);
  }
  /// A text of up to 7 bytes (every label of a set, nearly) is one word: its length in the low
  /// byte, the bytes above it. A longer one is a word of 0xff and its length, then its bytes.
  /// The first byte tells the two apart, so the encoding stays one-to-one.
  void put(std::string_view text) {
    if (text.size() <= 7) {
      std::uint64_t word = text.size();
      for (std::size_t i = 0; i < text.size(); ++i)
        word |= static_cast<std::uint64_t>(static_cast<unsigned char>(text[i])) << (8 * (i + 1));
      append_word(word);
      return;
    }
    append_word(0xff | (static_cast<std::uint64_t>(text.size()) << 8));
    append(text.data(), text.size());
  }
  void put(const std::vector<std::string>& labels) {
    put(labels.size());
    for (const std::string& l : labels) put(std::string_view(l));
  }
  /// A node's labels or extents, without materializing a view.
  template <class T>
  void put(const NodeSeq<T>& values) {
    put(values.size());
    for (const T& v : values) {
      if constexpr (std::is_same_v<T, std::string>) {
        put(std::string_view(v));
      } else {
        append_word(v);
      }
    }
  }
  void put(const std::vector<std::size_t>& values) {
    put(values.size());
    for (std::size_t v : values) append_word(v);
  }
  /// Writes the slot of `storage`, numbering it when first met.
  void put_storage(const std::shared_ptr<void>& storage) {
    std::size_t slot = storages_.find(storage.get());
    if (slot == Numbering::npos) slot = bind(storage);
    put(slot);
  }
  /// The slot of `storage`, or Numbering::npos when not met yet.
  std::size_t find_storage(const void* storage) const { return storages_.find(storage); }
  /// Numbers `storage` (not met yet) and returns its slot.
  std::size_t bind(const std::shared_ptr<void>& storage) {
    bound_.push_back(storage);
    return storages_.add(storage.get());
  }

 private:
  // One word: a constant-size copy (a store), not a call of memcpy.
  void append_word(std::uint64_t v) {
    if (used_ + sizeof v > out_.size()) grow(sizeof v);
    std::memcpy(out_.data() + used_, &v, sizeof v);
    used_ += sizeof v;
  }
  // Out of line, so that append_word stays small enough to inline.
  [[gnu::noinline]] void grow(std::size_t n) { out_.resize(std::max(2 * out_.size(), used_ + n)); }
  void append(const void* data, std::size_t n) {
    if (used_ + n > out_.size()) grow(n);
    if (n) std::memcpy(out_.data() + used_, data, n);
    used_ += n;
  }

  std::string& out_;
  std::size_t used_ = 0;
  Numbering storages_;
  std::vector<std::shared_ptr<void>>& bound_;
};

}  // namespace tenex::detail
