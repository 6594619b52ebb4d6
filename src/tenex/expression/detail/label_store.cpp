#include "tenex/expression/detail/label_store.hpp"

#include <algorithm>
#include <atomic>

#include "tenex/error.hpp"
#include "tenex/expression/detail/node.hpp"

namespace tenex::detail {

namespace {

std::atomic<std::size_t> entries_written{0};

}  // namespace

std::size_t label_entries_written() { return entries_written.load(std::memory_order_relaxed); }

void count_label_entries_written(std::size_t n) { entries_written.fetch_add(n, std::memory_order_relaxed); }

LabelStore::LabelStore(std::size_t capacity, std::size_t first)
    : capacity_(std::max<std::size_t>(capacity, 1)), labels_(std::make_unique<std::string[]>(capacity_)),
      extents_(std::make_unique<std::size_t[]>(capacity_)), first_(std::min(first, capacity_)), last_(first_),
      counts_(capacity_, 0) {}

std::size_t LabelStore::find(const std::string& label, std::size_t begin, std::size_t end) const {
  if (end - begin <= indexed_from) {
    for (std::size_t i = begin; i < end; ++i) {
      if (same_label(labels_[i], label)) return i;
    }
    return end;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return find_locked(label, begin, end);
}

std::size_t LabelStore::find_locked(const std::string& label, std::size_t begin, std::size_t end) const {
  if (index_.empty()) {
    for (std::size_t i = begin; i < end; ++i) {
      if (same_label(labels_[i], label)) return i;
    }
    return end;
  }
  // Each label is in the store once: a view holds it when its position is inside the view.
  auto it = index_.find(std::string_view(label));
  return it == index_.end() || it->second < begin || it->second >= end ? end : it->second;
}

void LabelStore::put_locked(std::size_t at, const std::string& label, std::size_t extent, std::size_t count) {
  labels_[at] = label;
  extents_[at] = extent;
  counts_[at] = count;
  count_label_entries_written(1);
  if (!index_.empty()) {
    index_.emplace(std::string_view(labels_[at]), at);
  } else if (last_ - first_ > indexed_from) {
    index_.reserve(2 * (last_ - first_));
    for (std::size_t i = first_; i < last_; ++i) index_.emplace(std::string_view(labels_[i]), i);
  }
}

void LabelStore::append_locked(const std::string& label, std::size_t extent, std::size_t count) {
  if (last_ == capacity_) throw InternalError("tenex: a label store is full");
  ++last_;
  put_locked(last_ - 1, label, extent, count);
}

void LabelStore::prepend_locked(const std::string& label, std::size_t extent, std::size_t count) {
  if (first_ == 0) throw InternalError("tenex: a label store is full");
  --first_;
  put_locked(first_, label, extent, count);
}

void LabelStore::add_count_locked(std::size_t position, std::size_t by) {
  counts_[position] += by;
  log_.push_back({version_, position, by});
}

std::vector<std::size_t> LabelStore::counts_at_locked(std::size_t begin, std::size_t end, std::uint64_t version) const {
  std::vector<std::size_t> counts(counts_.begin() + static_cast<std::ptrdiff_t>(begin),
                                  counts_.begin() + static_cast<std::ptrdiff_t>(end));
  for (std::size_t i = log_.size(); i-- > 0 && log_[i].version > version;) {
    const std::size_t at = log_[i].position;
    if (at >= begin && at < end) counts[at - begin] -= log_[i].by;
  }
  return counts;
}

namespace {

using Counted = std::vector<std::pair<std::string, std::size_t>>;
constexpr std::size_t npos = static_cast<std::size_t>(-1);

void require_view(const ExprNode& product) {
  if (!product.labels.is_view() || !product.extents.is_view() || product.labels.offset() != product.extents.offset()) {
    throw InternalError("tenex: the product " + product.text() + " holds no label store");
  }
}

/// The number of factors of `f` holding each of its labels: a product's, from its store, or
/// once each of another node's implicit labels.
std::vector<std::size_t> counts_of(const ExprNode& f) {
  if (f.is_product()) {
    require_view(f);
    const LabelStore& store = *f.labels.store();
    std::lock_guard<std::mutex> lock(store.mutex());
    const std::size_t begin = f.labels.offset();
    return store.counts_at_locked(begin, begin + f.labels.size(), f.labels.version());
  }
  const std::vector<std::string>& implicit = f.implicit_labels();
  std::vector<std::size_t> counts(f.labels.size(), 0);
  if (f.implicit_is_labels) {
    std::fill(counts.begin(), counts.end(), 1);
    return counts;
  }
  for (const std::string& l : implicit) {
    if (const std::size_t at = find_label(f.labels, l); at < counts.size()) counts[at] = 1;
  }
  return counts;
}

/// The labels of the factors of `f` with the number of factors holding each.
Counted factor_counts(const ExprNode& f) {
  Counted out;
  if (!f.is_product()) {
    for (const std::string& l : f.implicit_labels()) out.emplace_back(l, 1);
    return out;
  }
  const std::vector<std::size_t> counts = counts_of(f);
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) out.emplace_back(f.labels[i], counts[i]);
  }
  return out;
}

struct Target {
  std::shared_ptr<LabelStore> store;
  std::unique_lock<std::mutex> lock;
};

/// A new store, locked, holding f's labels and extents with `counts`, and room for `room`
/// more after them (at_back) or before them.
Target store_of(const ExprNode& f, const std::vector<std::size_t>& counts, std::size_t room, bool at_back) {
  const std::size_t n = f.labels.size(), capacity = std::max<std::size_t>(2 * (n + room), 2);
  Target t{std::make_shared<LabelStore>(capacity, at_back ? 0 : capacity - n), {}};
  t.lock = std::unique_lock<std::mutex>(t.store->mutex());
  for (std::size_t i = 0; i < n; ++i) t.store->append_locked(f.labels[i], f.extents[i], counts[i]);
  return t;
}

/// The store, locked, in which the product `f`'s labels grow by up to `room` entries after
/// them (at_back) or before them: f's own when f's view is its newest and the room is free,
/// else a copy of f's view. No store when f's view is not the newest and `newest_only`.
Target extend(const ExprNode& f, std::size_t room, bool at_back, bool newest_only) {
  require_view(f);
  // Views read the store as const; the one product extending its newest view writes.
  auto shared = std::const_pointer_cast<LabelStore>(f.labels.store());
  std::unique_lock<std::mutex> held(shared->mutex());
  const std::size_t begin = f.labels.offset(), end = begin + f.labels.size();
  const bool newest =
      shared->version_locked() == f.labels.version() && shared->first_locked() == begin && shared->last_locked() == end;
  if (!newest && newest_only) return {};
  if (newest && (at_back ? shared->capacity() - end : begin) >= room) return {std::move(shared), std::move(held)};
  const std::vector<std::size_t> counts = shared->counts_at_locked(begin, end, f.labels.version());
  held.unlock();
  return store_of(f, counts, room, at_back);
}

/// The number of a's labels before its first label that b holds, when the rest are b's first
/// labels in b's order: then a * b's labels are those, then b's. npos otherwise.
std::size_t joins_in_front(const ExprNode& a, const ExprNode& b) {
  const std::size_t n = a.labels.size();
  std::size_t t = 0;
  while (t < n && !contains_label(b.labels, a.labels[t])) ++t;
  if (n - t > b.labels.size()) return npos;
  for (std::size_t j = 0; t + j < n; ++j) {
    if (!same_label(a.labels[t + j], b.labels[j])) return npos;
  }
  return t;
}

}  // namespace

