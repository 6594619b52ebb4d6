#include "support/reference.hpp"

#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace tenex_test::reference {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Distinct labels of all arrays with their extents; throws on a label with two extents.
template <class V>
std::map<std::string, std::size_t> label_extents(const std::vector<const BasicArray<V>*>& arrays) {
  std::map<std::string, std::size_t> extents;
  for (const BasicArray<V>* a : arrays) {
    for (std::size_t m = 0; m < a->labels.size(); ++m) {
      auto [it, inserted] = extents.emplace(a->labels[m], a->extents[m]);
      if (!inserted && it->second != a->extents[m]) {
        throw std::invalid_argument("reference: label " + a->labels[m] + " has extents " + std::to_string(it->second) +
                                    " and " + std::to_string(a->extents[m]));
      }
    }
  }
  return extents;
}

// For each mode of `a`, the position of its label in `all`; and the row-major strides of `a`.
struct Addressing {
  std::vector<std::size_t> label_of_mode;
  std::vector<std::size_t> strides;
};

template <class V>
Addressing addressing(const BasicArray<V>& a, const Labels& all) {
  Addressing ad;
  ad.strides.assign(a.extents.size(), 1);
  for (std::size_t m = a.extents.size(); m-- > 1;) ad.strides[m - 1] = ad.strides[m] * a.extents[m];
  for (const std::string& l : a.labels) {
    std::size_t pos = 0;
    while (pos < all.size() && all[pos] != l) ++pos;
    if (pos == all.size()) throw std::invalid_argument("reference: label " + l + " is not in the index space");
    ad.label_of_mode.push_back(pos);
  }
  return ad;
}

std::size_t offset_of(const Addressing& ad, const std::vector<std::size_t>& index) {
  std::size_t off = 0;
  for (std::size_t m = 0; m < ad.strides.size(); ++m) off += ad.strides[m] * index[ad.label_of_mode[m]];
  return off;
}

// Calls f(index) for every combination of label values (row-major over `extents`).
template <class F>
void for_each_index(const Extents& extents, F&& f) {
  for (std::size_t e : extents) {
    if (e == 0) return;
  }
  std::vector<std::size_t> index(extents.size(), 0);
  while (true) {
    f(index);
    std::size_t d = extents.size();
    while (d > 0) {
      --d;
      if (++index[d] < extents[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (extents.empty()) return;
  }
}

void check_unique(const Labels& labels, const char* what) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[i] == labels[j])
        throw std::invalid_argument(std::string("reference: ") + what + " repeats " + labels[i]);
    }
  }
}

}  // namespace

