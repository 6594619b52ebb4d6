#include "tenex/sparse/sparse_pattern.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "tenex/error.hpp"
#include "tenex/sparse/sparse_map.hpp"

namespace tenex {

const SparsePattern::Key* SparsePattern::find(const std::vector<std::size_t>& index) const {
  auto it = std::lower_bound(keys.begin(), keys.end(), index,
                             [](const Key& k, const std::vector<std::size_t>& i) { return k.index < i; });
  return it != keys.end() && it->index == index ? &*it : nullptr;
}

namespace detail {

namespace {

struct MapModes {
  const SparseMap* map;
  std::vector<std::size_t> source, target;  // modes of the node
};

/// Enumerates the allowed tuples of the restricted modes for one key: a join of the maps.
/// A map whose source modes are known gives the candidates of its target modes; a mode no
/// map can reach yet runs over its whole extent; every map not used to generate is checked.
class Enumerator {
 public:
  Enumerator(const std::vector<std::size_t>& extents, std::vector<MapModes> maps,
             const std::vector<std::size_t>& row_modes)
      : extents_(extents), maps_(std::move(maps)), row_modes_(row_modes) {
    value_.assign(extents.size(), unset);
    restricted_.assign(extents.size(), 0);
    for (const MapModes& m : maps_) {
      for (std::size_t d : m.source) restricted_[d] = 1;
      for (std::size_t d : m.target) restricted_[d] = 1;
    }
    used_.assign(maps_.size(), 0);
  }

  /// Fills `key` (its index set) with the domains and row count of its allowed tuples.
  void run(const std::vector<std::size_t>& key_modes, SparsePattern::Key& key) {
    for (std::size_t d = 0; d < key_modes.size(); ++d) value_[key_modes[d]] = key.index[d];
    values_.assign(row_modes_.size(), {});
    rows_ = 0;
    extend();
    for (std::size_t d : key_modes) value_[d] = unset;
    key.rows = rows_;
    key.domains.resize(row_modes_.size());
    for (std::size_t r = 0; r < row_modes_.size(); ++r) {
      std::vector<std::size_t>& v = values_[r];
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      key.domains[r] = std::move(v);
    }
  }

 private:
  static constexpr std::size_t unset = static_cast<std::size_t>(-1);

  void extend() {
    for (std::size_t m = 0; m < maps_.size(); ++m) {
      if (used_[m]) continue;
      const MapModes& use = maps_[m];
      bool ready = true;
      for (std::size_t d : use.source) ready = ready && value_[d] != unset;
      if (!ready) continue;
      SparseMap::Index source(use.source.size());
      for (std::size_t d = 0; d < use.source.size(); ++d) source[d] = value_[use.source[d]];
      auto it = use.map->entries().find(source);
      if (it == use.map->entries().end()) return;  // this source allows nothing
      used_[m] = 1;
      bool known = true;
      for (std::size_t d : use.target) known = known && value_[d] != unset;
      if (known) {
        SparseMap::Index target(use.target.size());
        for (std::size_t d = 0; d < use.target.size(); ++d) target[d] = value_[use.target[d]];
        if (it->second.count(target)) extend();
      } else {
        std::vector<std::size_t> set_here;
        for (const SparseMap::Index& t : it->second) {
          bool fits = true;
          for (std::size_t d = 0; d < t.size() && fits; ++d) {
            const std::size_t mode = use.target[d];
            fits = t[d] < extents_[mode] && (value_[mode] == unset || value_[mode] == t[d]);
          }
          if (!fits) continue;
          set_here.clear();
          for (std::size_t d = 0; d < t.size(); ++d) {
            const std::size_t mode = use.target[d];
            if (value_[mode] == unset) {
              value_[mode] = t[d];
              set_here.push_back(mode);
            }
          }
          extend();
          for (std::size_t mode : set_here) value_[mode] = unset;
        }
      }
      used_[m] = 0;
      return;
    }
    for (std::size_t d = 0; d < extents_.size(); ++d) {
      if (!restricted_[d] || value_[d] != unset) continue;
      for (std::size_t v = 0; v < extents_[d]; ++v) {
        value_[d] = v;
        extend();
      }
      value_[d] = unset;
      return;
    }
    ++rows_;
    for (std::size_t r = 0; r < row_modes_.size(); ++r) values_[r].push_back(value_[row_modes_[r]]);
  }

