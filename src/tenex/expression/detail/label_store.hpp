// The labels and extents of expression nodes (ExprNode::labels, ExprNode::extents), and the
// store that products built factor by factor share (issue 45).
//
// A product's labels are the union of its factors' in order of first appearance, so the labels
// of `p * x` are those of `p` followed by the labels of `x` that `p` lacks. A chain written
// factor by factor, m0("i0,i1") * m1("i1,i2") * ..., would copy N labels into the N-th product:
// O(N^2) while the chain is written. Instead the products share one LabelStore: each holds a
// view of a run of its entries, and `p * x` appends x's new labels to the store of `p` when
// `p` is the store's newest view (else it copies p's view into a new store: a branch costs
// what a product cost before). Written the other way, `x * p` with x("i0,i1") and p over
// i1, i2, ..., the product's labels are i0 then p's: i0 goes in front of p's entries. The
// store also holds the number of factors carrying each label (what decides the labels a
// product sums), at the newest view's version, with a log of the changes that gives an older
// view's numbers back.
//
// Thread safety: a view reads its entries without a lock; they are never written again once a
// view covers them (entries are added outside every view, and a full store is copied, never
// grown in place). The counts, the log and the label index are read and written
// under the store's mutex. A node's labels are published with the node (the caller's
// synchronization that hands the node to another thread orders them).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tenex/export.hpp"
#include "tenex/labels.hpp"

namespace tenex::detail {

/// Entries (labels, with extent and count) one store has written: appended or copied in, and
/// copied out into a materialized vector. A test reads it to check that writing a chain of N
/// factors writes O(N) entries, not O(N^2).
TENEX_API std::size_t label_entries_written();

/// Entries at positions [first, last) of a buffer that never moves: appended at last, or
/// prepended before first (a product whose new factor is on its left, x * p).
class LabelStore {
 public:
  /// Room for `capacity` entries, the first to be written at `first`.
  LabelStore(std::size_t capacity, std::size_t first);
  LabelStore(const LabelStore&) = delete;
  LabelStore& operator=(const LabelStore&) = delete;

  std::size_t capacity() const { return capacity_; }
  const std::string* labels() const { return labels_.get(); }
  const std::size_t* extents() const { return extents_.get(); }

  /// Position of `label` in [begin, end) (a view's entries), or `end`.
  std::size_t find(const std::string& label, std::size_t begin, std::size_t end) const;

  // Under mutex():
  std::mutex& mutex() const { return mutex_; }
  std::size_t first_locked() const { return first_; }
  std::size_t last_locked() const { return last_; }
  std::uint64_t version_locked() const { return version_; }
  std::size_t find_locked(const std::string& label, std::size_t begin, std::size_t end) const;
  /// Adds `label` (not among the entries) after the last entry, or before the first, with
  /// `count` factors (which every view of the store holds: it is not logged).
  void append_locked(const std::string& label, std::size_t extent, std::size_t count);
  void prepend_locked(const std::string& label, std::size_t extent, std::size_t count);
  /// A new version: the count changes until the next one belong to it.
  std::uint64_t next_version_locked() { return ++version_; }
  void add_count_locked(std::size_t position, std::size_t by);
  std::size_t count_locked(std::size_t position) const { return counts_[position]; }
  /// The counts of the view [begin, end) at `version` (indexed from begin): the current ones
  /// with the later versions' changes undone.
  std::vector<std::size_t> counts_at_locked(std::size_t begin, std::size_t end, std::uint64_t version) const;

 private:
  void put_locked(std::size_t at, const std::string& label, std::size_t extent, std::size_t count);

