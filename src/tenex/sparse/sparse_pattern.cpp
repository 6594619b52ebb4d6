#include "tenex/sparse/sparse_pattern.hpp"

#include <algorithm>
#include <cstdio>

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