Labels parse_labels(std::string_view text) {
  Labels labels;
  if (trim(text).empty()) return labels;
  while (true) {
    std::size_t comma = text.find(',');
    labels.emplace_back(trim(text.substr(0, comma)));
    if (labels.back().empty()) throw std::invalid_argument("reference: empty label in " + std::string(text));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return labels;
}

std::string join_labels(const Labels& labels) {
  std::string s;
  for (std::size_t i = 0; i < labels.size(); ++i) s += (i ? "," : "") + labels[i];
  return s;
}

std::string format_extents(const Extents& extents) {
  std::string s = "{";
  for (std::size_t i = 0; i < extents.size(); ++i) s += (i ? ", " : "") + std::to_string(extents[i]);
  return s + "}";
}

std::size_t element_count(const Extents& extents) {
  std::size_t n = 1;
  for (std::size_t e : extents) n *= e;
  return n;
}

namespace {

template <class V>
BasicArray<V> make_array_of(std::string_view labels, Extents extents, std::vector<V> values) {
  BasicArray<V> a{parse_labels(labels), std::move(extents), std::move(values)};
  if (a.labels.size() != a.extents.size()) throw std::invalid_argument("reference: labels do not match the rank");
  if (a.values.size() != element_count(a.extents)) throw std::invalid_argument("reference: wrong number of values");
  label_extents<V>({&a});
  return a;
}

template <class V>
BasicArray<V> einsum_of(const std::vector<BasicArray<V>>& operands, const Labels& out_labels) {
  check_unique(out_labels, "output");
  std::vector<const BasicArray<V>*> ptrs;
  for (const BasicArray<V>& a : operands) ptrs.push_back(&a);
  const auto extent_of = label_extents(ptrs);

  // Index space: output labels first, then every summed label.
  Labels all = out_labels;
  for (const auto& [label, extent] : extent_of) {
    bool in_out = false;
    for (const auto& o : out_labels) in_out = in_out || o == label;
    if (!in_out) all.push_back(label);
  }
  Extents all_extents;
  for (const std::string& l : all) {
    auto it = extent_of.find(l);
    if (it == extent_of.end()) throw std::invalid_argument("reference: output label " + l + " is in no operand");
    all_extents.push_back(it->second);
  }

  BasicArray<V> out;
  out.labels = out_labels;
  out.extents.assign(all_extents.begin(), all_extents.begin() + static_cast<std::ptrdiff_t>(out_labels.size()));
  out.values.assign(element_count(out.extents), V(0));
  const Addressing out_ad = addressing(out, all);
  std::vector<Addressing> ads;
  for (const BasicArray<V>& a : operands) ads.push_back(addressing(a, all));

  for_each_index(all_extents, [&](const std::vector<std::size_t>& index) {
    V product(1);
    for (std::size_t k = 0; k < operands.size(); ++k) product *= operands[k].values[offset_of(ads[k], index)];
    out.values[offset_of(out_ad, index)] += product;
  });
  return out;
}

template <class V>
BasicArray<V> elementwise_of(Op op, const BasicArray<V>& a, const BasicArray<V>& b, const Labels& out_labels) {
  check_unique(out_labels, "output");
  const auto extent_of = label_extents<V>({&a, &b});
  for (const auto& [label, extent] : extent_of) {
    bool in_out = false;
    for (const auto& o : out_labels) in_out = in_out || o == label;
    if (!in_out) throw std::invalid_argument("reference: elementwise operand label " + label + " is not in the output");
  }
  BasicArray<V> out;
  out.labels = out_labels;
  for (const std::string& l : out_labels) {
    auto it = extent_of.find(l);
    if (it == extent_of.end()) throw std::invalid_argument("reference: output label " + l + " is in no operand");
    out.extents.push_back(it->second);
  }
  out.values.assign(element_count(out.extents), V(0));
  const Addressing out_ad = addressing(out, out_labels), a_ad = addressing(a, out_labels),
                   b_ad = addressing(b, out_labels);
  for_each_index(out.extents, [&](const std::vector<std::size_t>& index) {
    const V x = a.values[offset_of(a_ad, index)];
    const V y = b.values[offset_of(b_ad, index)];
    V r(0);
    switch (op) {
      case Op::add: r = x + y; break;
      case Op::subtract: r = x - y; break;
      case Op::multiply: r = x * y; break;
      case Op::divide: r = x / y; break;
    }
    out.values[offset_of(out_ad, index)] = r;
  });
  return out;
}

template <class V>
BasicArray<V> permuted_of(const BasicArray<V>& a, const Labels& labels) {
  check_unique(a.labels, "permuted input");
  if (labels.size() != a.labels.size()) throw std::invalid_argument("reference: permuted needs the same labels");
  return einsum_of<V>({a}, labels);
}

template <class V>
BasicArray<V> masked_of(const BasicArray<V>& a, const SparsePattern& pattern) {
  check_unique(a.labels, "masked input");
  BasicArray<V> r = a;
  const Addressing ad = addressing(r, r.labels);
  auto position = [&](const std::string& label) {
    for (std::size_t m = 0; m < r.labels.size(); ++m) {
      if (r.labels[m] == label) return m;
    }
    throw std::invalid_argument("reference: sparse label " + label + " is not a label of the array");
  };
  std::vector<std::size_t> from_pos, to_pos;
  for (const auto& l : pattern.from) from_pos.push_back(position(l));
  for (const auto& l : pattern.to) to_pos.push_back(position(l));
  for_each_index(r.extents, [&](const std::vector<std::size_t>& index) {
    std::vector<std::size_t> from, to;
    for (std::size_t p : from_pos) from.push_back(index[p]);
    for (std::size_t p : to_pos) to.push_back(index[p]);
    auto it = pattern.allowed.find(from);
    if (it == pattern.allowed.end() || !it->second.count(to)) r.values[offset_of(ad, index)] = V(0);
  });
  return r;
}

template <class V>
std::string compare_of(const std::vector<V>& got, const BasicArray<V>& expected, const BasicArray<V>& magnitude,
                       double rtol, double atol) {
  if (got.size() != expected.values.size()) {
    return "size mismatch: got " + std::to_string(got.size()) + " values, expected " +
           std::to_string(expected.values.size());
  }
  auto text = [](const V& v) {
    if constexpr (std::is_same_v<V, double>) {
      return std::to_string(v);
    } else {
      // Appended piece by piece: GCC 12's -Wrestrict misfires on `"(" + std::string&&` (aarch64 -O3).
      std::string out = "(";
      out += std::to_string(v.real());
      out += ", ";
      out += std::to_string(v.imag());
      out += ")";
      return out;
    }
  };
  std::size_t bad = 0;
  std::string first;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double scale = std::abs(expected.values[i]) + std::abs(magnitude.values[i]);
    const double err = std::abs(got[i] - expected.values[i]);
    if (!(err <= atol + rtol * scale)) {  // also catches NaN
      if (bad++ == 0) {
        first = "element " + std::to_string(i) + ": got " + text(got[i]) + ", expected " + text(expected.values[i]) +
                " (tolerance " + std::to_string(atol + rtol * scale) + ")";
      }
    }
  }
  if (bad == 0) return {};
  return std::to_string(bad) + " of " + std::to_string(got.size()) + " elements differ; first: " + first;
}

}  // namespace

