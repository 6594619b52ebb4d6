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

LabelStore::LabelStore(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)),
      labels_(std::make_unique<std::string[]>(capacity_)),
      extents_(std::make_unique<std::size_t[]>(capacity_)) {
  counts_.reserve(capacity_);
}

std::size_t LabelStore::find(const std::string& label, std::size_t size) const {
  if (size <= indexed_from) {
    for (std::size_t i = 0; i < size; ++i) {
      if (same_label(labels_[i], label)) return i;
    }
    return size;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return find_locked(label, size);
}

std::size_t LabelStore::find_locked(const std::string& label, std::size_t size) const {
  if (size_ <= indexed_from) {
    for (std::size_t i = 0; i < size && i < size_; ++i) {
      if (same_label(labels_[i], label)) return i;
    }
    return size;
  }
  // Each label is in the store once: a view holds it when its position is inside the view.
  auto it = index_.find(std::string_view(label));
  return it == index_.end() || it->second >= size ? size : it->second;
}

void LabelStore::append_locked(const std::string& label, std::size_t extent, std::size_t count) {
  labels_[size_] = label;
  extents_[size_] = extent;
  counts_.push_back(count);
  ++size_;
  count_label_entries_written(1);
  if (size_ == indexed_from + 1) {
    index_.reserve(2 * size_);
    for (std::size_t i = 0; i < size_; ++i) index_.emplace(std::string_view(labels_[i]), i);
  } else if (size_ > indexed_from + 1) {
    index_.emplace(std::string_view(labels_[size_ - 1]), size_ - 1);
  }
}

void LabelStore::add_count_locked(std::size_t position, std::size_t by) {
  counts_[position] += by;
  log_.push_back({version_, position, by});
}

std::vector<std::size_t> LabelStore::counts_at_locked(std::size_t size, std::uint64_t version) const {
  std::vector<std::size_t> counts(counts_.begin(), counts_.begin() + static_cast<std::ptrdiff_t>(size));
  for (std::size_t i = log_.size(); i-- > 0 && log_[i].version > version;) {
    if (log_[i].position < size) counts[log_[i].position] -= log_[i].by;
  }
  return counts;
}

namespace {

using Counted = std::vector<std::pair<std::string, std::size_t>>;

void require_view(const ExprNode& product) {
  if (!product.labels.is_view() || !product.extents.is_view()) {
    throw InternalError("tenex: the product " + product.text() + " holds no label store");
  }
}

/// The labels of the factors of `f` with the number of factors holding each: a product's
/// counts, or once each of another node's implicit labels.
Counted factor_counts(const ExprNode& f) {
  Counted out;
  if (!f.is_product()) {
    for (const std::string& l : f.implicit_labels()) out.emplace_back(l, 1);
    return out;
  }
  require_view(f);
  const LabelStore& store = *f.labels.store();
  std::vector<std::size_t> counts;
  {
    std::lock_guard<std::mutex> lock(store.mutex());
    counts = store.counts_at_locked(f.labels.size(), f.labels.version());
  }
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) out.emplace_back(f.labels[i], counts[i]);
  }
  return out;
}

/// A store holding a's labels and extents with `counts` (a's factors'), room for `extra` more.
std::shared_ptr<LabelStore> store_of(const ExprNode& a, const std::vector<std::size_t>& counts, std::size_t extra) {
  auto store = std::make_shared<LabelStore>(2 * (a.labels.size() + extra));
  std::lock_guard<std::mutex> lock(store->mutex());
  for (std::size_t i = 0; i < a.labels.size(); ++i) store->append_locked(a.labels[i], a.extents[i], counts[i]);
  return store;
}

}  // namespace

void product_labels(const ExprNode& a, const ExprNode& b, ExprNode& out) {
  // b's counts first: b may be a itself, whose store this product may extend.
  const Counted added = factor_counts(b);
  const std::size_t extra = b.labels.size();
  std::shared_ptr<LabelStore> store;
  std::unique_lock<std::mutex> lock;
  if (a.is_product()) {
    require_view(a);
    // Views read the store as const; the one product extending its newest view appends.
    auto shared = std::const_pointer_cast<LabelStore>(a.labels.store());
    std::unique_lock<std::mutex> held(shared->mutex());
    const bool newest = shared->version_locked() == a.labels.version() && shared->size_locked() == a.labels.size();
    if (newest && a.labels.size() + extra <= shared->capacity()) {
      store = std::move(shared);
      lock = std::move(held);
    } else {
      const std::vector<std::size_t> counts = shared->counts_at_locked(a.labels.size(), a.labels.version());
      held.unlock();
      store = store_of(a, counts, extra);
    }
  } else {
    const std::vector<std::string>& implicit = a.implicit_labels();
    std::vector<std::size_t> counts(a.labels.size(), 0);
    for (std::size_t i = 0; i < counts.size(); ++i) counts[i] = contains_label(implicit, a.labels[i]) ? 1 : 0;
    store = store_of(a, counts, extra);
  }
  if (!lock.owns_lock()) lock = std::unique_lock<std::mutex>(store->mutex());
  const std::uint64_t version = store->next_version_locked();
  for (std::size_t j = 0; j < b.labels.size(); ++j) {
    const std::size_t size = store->size_locked();
    if (store->find_locked(b.labels[j], size) == size) store->append_locked(b.labels[j], b.extents[j], 0);
  }
  const std::size_t size = store->size_locked();
  // The implicit labels, those on one factor: a's that b does not hold, and b's now on one.
  std::vector<std::size_t> candidates;
  candidates.reserve(added.size() + a.implicit_labels().size());
  for (const auto& [l, n] : added) {
    const std::size_t at = store->find_locked(l, size);
    if (at == size) throw InternalError("tenex: the factor label "" + l + "" is not a label of " + b.text());
    store->add_count_locked(at, n);
    candidates.push_back(at);
  }
  for (const std::string& l : a.implicit_labels()) candidates.push_back(store->find_locked(l, size));
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  out.implicit.clear();
  for (std::size_t at : candidates) {
    if (at < size && store->count_locked(at) == 1) out.implicit.push_back(store->labels()[at]);
  }
  out.implicit_is_labels = false;
  lock.unlock();
  out.labels = NodeLabels::view(store, size, version);
  out.extents = NodeExtents::view(store, size, version);
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