  const std::vector<std::size_t>& extents_;
  std::vector<MapModes> maps_;
  std::vector<std::size_t> row_modes_;
  std::vector<std::size_t> value_;
  std::vector<char> restricted_;
  std::vector<char> used_;
  std::vector<std::vector<std::size_t>> values_;
  std::size_t rows_ = 0;
};

std::size_t mode_of(const std::vector<std::string>& labels, const std::string& label) {
  const auto at = static_cast<std::size_t>(std::find(labels.begin(), labels.end(), label) - labels.begin());
  if (at == labels.size()) {
    throw InternalError("tenex: sparse pattern: label \"" + label + "\" of a map is not on the node");
  }
  return at;
}

}  // namespace

std::shared_ptr<const SparsePattern> make_sparse_pattern(const std::vector<std::string>& labels,
                                                         const std::vector<std::size_t>& extents,
                                                         const std::vector<LabeledMap>& maps) {
  if (maps.empty()) return nullptr;
  std::vector<MapModes> modes;
  for (const LabeledMap& use : maps) {
    MapModes m{use.map, {}, {}};
    for (const std::string& l : *use.source) m.source.push_back(mode_of(labels, l));
    for (const std::string& l : *use.target) m.target.push_back(mode_of(labels, l));
    modes.push_back(std::move(m));
  }
  // The key: the source of a map whose source no other map restricts (i of i->a, a->Q), the
  // one with most labels ((i,j) of (i,j)->(a,b) beside i->a), then the first by label names:
  // nodes with the same maps in any order get the same layout.
  std::size_t first = modes.size();
  for (std::size_t m = 0; m < modes.size(); ++m) {
    bool targeted = false;
    for (std::size_t o = 0; o < modes.size(); ++o) {
      for (std::size_t d : modes[m].source) {
        targeted = targeted || (o != m && std::count(modes[o].target.begin(), modes[o].target.end(), d) > 0);
      }
    }
    if (targeted) continue;
    auto names = [&](std::size_t k) { return std::make_pair(*maps[k].source, *maps[k].target); };
    if (first == modes.size() || modes[m].source.size() > modes[first].source.size() ||
        (modes[m].source.size() == modes[first].source.size() && names(m) < names(first))) {
      first = m;
    }
  }
  if (first == modes.size()) first = 0;
  std::rotate(modes.begin(), modes.begin() + static_cast<std::ptrdiff_t>(first),
              modes.begin() + static_cast<std::ptrdiff_t>(first) + 1);

  auto pattern = std::make_shared<SparsePattern>();
  pattern->extents = extents;
  pattern->key_modes = modes[0].source;
  std::vector<char> restricted(extents.size(), 0);
  for (const MapModes& m : modes) {
    for (std::size_t d : m.source) restricted[d] = 1;
    for (std::size_t d : m.target) restricted[d] = 1;
  }
  pattern->total = 1;
  for (std::size_t e : extents) pattern->total *= e;
  for (std::size_t d = 0; d < extents.size(); ++d) {
    const bool key = std::count(pattern->key_modes.begin(), pattern->key_modes.end(), d) > 0;
    if (key) continue;
    if (restricted[d]) {
      pattern->row_modes.push_back(d);
    } else {
      pattern->free_modes.push_back(d);
      pattern->free_size *= extents[d];
    }
  }
  Enumerator enumerate(extents, modes, pattern->row_modes);
  std::size_t offset = 0;
  for (const auto& [source, targets] : modes[0].map->entries()) {
    bool in_range = true;
    for (std::size_t d = 0; d < source.size(); ++d) in_range = in_range && source[d] < extents[modes[0].source[d]];
    if (!in_range || targets.empty()) continue;
    SparsePattern::Key key;
    key.index = source;
    enumerate.run(pattern->key_modes, key);
    if (key.rows == 0) continue;
    std::size_t product = 1;
    for (const auto& domain : key.domains) product *= domain.size();
    pattern->product = pattern->product && product == key.rows;
    key.offset = offset;
    offset += key.rows * pattern->free_size;
    pattern->keys.push_back(std::move(key));
  }
  pattern->allowed = offset;
  return pattern;
}

namespace {

/// The three sides of a product as sparse_product_cost reads them: c, a, b.
struct ProductSides {
  const std::vector<std::string>* labels[3];
  const SparsePattern* patterns[3];
  const std::vector<std::size_t>* extents[3];
};

/// A side whose key the loop's key gives: its key's places in the loop's key and, per row mode,
/// the label it restricts (all.size() for a key label).
struct Use {
  const SparsePattern* p;
  std::vector<std::size_t> pick, label;
  bool on_key = false;  // carries a key label (so it differs from key to key)
};

/// Per label of the product: a key label, or rows (on a and c), columns (b and c), summed (a and b).
enum LabelRole { kKeyLabel, kRows, kColumns, kSummed };

/// What the walk over the keys adds up (see sparse_product_cost).
struct KeyTally {
  double singles = 0, grouped_flops = 0, gathered = 0, last_rows = 0, last_block = 0;
  bool have_before = false;
};

/// The sides whose keys lie within the loop's key.
std::vector<Use> uses_of(const ProductSides& x, const std::vector<std::string>& all,
                         const std::vector<std::string>& key) {
  auto key_place = [&](const std::string& l) {
    return static_cast<std::size_t>(std::find(key.begin(), key.end(), l) - key.begin());
  };
  std::vector<Use> uses;
  for (int s = 0; s < 3; ++s) {
    const SparsePattern* p = x.patterns[s];
    if (!p || !p->product) continue;
    Use u{p, {}, {}};
    bool inside = true;
    for (std::size_t d : p->key_modes) {
      const std::size_t at = key_place((*x.labels[s])[d]);
      inside = inside && at < key.size();
      u.pick.push_back(at);
    }
    if (!inside) continue;
    for (std::size_t d : p->row_modes) {
      const std::string& l = (*x.labels[s])[d];
      u.label.push_back(key_place(l) < key.size()
                            ? all.size()
                            : static_cast<std::size_t>(std::find(all.begin(), all.end(), l) - all.begin()));
    }
    uses.push_back(std::move(u));
  }
  return uses;
}

/// Each label's role in the product.
std::vector<LabelRole> roles_of(const std::vector<std::string>& all, const std::vector<std::string>& key,
                                const std::vector<std::string>& c_labels, const std::vector<std::string>& a_labels) {
  std::vector<LabelRole> role(all.size());
  for (std::size_t l = 0; l < all.size(); ++l) {
    const bool in_c = std::count(c_labels.begin(), c_labels.end(), all[l]) > 0;
    const bool in_a = std::count(a_labels.begin(), a_labels.end(), all[l]) > 0;
    const bool is_key = std::find(key.begin(), key.end(), all[l]) != key.end();
    role[l] = is_key ? kKeyLabel : in_c && in_a ? kRows : in_c ? kColumns : kSummed;
  }
  return role;
}

/// One key of the loop counted: its allowed triples, and whether it joins the key before in a
/// GEMM (equal domains, the same b), runs alone as a row times a matrix, or as a GEMM of its
/// own. `size` is scratch, per label.
void count_key(const std::vector<Use>& uses, const std::vector<const SparsePattern::Key*>& found,
               const std::vector<const SparsePattern::Key*>& before, const std::vector<LabelRole>& role,
               const std::vector<double>& extent, bool b_shared, std::vector<double>& size, SparseProductCost& cost,
               KeyTally& t) {
  const std::size_t labels = role.size();
  for (std::size_t l = 0; l < labels; ++l) size[l] = role[l] == kKeyLabel ? 1 : extent[l];
  for (std::size_t u = 0; u < uses.size(); ++u) {
    for (std::size_t r = 0; r < uses[u].label.size(); ++r) {
      const std::size_t l = uses[u].label[r];
      if (l < labels) size[l] = std::min(size[l], static_cast<double>(found[u]->domains[r].size()));
    }
  }
  // Rows (labels of a and c), summed (a and b), columns (b and c).
  double m = 1, sum = 1, n = 1;
  for (std::size_t l = 0; l < labels; ++l) {
    if (role[l] != kKeyLabel) (role[l] == kRows ? m : role[l] == kColumns ? n : sum) *= size[l];
  }
  const double triples = m * sum * n;
  cost.triples += triples;
  bool same = b_shared && t.have_before;
  for (std::size_t u = 0; u < uses.size() && same; ++u) same = found[u]->domains == before[u]->domains;
  if (same) {
    ++cost.grouped_keys;
    if (t.last_rows == 1) {  // the key before was counted as a row times a matrix: a GEMM now
      t.singles -= t.last_block;
      t.grouped_flops += 2 * t.last_block;
      t.gathered += t.last_block / std::max(1.0, m);  // its block of b is gathered once
    }
    t.grouped_flops += 2 * triples;
    t.gathered += m * sum + m * n;
    t.last_rows = 0;
  } else if (m == 1) {
    t.singles += triples;
    t.last_rows = 1;
    t.last_block = triples;
  } else {
    t.grouped_flops += 2 * triples;
    t.gathered += m * sum + sum * n + m * n;
    t.last_rows = 0;
  }
}

}  // namespace

SparseProductCost sparse_product_cost(const std::vector<std::string>& c_labels, const SparsePattern* c,
                                      const std::vector<std::string>& a_labels, const SparsePattern* a,
                                      const std::vector<std::string>& b_labels, const SparsePattern* b,
                                      const std::vector<std::size_t>& c_extents,
                                      const std::vector<std::size_t>& a_extents,
                                      const std::vector<std::size_t>& b_extents) {
  constexpr double kTriple = 0.7e-9, kGroupedFlop = 40e-12, kGathered = 1e-9, kKey = 1e-6;
  constexpr double kDenseFlop = 11e-12, kAround = 2e-9, kSmall = 1e-3;
  SparseProductCost cost;
  const ProductSides x{{&c_labels, &a_labels, &b_labels}, {c, a, b}, {&c_extents, &a_extents, &b_extents}};
  // Every label of the product, with its extent.
  std::vector<std::string> all;
  std::vector<double> extent;
  for (int s = 0; s < 3; ++s) {
    for (std::size_t d = 0; d < x.labels[s]->size(); ++d) {
      if (std::find(all.begin(), all.end(), (*x.labels[s])[d]) == all.end()) {
        all.push_back((*x.labels[s])[d]);
        extent.push_back(static_cast<double>((*x.extents[s])[d]));
      }
    }
  }
  double space = 1;
  for (double e : extent) space *= e;
  cost.dense_flops = 2 * space;
  const SparsePattern* provider = nullptr;
  int provider_side = -1;
  for (int s = 0; s < 3 && !provider; ++s) {
    if (x.patterns[s] && x.patterns[s]->product) {
      provider = x.patterns[s];
      provider_side = s;
    }
  }
  if (!provider) return cost;
  cost.applies = true;
  std::vector<std::string> key;
  for (std::size_t d : provider->key_modes) key.push_back((*x.labels[provider_side])[d]);
  bool b_shared = true;
  for (const std::string& l : b_labels) b_shared = b_shared && std::find(key.begin(), key.end(), l) == key.end();
  const std::vector<Use> uses = uses_of(x, all, key);
  const std::vector<LabelRole> role = roles_of(all, key, c_labels, a_labels);
  std::vector<double> size(all.size());
  std::vector<std::size_t> index;
  std::vector<const SparsePattern::Key*> found(uses.size()), before(uses.size(), nullptr);
  KeyTally t;
  for (const SparsePattern::Key& k : provider->keys) {
    bool zero = false;
    for (std::size_t u = 0; u < uses.size() && !zero; ++u) {
      index.resize(uses[u].pick.size());
      for (std::size_t d = 0; d < index.size(); ++d) index[d] = k.index[uses[u].pick[d]];
      found[u] = uses[u].p == provider ? &k : uses[u].p->find(index);
      zero = found[u] == nullptr;
    }
    if (zero) {
      t.have_before = false;
      continue;
    }
    ++cost.keys;
    count_key(uses, found, before, role, extent, b_shared, size, cost, t);
    before = found;
    t.have_before = true;
  }
  cost.sparse_seconds = t.singles * kTriple + t.grouped_flops * kGroupedFlop + t.gathered * kGathered +
                        static_cast<double>(cost.keys) * kKey;
  double around = 0;  // elements expanded (compact operands) and gathered (a compact result)
  for (int s = 0; s < 3; ++s) {
    if (!x.patterns[s] || !x.patterns[s]->product) continue;
    double total = 1;
    for (std::size_t e : *x.extents[s]) total *= static_cast<double>(e);
    around += total;
  }
  cost.dense_seconds = cost.dense_flops * kDenseFlop + around * kAround;
  // Below a millisecond the choice hardly matters: the per-key products, whose memory
  // follows the maps, are kept.
  cost.dense = cost.dense_seconds < cost.sparse_seconds && cost.sparse_seconds > kSmall;
  return cost;
}

std::string format_fraction(double fraction) {
  char text[32];
  const double percent = fraction * 100.0;
  if (percent >= 1.0 || percent == 0.0) {
    std::snprintf(text, sizeof text, "%.1f%%", percent);
  } else {
    std::snprintf(text, sizeof text, "%.2g%%", percent);
  }
  return text;
}

}  // namespace detail
}  // namespace tenex
