#include "tenex/graph/contraction_tree/network.hpp"

#include <algorithm>
#include <cmath>

#include "tenex/error.hpp"

namespace tenex::tree {

Network make_network(const std::vector<std::vector<std::string>>& operands,
                     const std::map<std::string, std::size_t>& extents, const std::vector<std::string>& keep) {
  Network out;
  std::map<std::string, Label> ids;
  auto id_of = [&](const std::string& l) {
    auto [it, inserted] = ids.emplace(l, static_cast<Label>(out.extent.size()));
    if (inserted) {
      const auto e = extents.find(l);
      if (e == extents.end()) throw ShapeError("tenex: contraction order: the label \"" + l + "\" has no extent");
      out.extent.push_back(static_cast<double>(e->second));
      out.log2_extent.push_back(e->second == 0 ? -1e300 : std::log2(static_cast<double>(e->second)));
      out.kept.push_back(0);
      out.holders.push_back(0);
      out.names.push_back(l);
    }
    return it->second;
  };
  for (const auto& labels : operands) {
    std::vector<Label> s;
    for (const std::string& l : labels) s.push_back(id_of(l));
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (Label l : s) ++out.holders[static_cast<std::size_t>(l)];
    out.inputs.push_back(std::move(s));
  }
  for (const std::string& l : keep) {
    if (auto it = ids.find(l); it != ids.end()) out.kept[static_cast<std::size_t>(it->second)] = 1;
  }
  return out;
}

Legs Network::leaf(std::size_t input) const {
  Legs legs;
  legs.reserve(inputs[input].size());
  for (Label l : inputs[input]) legs.emplace_back(l, 1);
  return legs;
}

double Network::log2_size(const Legs& legs) const {
  double s = 0;
  for (const auto& [l, count] : legs) s += log2_extent[static_cast<std::size_t>(l)];
  return s;
}

Legs Network::merge(const Legs& a, const Legs& b, double& log2_union, bool& summed) const {
  Legs out;
  out.reserve(a.size() + b.size());
  log2_union = 0;
  summed = false;
  auto keep = [&](Label l, int count) {
    const auto u = static_cast<std::size_t>(l);
    log2_union += log2_extent[u];
    if (kept[u] || count < holders[u]) {
      out.emplace_back(l, count);
    } else {
      summed = true;
    }
  };
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      keep(a[i].first, a[i].second);
      ++i;
    } else if (i == a.size() || b[j].first < a[i].first) {
      keep(b[j].first, b[j].second);
      ++j;
    } else {
      keep(a[i].first, a[i].second + b[j].second);
      ++i;
      ++j;
    }
  }
  return out;
}

Network Network::with_fixed(const std::vector<Label>& fixed) const {
  Network out = *this;
  for (Label l : fixed) {
    out.extent[static_cast<std::size_t>(l)] = 1;
    out.log2_extent[static_cast<std::size_t>(l)] = 0;
  }
  return out;
}

double log2_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b < -1e299) return a;
  return a + std::log2(1 + std::exp2(b - a));
}

}  // namespace tenex::tree