  std::size_t capacity_;
  std::unique_ptr<std::string[]> labels_;
  std::unique_ptr<std::size_t[]> extents_;
  mutable std::mutex mutex_;
  std::size_t first_, last_;
  std::uint64_t version_ = 0;
  std::vector<std::size_t> counts_;  // by position
  struct Change {
    std::uint64_t version;
    std::size_t position, by;
  };
  std::vector<Change> log_;
  static constexpr std::size_t indexed_from = 16;  // entries; fewer are scanned
  std::unordered_map<std::string_view, std::size_t> index_;
};

/// The labels (T = std::string) or extents (T = std::size_t) of a node: a vector it owns, or a
/// view of a LabelStore shared with other products. Reads like a const std::vector<T>; a view
/// becomes a vector of its own when written (copy on write). vec() (and the conversion to
/// const std::vector<T>&) materializes a view once, thread-safely: code on the path of writing
/// or lowering a product uses the view's own lookups (find_in) instead.
template <class T>
class NodeSeq {
 public:
  using value_type = T;
  using const_iterator = const T*;

  NodeSeq() = default;
  ~NodeSeq() { drop_cache(); }
  NodeSeq(std::vector<T> v) : owned_(std::move(v)) {}  // NOLINT: reads like the vector it replaces
  NodeSeq(const NodeSeq& o)
      : owned_(o.owned_), store_(o.store_), offset_(o.offset_), size_(o.size_), version_(o.version_) {}
  NodeSeq(NodeSeq&& o) noexcept
      : owned_(std::move(o.owned_)), store_(std::move(o.store_)), offset_(o.offset_), size_(o.size_),
        version_(o.version_) {}
  NodeSeq& operator=(const NodeSeq& o) {
    if (this != &o) assign_from(o.owned_, o.store_, o.offset_, o.size_, o.version_);
    return *this;
  }
  NodeSeq& operator=(NodeSeq&& o) noexcept {
    if (this != &o) assign_from(std::move(o.owned_), std::move(o.store_), o.offset_, o.size_, o.version_);
    return *this;
  }
  NodeSeq& operator=(std::vector<T> v) {
    assign_from(std::move(v), nullptr, 0, 0, 0);
    return *this;
  }

  /// A view of the `size` entries of `store` from `offset`, at `version`.
  static NodeSeq view(std::shared_ptr<const LabelStore> store, std::size_t offset, std::size_t size,
                      std::uint64_t version) {
    NodeSeq s;
    s.store_ = std::move(store);
    s.offset_ = offset;
    s.size_ = size;
    s.version_ = version;
    return s;
  }
  bool is_view() const { return store_ != nullptr; }
  const std::shared_ptr<const LabelStore>& store() const { return store_; }
  std::size_t offset() const { return offset_; }  // a view's first position in its store
  std::uint64_t version() const { return version_; }

  std::size_t size() const { return store_ ? size_ : owned_.size(); }
  bool empty() const { return size() == 0; }
  const T* data() const {
    if (!store_) return owned_.data();
    if constexpr (std::is_same_v<T, std::string>) {
      return store_->labels() + offset_;
    } else {
      return store_->extents() + offset_;
    }
  }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& operator[](std::size_t i) const { return data()[i]; }
  const T& at(std::size_t i) const {
    if (i >= size()) return vec().at(i);  // throws std::out_of_range as the vector did
    return data()[i];
  }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }

  /// The whole sequence as a vector: the owned one, or a view's copy made once.
  const std::vector<T>& vec() const;
  operator const std::vector<T>&() const { return vec(); }  // NOLINT: reads like the vector it replaces

  // Writes (a node being made): a view is copied into a vector of its own first.
  // No non-const operator[]: a read through a non-const node would copy a view.
  T& mutable_at(std::size_t i) { return own()[i]; }
  void push_back(T v) { own().push_back(std::move(v)); }
  void reserve(std::size_t n) { own().reserve(n); }
  void clear() { assign_from(std::vector<T>{}, nullptr, 0, 0, 0); }
  template <class It>
  void assign(It first, It last) {
    assign_from(std::vector<T>(first, last), nullptr, 0, 0, 0);
  }

