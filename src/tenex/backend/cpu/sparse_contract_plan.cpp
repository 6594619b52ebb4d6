// The plan of a sparse product run key by key (sparse_contract_plan.hpp): the loop's key and
// labels, once per product, and at each key the blocks that pair and the offsets of what they
// multiply, as sorted domains intersected and turned into offset lists.
#include "tenex/backend/cpu/sparse_contract_plan.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "tenex/backend/cpu/compact_layout.hpp"

namespace tenex::detail::cpu::sparse {
namespace {

void prepare(Side& s, const std::vector<std::string>& key) {
  const OpNode& n = *s.node;
  s.strides = dense_strides(n.extents);
  s.key_of_label.assign(n.labels.size(), -1);
  for (std::size_t d = 0; d < n.labels.size(); ++d) {
    const auto at = std::find(key.begin(), key.end(), n.labels[d]) - key.begin();
    if (static_cast<std::size_t>(at) < key.size()) s.key_of_label[d] = static_cast<int>(at);
  }
  const SparsePattern* p = n.pattern.get();
  if (p && p->product) {
    bool inside = true;
    for (std::size_t d : p->key_modes) inside = inside && s.key_of_label[d] >= 0;
    if (inside) {
      s.pattern = p;
      for (std::size_t d : p->key_modes) s.key_pick.push_back(static_cast<std::size_t>(s.key_of_label[d]));
      s.free_strides.assign(n.labels.size(), 0);
      std::size_t stride = 1;
      for (std::size_t i = p->free_modes.size(); i-- > 0;) {
        s.free_strides[p->free_modes[i]] = stride;
        stride *= p->extents[p->free_modes[i]];
      }
    }
  }
}

void intersect_into(std::vector<std::size_t>& domain, const std::vector<std::size_t>& with,
                    std::vector<std::size_t>& tmp) {
  tmp.clear();
  std::set_intersection(domain.begin(), domain.end(), with.begin(), with.end(), std::back_inserter(tmp));
  domain.swap(tmp);
}

void cartesian(const std::vector<const Offsets*>& parts, Offsets& out, Offsets& next) {
  if (parts.size() == 1) {
    out = *parts[0];
    return;
  }
  out.assign(1, 0);
  for (const Offsets* part : parts) {
    const std::size_t n = out.size();
    next.clear();
    next.reserve(n * part->size());
    for (std::size_t i = 0; i < n; ++i) {
      for (std::ptrdiff_t o : *part) next.push_back(out[i] + o);
    }
    out.swap(next);
  }
}

/// Whether the product's labels allow the per-key loop: every non-key label is on the
/// result and one operand, or on both operands and not the result.
bool loopable(const OpNode& c, const OpNode& a, const OpNode& b, const std::vector<std::string>& key) {
  auto has = [](const OpNode& n, const std::string& l) {
    return std::find(n.labels.begin(), n.labels.end(), l) != n.labels.end();
  };
  for (const OpNode* n : {&a, &b, &c}) {
    for (const std::string& l : n->labels) {
      if (std::find(key.begin(), key.end(), l) != key.end()) continue;
      const int count = (has(a, l) ? 1 : 0) + (has(b, l) ? 1 : 0) + (has(c, l) ? 1 : 0);
      if (count != 2) return false;
    }
  }
  return true;
}

/// The key: the labels of the first product pattern's key modes among c, a, b.
void choose_key(const OpNode* const (&nodes)[3], KeyLoop& loop) {
  const OpNode* provider_node = nullptr;
  for (const OpNode* n : nodes) {
    if (!loop.provider && n->pattern && n->pattern->product) {
      loop.provider = n->pattern.get();
      provider_node = n;
    }
  }
  if (loop.provider) {
    for (std::size_t d : loop.provider->key_modes) loop.key.push_back(provider_node->labels[d]);
  }
}

/// The labels of the problem with their extents, sorted into M, N and S, each side's modes
/// by label, and which labels are the key's.
void number_labels(const OpNode* const (&nodes)[3], KeyLoop& loop) {
  const OpNode& cn = *nodes[0];
  const std::vector<std::string>& key = loop.key;
  std::vector<std::string>& labels = loop.labels;
  for (const OpNode* n : nodes) {
    for (std::size_t d = 0; d < n->labels.size(); ++d) {
      if (std::find(labels.begin(), labels.end(), n->labels[d]) == labels.end()) {
        labels.push_back(n->labels[d]);
        loop.extent.push_back(n->extents[d]);
      }
    }
  }
  auto label_id = [&](const std::string& l) {
    return static_cast<std::size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
  };
  auto in = [](const OpNode& n, const std::string& l) {
    return std::find(n.labels.begin(), n.labels.end(), l) != n.labels.end();
  };
  auto is_key = [&](const std::string& l) { return std::find(key.begin(), key.end(), l) != key.end(); };
  for (const std::string& l : nodes[1]->labels) {
    if (is_key(l)) continue;
    (in(cn, l) ? loop.m_labels : loop.s_labels).push_back(label_id(l));
  }
  for (const std::string& l : nodes[2]->labels) {
    if (!is_key(l) && in(cn, l)) loop.n_labels.push_back(label_id(l));
  }
  loop.full.resize(labels.size());
  for (std::size_t l = 0; l < labels.size(); ++l) {
    loop.full[l].resize(loop.extent[l]);
    std::iota(loop.full[l].begin(), loop.full[l].end(), std::size_t{0});
  }
  loop.key_label.resize(labels.size());
  for (std::size_t l = 0; l < labels.size(); ++l) loop.key_label[l] = is_key(labels[l]) ? 1 : 0;
  for (int i = 0; i < 3; ++i) {
    for (const std::string& l : nodes[i]->labels) loop.id_of[i].push_back(label_id(l));
  }
  for (const std::string& l : key) loop.key_in_result = loop.key_in_result && in(cn, l);
}

/// Each side's block at the key (found[i], null for a side without a pattern); false where
/// a side has none there.
bool find_blocks(const KeyLoop& loop, const SparsePattern::Key& pk, KeyScratch& w,
                 const SparsePattern::Key* (&found)[3]) {
  // The key's values by key label.
  const std::vector<std::size_t>& s = pk.index;
  for (int i = 0; i < 3; ++i) {
    const Side& side = loop.sides[i];
    if (!side.pattern) continue;
    w.index.resize(side.key_pick.size());
    for (std::size_t d = 0; d < side.key_pick.size(); ++d) w.index[d] = s[side.key_pick[d]];
    found[i] = side.pattern == loop.provider ? &pk : side.pattern->find(w.index);
    if (found[i] == nullptr) return false;
  }
  return true;
}

/// The key's domain of each non-key label (w.domain_of): the one side restricting it, read in
/// place, the intersection of several, or every value; false where one is empty, or where a
/// side restricts a key label to values without the key's.
bool intersect_domains(const KeyLoop& loop, const SparsePattern::Key& pk, const SparsePattern::Key* const (&found)[3],
                       KeyScratch& w) {
  const std::vector<std::size_t>& s = pk.index;
  std::vector<const std::vector<std::size_t>*>& domain = w.domain_of;
  bool zero = false;
  std::fill(w.restricted.begin(), w.restricted.end(), 0);
  for (int i = 0; i < 3 && !zero; ++i) {
    if (!found[i]) continue;
    const Side& side = loop.sides[i];
    for (std::size_t r = 0; r < side.pattern->row_modes.size(); ++r) {
      const std::size_t mode = side.pattern->row_modes[r];
      const std::vector<std::size_t>& dom = found[i]->domains[r];
      const int kp = side.key_of_label[mode];
      if (kp >= 0) {  // a key label the side restricts: its value must be allowed
        zero = !std::binary_search(dom.begin(), dom.end(), s[static_cast<std::size_t>(kp)]);
        continue;
      }
      const std::size_t l = loop.id_of[i][mode];
      if (!w.restricted[l]) {
        domain[l] = &dom;  // read in place unless another side restricts it too
        w.restricted[l] = 1;
      } else {
        if (domain[l] != &w.domain[l]) w.domain[l] = *domain[l];
        intersect_into(w.domain[l], dom, w.tmp);
        domain[l] = &w.domain[l];
      }
    }
  }
  if (zero) return false;
  for (std::size_t l = 0; l < loop.labels.size(); ++l) {
    if (!w.restricted[l] && !loop.key_label[l]) domain[l] = &loop.full[l];
    if (!loop.key_label[l] && domain[l]->empty()) zero = true;
  }
  return !zero;
}

/// Offsets of side i along each of its non-key labels at the key (w.offsets), and its base:
/// where its block starts, and the key labels' values in it.
std::ptrdiff_t side_offsets(const KeyLoop& loop, int i, const SparsePattern::Key& pk, const SparsePattern::Key* found,
                            KeyScratch& w) {
  const std::vector<std::size_t>& s = pk.index;
  const Side& side = loop.sides[i];
  const OpNode& n = *side.node;
  const bool blocks = side.compact;
  std::vector<std::size_t>& row_stride = w.row_stride;
  std::ptrdiff_t base = 0;
  if (blocks) {
    const SparsePattern& p = *side.pattern;
    row_stride.assign(p.row_modes.size(), p.free_size);
    for (std::size_t r = p.row_modes.size(); r-- > 1;) {
      row_stride[r - 1] = row_stride[r] * found->domains[r].size();
    }
    base = static_cast<std::ptrdiff_t>(found->offset);
  }
  for (std::size_t d = 0; d < n.labels.size(); ++d) {
    const int kp = side.key_of_label[d];
    const std::size_t l = loop.id_of[i][d];
    Offsets& off = w.offsets[static_cast<std::size_t>(i) * loop.labels.size() + l];
    std::size_t stride = blocks ? side.free_strides[d] : side.strides[d];
    const std::vector<std::size_t>* within = nullptr;  // the side's domain (a row mode)
    if (blocks) {
      const auto& rows = side.pattern->row_modes;
      const auto r = static_cast<std::size_t>(std::find(rows.begin(), rows.end(), d) - rows.begin());
      if (r < rows.size()) {
        within = &found->domains[r];
        stride = row_stride[r];
      } else if (std::count(side.pattern->key_modes.begin(), side.pattern->key_modes.end(), d)) {
        continue;  // selects the block
      }
    }
    if (kp >= 0) {
      const std::size_t v = s[static_cast<std::size_t>(kp)];
      const std::size_t at =
          within ? static_cast<std::size_t>(std::lower_bound(within->begin(), within->end(), v) - within->begin()) : v;
      base += static_cast<std::ptrdiff_t>(at * stride);
      continue;
    }
    const std::vector<std::size_t>& dom = *w.domain_of[l];
    off.resize(dom.size());
    if (within) {  // positions of the domain's values in the side's (a superset)
      std::size_t p = 0;
      for (std::size_t t = 0; t < dom.size(); ++t) {
        while ((*within)[p] < dom[t]) ++p;
        off[t] = static_cast<std::ptrdiff_t>(p * stride);
      }
    } else {
      for (std::size_t t = 0; t < dom.size(); ++t) off[t] = static_cast<std::ptrdiff_t>(dom[t] * stride);
    }
  }
  return base;
}

/// The offsets of the elements the key multiplies (w.am .. w.cn): each side's offsets along
/// its labels of M, S or N, combined.
void element_offsets(const KeyLoop& loop, KeyScratch& w) {
  auto parts = [&](int side, const std::vector<std::size_t>& ids, Offsets& out) {
    w.list.clear();
    for (std::size_t l : ids) w.list.push_back(&w.offsets[static_cast<std::size_t>(side) * loop.labels.size() + l]);
    cartesian(w.list, out, w.next);
  };
  parts(1, loop.m_labels, w.am);
  parts(1, loop.s_labels, w.as);
  parts(2, loop.s_labels, w.bs);
  parts(2, loop.n_labels, w.bn);
  // The result's M and N offsets, in A's and B's label order.
  parts(0, loop.m_labels, w.cm);
  parts(0, loop.n_labels, w.cn);
}

}  // namespace

KeyLoop key_loop(const OpNode& c, const OpNode& a, const OpNode& b) {
  const OpNode* const nodes[3] = {&c, &a, &b};
  KeyLoop loop;
  choose_key(nodes, loop);
  for (int k = 0; k < 3; ++k) {
    loop.sides[k].node = nodes[k];
    loop.sides[k].compact = nodes[k]->blocks();
  }
  for (Side& s : loop.sides) prepare(s, loop.key);
  // A compact operand whose key is not within the loop's key is read expanded.
  for (int k = 1; k < 3; ++k) {
    Side& s = loop.sides[k];
    if (s.compact && !s.pattern) {
      s.expanded = true;
      s.compact = false;
    }
  }
  loop.runs = loop.provider && loopable(c, a, b, loop.key) && !(loop.sides[0].compact && !loop.sides[0].pattern);
  if (!loop.runs) return loop;
  number_labels(nodes, loop);
  for (int kp : loop.sides[2].key_of_label) loop.shared_b = loop.shared_b && kp < 0;
  return loop;
}

void start_pairing(const KeyLoop& loop, KeyScratch& w) {
  w.domain.resize(loop.labels.size());
  w.domain_of.assign(loop.labels.size(), nullptr);
  w.restricted.resize(loop.labels.size());
  w.offsets.resize(3 * loop.labels.size());
}

bool pair_blocks(const KeyLoop& loop, const SparsePattern::Key& pk, KeyScratch& w, std::ptrdiff_t (&base)[3]) {
  const SparsePattern::Key* found[3] = {nullptr, nullptr, nullptr};
  if (!find_blocks(loop, pk, w, found) || !intersect_domains(loop, pk, found, w)) return false;
  for (int i = 0; i < 3; ++i) base[i] = side_offsets(loop, i, pk, found[i], w);
  element_offsets(loop, w);
  return true;
}

}  // namespace tenex::detail::cpu::sparse