void product_labels(const ExprNode& a, const ExprNode& b, ExprNode& out) {
  // The factor whose labels join the store (`added`, with its counts) and the one whose store
  // it is, whose implicit labels stay implicit unless the other factor holds them too. The
  // counts are read before a store is locked (both factors may be views of one store), and
  // only the added factor's: reading the other's would cost a scan of a long product.
  const ExprNode* added = &b;
  const ExprNode* base = &a;
  Counted counts;
  Target t;
  bool at_back = true, counted_b = false, joined = false;
  std::size_t in_front = npos;
  auto back = [&](bool newest_only) {  // a's store, b's labels after a's: O(b)
    if (t.store || !a.is_product()) return;
    if (!counted_b) counts = factor_counts(b), counted_b = true;
    t = extend(a, b.labels.size(), true, newest_only);
  };
  auto front = [&](bool newest_only) {  // b's store, a's new labels before b's: O(a)
    if (t.store || !b.is_product()) return;
    if (!joined) in_front = joins_in_front(a, b), joined = true;
    if (in_front == npos) return;
    Counted counts_a = factor_counts(a);
    t = extend(b, in_front, false, newest_only);
    if (t.store) counts = std::move(counts_a), added = &a, base = &b, at_back = false;
  };
  // The longer factor's store first, if it is its newest view; else a copy of a product's.
  if (b.labels.size() > a.labels.size()) {
    front(true), back(true);
  } else {
    back(true), front(true);
  }
  if (a.is_product()) {
    back(false);
  } else {
    front(false);
  }
  if (!t.store) {
    if (!counted_b) counts = factor_counts(b);
    t = store_of(a, counts_of(a), b.labels.size(), true);
  }
  LabelStore& store = *t.store;
  const std::uint64_t version = store.next_version_locked();
  if (at_back) {
    for (std::size_t j = 0; j < b.labels.size(); ++j) {
      const std::size_t first = store.first_locked(), last = store.last_locked();
      if (store.find_locked(b.labels[j], first, last) == last) store.append_locked(b.labels[j], b.extents[j], 0);
    }
  } else {
    for (std::size_t i = in_front; i-- > 0;) store.prepend_locked(a.labels[i], a.extents[i], 0);
  }
  const std::size_t first = store.first_locked(), last = store.last_locked();
  // The implicit labels, those on one factor: the base's that the added factor does not hold,
  // and the added factor's now on one.
  std::vector<std::size_t> candidates;
  candidates.reserve(counts.size() + base->implicit_labels().size());
  for (const auto& [l, n] : counts) {
    const std::size_t at = store.find_locked(l, first, last);
    if (at == last) throw InternalError("tenex: the factor label \"" + l + "\" is not a label of " + added->text());
    store.add_count_locked(at, n);
    candidates.push_back(at);
  }
  for (const std::string& l : base->implicit_labels()) candidates.push_back(store.find_locked(l, first, last));
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  out.implicit.clear();
  for (std::size_t at : candidates) {
    if (at < last && store.count_locked(at) == 1) out.implicit.push_back(store.labels()[at]);
  }
  out.implicit_is_labels = false;
  t.lock.unlock();
  out.labels = NodeLabels::view(t.store, first, last - first, version);
  out.extents = NodeExtents::view(t.store, first, last - first, version);
}

std::vector<std::string> filter_labels(const NodeLabels& order, const std::vector<std::string>& allowed) {
  if (!order.is_view()) return filter_labels(order.vec(), allowed);
  if (order.size() <= allowed.size()) {
    std::vector<std::string> out;
    for (const std::string& l : order) {
      if (contains_label(allowed, l)) out.push_back(l);
    }
    return out;
  }
  std::vector<std::size_t> positions;
  positions.reserve(allowed.size());
  for (const std::string& l : allowed) {
    if (const std::size_t at = find_label(order, l); at < order.size()) positions.push_back(at);
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  std::vector<std::string> out;
  out.reserve(positions.size());
  for (std::size_t at : positions) out.push_back(order[at]);
  return out;
}

}  // namespace tenex::detail