  friend bool operator==(const NodeSeq& a, const NodeSeq& b) {
    if (a.store_ && a.store_ == b.store_ && a.offset_ == b.offset_ && a.size_ == b.size_) return true;
    return equal(a, b.begin(), b.size());
  }
  friend bool operator==(const NodeSeq& a, const std::vector<T>& b) { return equal(a, b.data(), b.size()); }

 private:
  static bool equal(const NodeSeq& a, const T* b, std::size_t n) {
    if (a.size() != n) return false;
    const T* p = a.data();
    for (std::size_t i = 0; i < n; ++i) {
      if (!(p[i] == b[i])) return false;
    }
    return true;
  }
  void assign_from(std::vector<T> owned, std::shared_ptr<const LabelStore> store, std::size_t offset, std::size_t size,
                   std::uint64_t version) {
    owned_ = std::move(owned);
    store_ = std::move(store);
    offset_ = offset;
    size_ = size;
    version_ = version;
    drop_cache();  // written only while the node is made, before another thread reads it
  }
  void drop_cache() { delete cache_.exchange(nullptr, std::memory_order_acq_rel); }
  std::vector<T>& own() {
    if (store_) assign_from(std::vector<T>(begin(), end()), nullptr, 0, 0, 0);
    return owned_;
  }

  std::vector<T> owned_;
  std::shared_ptr<const LabelStore> store_;  // a view when set
  std::size_t offset_ = 0;
  std::size_t size_ = 0;
  std::uint64_t version_ = 0;
  mutable std::atomic<const std::vector<T>*> cache_{nullptr};  // a view's vec(), made once
};

void count_label_entries_written(std::size_t n);

template <class T>
const std::vector<T>& NodeSeq<T>::vec() const {
  if (!store_) return owned_;
  if (const std::vector<T>* c = cache_.load(std::memory_order_acquire)) return *c;
  // Two threads may both copy; one copy is kept, the other freed.
  auto* fresh = new std::vector<T>(begin(), end());
  const std::vector<T>* expected = nullptr;
  if (cache_.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    count_label_entries_written(size_);
    return *fresh;
  }
  delete fresh;
  return *expected;
}

using NodeLabels = NodeSeq<std::string>;
using NodeExtents = NodeSeq<std::size_t>;

/// Position of `label` in `labels`, or labels.size(): a view's index, not a scan.
inline std::size_t find_label(const NodeLabels& labels, const std::string& label) {
  if (labels.is_view()) {
    const std::size_t begin = labels.offset();
    return labels.store()->find(label, begin, begin + labels.size()) - begin;
  }
  return find_label(labels.vec(), label);
}
inline bool contains_label(const NodeLabels& labels, const std::string& label) {
  return find_label(labels, label) < labels.size();
}
struct ExprNode;
/// The labels and extents of the product a * b (the union of theirs, in order of first
/// appearance), the number of factors holding each, and its implicit labels (those on one
/// factor), into `out`: a view of a's store extended with b's new labels when a is a product
/// and the newest view of its store; else of b's extended in front with a's when a's labels are
/// new ones then the first of b's (x("i0,i1") * p, p over i1, i2...) and b is the newest view
/// of its store; else of a copy.
void product_labels(const ExprNode& a, const ExprNode& b, ExprNode& out);

/// The labels of `order` that `allowed` contains, in the order of `order`: O(allowed) lookups
/// when `order` is the longer view.
std::vector<std::string> filter_labels(const NodeLabels& order, const std::vector<std::string>& allowed);
/// The labels of `order` that the view `allowed` contains: O(order) lookups.
inline std::vector<std::string> filter_labels(const std::vector<std::string>& order, const NodeLabels& allowed) {
  if (!allowed.is_view()) return filter_labels(order, allowed.vec());
  std::vector<std::string> out;
  for (const std::string& l : order) {
    if (contains_label(allowed, l)) out.push_back(l);
  }
  return out;
}

}  // namespace tenex::detail