Array make_array(std::string_view labels, Extents extents, std::vector<double> values) {
  return make_array_of(labels, std::move(extents), std::move(values));
}
ComplexArray make_array(std::string_view labels, Extents extents, std::vector<Complex> values) {
  return make_array_of(labels, std::move(extents), std::move(values));
}

Array einsum(const std::vector<Array>& operands, const Labels& out_labels) { return einsum_of(operands, out_labels); }
ComplexArray einsum(const std::vector<ComplexArray>& operands, const Labels& out_labels) {
  return einsum_of(operands, out_labels);
}

Array elementwise(Op op, const Array& a, const Array& b, const Labels& out_labels) {
  return elementwise_of(op, a, b, out_labels);
}
ComplexArray elementwise(Op op, const ComplexArray& a, const ComplexArray& b, const Labels& out_labels) {
  return elementwise_of(op, a, b, out_labels);
}

Array scaled(const Array& a, double alpha) {
  return mapped(a, [alpha](double v) { return v * alpha; });
}
ComplexArray scaled(const ComplexArray& a, Complex alpha) {
  return mapped(a, [alpha](Complex v) { return v * alpha; });
}

Array absolute(const Array& a) {
  return mapped(a, [](double v) { return std::fabs(v); });
}
ComplexArray absolute(const ComplexArray& a) {
  return mapped(a, [](Complex v) { return Complex(std::abs(v)); });
}

ComplexArray conjugated(const ComplexArray& a) {
  return mapped(a, [](Complex v) { return std::conj(v); });
}

ComplexArray complexified(const Array& a) {
  return ComplexArray{a.labels, a.extents, {a.values.begin(), a.values.end()}};
}

Array relabelled(const Array& a, std::string_view labels) { return make_array(labels, a.extents, a.values); }
ComplexArray relabelled(const ComplexArray& a, std::string_view labels) {
  return make_array(labels, a.extents, a.values);
}

Array permuted(const Array& a, const Labels& labels) { return permuted_of(a, labels); }
ComplexArray permuted(const ComplexArray& a, const Labels& labels) { return permuted_of(a, labels); }

Array masked(const Array& a, const SparsePattern& pattern) { return masked_of(a, pattern); }
ComplexArray masked(const ComplexArray& a, const SparsePattern& pattern) { return masked_of(a, pattern); }

std::string compare(const std::vector<double>& got, const Array& expected, const Array& magnitude, double rtol,
                    double atol) {
  return compare_of(got, expected, magnitude, rtol, atol);
}
std::string compare(const std::vector<Complex>& got, const ComplexArray& expected, const ComplexArray& magnitude,
                    double rtol, double atol) {
  return compare_of(got, expected, magnitude, rtol, atol);
}

std::uint64_t Random::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Random::uniform() { return static_cast<double>(next() >> 11) * (2.0 / 9007199254740992.0) - 1.0; }

}  // namespace tenex_test::reference
