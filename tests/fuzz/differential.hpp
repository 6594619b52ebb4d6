// Differential testing of whole tenex programs against a naive reference: the generator, the
// reference and the runner shared by the libFuzzer target (tests/fuzz/fuzz_differential.cpp)
// and the seeded property test (tests/property/property_differential.cpp).
//
// A program is decoded from bytes (libFuzzer's input, or bytes drawn from a seeded RNG): a few
// random tensors over a per-program alphabet of labels with per-program extents, then
// statements: assignments `=`, `+=`, `-=`, `*=`, `/=` and scalar forms; expressions of + - * /,
// scales, element-wise functions, max/min, sum/max_over/min_over, chip, slice and two user
// classes (Twice, a Nary<1>, and Blend, a Nary<2>, defined in terms of library expressions);
// named handles held across statements (sharing, linked sets kept open) and dropped in any
// order; element writes through at(); tensor copies; reads in the middle of a set. Templates
// generate, with random labels, extents and functions, the shapes that once hid defects:
// products with a function of a large tensor, functions and reductions of large tensors,
// broadcasts into reductions, nested user classes, a named intermediate used twice and `+=`
// chains through open sets.
//
// The reference (plain loops over doubles) follows the summation rule of docs/einstein.md: as
// a recursive evaluator eval(node, K) returning a tensor over the labels K, a non-product node
// is evaluated over K ∪ implicit(node) and then summed down to K; a product evaluates each
// factor f over f.labels ∩ (K ∪ the other factor's labels) and contracts what K lacks;
// implicit(indexed) = its labels, implicit(product) = the labels occurring exactly once among
// its (flattened) factors' implicit labels, implicit(+, -, /) = the union of the children's,
// implicit(scale) = the child's, implicit(anything else) = its labels; an operand of a
// function, reduction, max/min or user class is evaluated over its implicit labels first.
// `c += rhs`, `c -= rhs` and `c /= rhs` combine c with what `c = rhs` would write (rhs summed
// to c's labels first); `c *= rhs` is the product c * rhs.
//
// Alongside each value the reference carries a bound on the rounding error of any evaluation
// order (in units of the element type's unit roundoff), so that the tolerance follows the
// terms summed and the functions' slopes, not a guess at the magnitude.
//
// run_program() runs one program under a list of configurations (pass list, plan cache on or
// off, thread count), each several times in a row: every read must agree with the reference
// within the tolerance, a statement the reference rejects must throw tenex::Error where it is
// written (and one it accepts must not), and the repetitions of one configuration must give
// bitwise-identical results.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace tenex_fuzz {

using tenex::Shape;
using tenex::Tensor;

constexpr int kMaxLabels = 10;
inline const char* const kLabel[kMaxLabels] = {"i", "j", "k", "l", "m", "n", "p", "q", "r", "s"};
constexpr int kMaxSlots = 6;
constexpr int kHandles = 4;

/// What programs a driver generates.
struct Limits {
  int labels = 5;                                         // alphabet size (at most kMaxLabels)
  int slots = 4;                                          // tensors (at most kMaxSlots)
  int max_rank = 3;                                       // of the initial random tensors
  int statements = 24;                                    // at most, per program
  unsigned templates = 4;                                 // weight of template statements (of 16 + it)
  std::vector<std::size_t> small_extents{1, 2, 2, 3, 3};  // a label's extent
  std::vector<std::size_t> large_extents;                 // ... for labels of a "large" program
  unsigned large_chance = 0;                              // in 256: the program has large labels
  unsigned large_label_chance = 0;                        // in 256: a label of it is large
  std::size_t max_elements = 64;                          // initial tensors and templates' small ones
  std::size_t big_lo = 24, big_hi = 512;                  // templates' large tensors (elements)
  double max_work = 2e5;                                  // reference loop iterations per statement
  unsigned float_chance = 0;                              // in 256: the program is Tensor<float>
};

/// The libFuzzer target's programs: six labels, small extents (up to 13 now and then).
inline Limits fuzz_limits() {
  Limits l;
  l.labels = 6;
  l.slots = 4;
  l.max_rank = 3;
  l.statements = 24;
  l.templates = 4;
  l.small_extents = {1, 2, 2, 3, 3, 4};
  l.large_extents = {5, 7, 8, 13};
  l.large_chance = 48;
  l.large_label_chance = 100;
  l.max_elements = 64;
  l.big_lo = 60;
  l.big_hi = 1200;
  l.max_work = 3e5;
  l.float_chance = 51;
  return l;
}

/// The property test's programs: ten labels, extents up to 50, large tensors past the kernels'
/// thresholds for running in parallel.
inline Limits property_limits() {
  Limits l;
  l.labels = 10;
  l.slots = 6;
  l.max_rank = 4;
  l.statements = 10;
  l.templates = 12;
  l.small_extents = {1, 2, 3, 4, 5, 6};
  l.large_extents = {7, 8, 11, 13, 16, 24, 32, 50};
  l.large_chance = 220;
  l.large_label_chance = 90;
  l.max_elements = 2048;
  l.big_lo = 33000;  // past the kernels' 32,768-element threshold for running in parallel
  l.big_hi = 90000;
  l.max_work = 4e6;
  l.float_chance = 85;
  return l;
}

// ---- The input -------------------------------------------------------------------------

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  unsigned next() { return at_ < size_ ? data_[at_++] : 0u; }
  unsigned below(unsigned n) { return n == 0 ? 0 : next() % n; }
  bool chance(unsigned in256) { return next() < in256; }

 private:
  const std::uint8_t* data_;
  std::size_t size_, at_ = 0;
};

// ---- The reference ---------------------------------------------------------------------

/// max and min as tenex defines them: a NaN on either side gives NaN.
inline double ieee_max(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }
inline double ieee_min(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }

using Labels = std::vector<int>;  // alphabet indices

inline std::string text(const Labels& labels) {
  std::string s;
  for (int l : labels) {
    if (!s.empty()) s += ',';
    s += kLabel[l];
  }
  return s;
}

inline bool has(const Labels& labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

/// A dense row-major array whose modes carry labels (unique, except a leaf's written labels),
/// with a bound on each value's rounding error in units of the unit roundoff.
struct Arr {
  Labels labels;
  std::vector<std::size_t> extents;
  std::vector<double> values;
  std::vector<double> err;  // empty: exact
};

inline std::size_t count(const std::vector<std::size_t>& extents) {
  std::size_t n = 1;
  for (std::size_t e : extents) n *= e;
  return n;
}

/// A value's bound; infinite (unchecked) where the value may have overflowed, also where that
/// infinity met a zero on the way (a NaN bound).
inline double err_at(const Arr& a, std::size_t o) {
  if (a.err.empty()) return 0.0;
  return a.err[o] < INFINITY ? a.err[o] : INFINITY;
}

/// Offset in `a` of the element whose labels have the values `index` (by alphabet label).
inline std::size_t offset(const Arr& a, const std::size_t* index) {
  std::size_t o = 0;
  for (std::size_t m = 0; m < a.labels.size(); ++m) o = o * a.extents[m] + index[a.labels[m]];
  return o;
}

/// Calls f(index) for every value of `labels` (extents from `extent_of`).
template <class F>
void for_each_index(const Labels& labels, const std::size_t* extent_of, F&& f) {
  std::size_t index[kMaxLabels] = {};
  for (int l : labels) {
    if (extent_of[l] == 0) return;
  }
  for (;;) {
    f(index);
    std::size_t m = labels.size();
    while (m > 0) {
      const int l = labels[m - 1];
      if (++index[l] < extent_of[l]) break;
      index[l] = 0;
      --m;
    }
    if (m == 0) return;
  }
}

/// The reference's mode: `dry` counts the loop iterations an evaluation would take (`cost`)
/// without computing anything.
struct RefMode {
  bool dry = false;
  double cost = 0.0;
  double unit = 0x1p-53;    // the unit roundoff of the element type tenex computes in
  double tiny = 0x1p-1022;  // its smallest normal number: what one rounding may lose to
                            // underflow (gradual, or flushed to zero), whatever the value
  double huge = 0x1p1021;   // a quarter of its largest: a value past it may overflow to inf
  bool check_each = false;  // read every target right after its statement (to find the
                            // statement that goes wrong; it closes sets earlier)
  bool early_sums = false;  // the rule before issue 29: +, -, / and scales sum each operand
                            // down to the labels kept before combining (Σ_j a_ij + b_i); for
                            // telling that change apart from other mismatches
};
inline RefMode g_ref;

/// The bound, in units of the unit roundoff, on the error of rounding one result `v` to the
/// element type: relative in its normal range, absolute (`tiny`) below it, and infinite (the
/// value goes unchecked from there on) near its largest. A float program whose values shrink
/// past 1e-38 reads zeros, and one whose values grow past 3e38 reads infinities (and the NaNs
/// they make), where the double reference has numbers.
inline double underflow() { return g_ref.tiny / g_ref.unit; }
inline double rounded(double v) { return std::abs(v) <= g_ref.huge ? std::abs(v) + underflow() : INFINITY; }

/// Rounding of a sum of n terms, in units of their absolute sum (any order: blocked,
/// pairwise or sequential sums all stay well inside it in practice).
inline double sum_rounding(double n) { return n <= 1.0 ? 0.0 : std::min(n - 1.0, 2.0 * std::sqrt(n) + 2.0); }

/// out[keep] = sum over every other label of the product of the operands (their repeated
/// labels read diagonals).
inline Arr einsum(const std::vector<const Arr*>& operands, const Labels& keep) {
  std::size_t extent_of[kMaxLabels] = {};
  Labels all;
  for (const Arr* a : operands) {
    for (std::size_t m = 0; m < a->labels.size(); ++m) {
      if (!has(all, a->labels[m])) all.push_back(a->labels[m]);
      extent_of[a->labels[m]] = a->extents[m];
    }
  }
  Arr out;
  out.labels = keep;
  for (int l : keep) out.extents.push_back(extent_of[l]);
  double iterations = 1.0, kept = 1.0;
  for (int l : all) iterations *= static_cast<double>(extent_of[l]);
  for (int l : keep) kept *= static_cast<double>(extent_of[l]);
  g_ref.cost += iterations;
  if (g_ref.dry) return out;
  const std::size_t n = count(out.extents);
  out.values.assign(n, 0.0);
  out.err.assign(n, 0.0);
  std::vector<double> abs_sum(n, 0.0);
  const double factors = static_cast<double>(operands.size()) - 1.0;
  for_each_index(all, extent_of, [&](std::size_t* index) {
    double p = 1.0, e = 0.0;
    for (const Arr* a : operands) {
      const std::size_t o = offset(*a, index);
      const double v = a->values[o], ev = err_at(*a, o);
      e = e * std::abs(v) + ev * std::abs(p);
      p *= v;
      if (!(std::abs(p) <= g_ref.huge)) e = INFINITY;  // a partial product may overflow
    }
    const std::size_t o = offset(out, index);
    out.values[o] += p;
    out.err[o] += e + factors * rounded(p) + underflow();  // the products, then the sum
    abs_sum[o] += std::abs(p);
  });
  const double rounding = sum_rounding(kept > 0 ? iterations / kept : 0.0);
  for (std::size_t o = 0; o < n; ++o) {
    out.err[o] += rounding * abs_sum[o];
    if (!(abs_sum[o] <= g_ref.huge)) out.err[o] = INFINITY;  // a partial sum may overflow
  }
  return out;
}

/// out[labels] = f(a, b) element by element, matched by label and broadcast; `e` gives the
/// result's error from the operands' values and errors.
template <class F, class FE>
Arr combine(const Arr& a, const Arr& b, const Labels& labels, F f, FE e) {
  std::size_t extent_of[kMaxLabels] = {};
  for (std::size_t m = 0; m < a.labels.size(); ++m) extent_of[a.labels[m]] = a.extents[m];
  for (std::size_t m = 0; m < b.labels.size(); ++m) extent_of[b.labels[m]] = b.extents[m];
  Arr out;
  out.labels = labels;
  for (int l : labels) out.extents.push_back(extent_of[l]);
  g_ref.cost += static_cast<double>(count(out.extents));
  if (g_ref.dry) return out;
  out.values.assign(count(out.extents), 0.0);
  out.err.assign(out.values.size(), 0.0);
  for_each_index(labels, extent_of, [&](std::size_t* index) {
    const std::size_t oa = offset(a, index), ob = offset(b, index), o = offset(out, index);
    const double x = a.values[oa], y = b.values[ob];
    out.values[o] = f(x, y);
    out.err[o] = e(x, err_at(a, oa), y, err_at(b, ob), out.values[o]);
  });
  return out;
}

enum class Kind {
  leaf,
  add,
  sub,
  div,
  mul,
  scale,
  map,
  max,
  min,
  sum,
  max_over,
  min_over,
  chip,
  slice,
  einstein,  // the reference's own: an operand over its implicit labels
  twice,     // user class Twice (Nary<1>): 2.0 * x
  blend,     // user class Blend (Nary<2>): x + 2.0 * y
};

/// The element-wise functions: the value, and a bound on the slope over [|x| - d, |x| + d].
struct Function {
  const char* name;
  double (*f)(double);
  double (*slope)(double x, double d);
};
inline double slope_one(double, double) { return 1.0; }
inline const Function kFunction[] = {
    {"tanh", [](double x) { return std::tanh(x); }, slope_one},
    {"sin", [](double x) { return std::sin(x); }, slope_one},
    {"abs", [](double x) { return std::abs(x); }, slope_one},
    {"square", [](double x) { return x * x; }, [](double x, double d) { return 2.0 * (std::abs(x) + d); }},
    {"exp(clamp(-2,2))", [](double x) { return std::exp(std::min(2.0, std::max(-2.0, x))); },
     [](double x, double d) { return std::exp(std::min(2.0, x + d)); }},
    {"+0.5", [](double x) { return x + 0.5; }, slope_one},
    {"1-", [](double x) { return 1.0 - x; }, slope_one},
    {"clamp", [](double x) { return std::min(0.5, std::max(-0.5, x)); }, slope_one},
    {"power 3", [](double x) { return x * x * x; },
     [](double x, double d) { return 3.0 * (std::abs(x) + d) * (std::abs(x) + d); }},
    {"sqrt(abs)+0.5", [](double x) { return std::sqrt(std::abs(x)) + 0.5; },
     [](double x, double d) { return std::abs(x) > 2.0 * d ? 0.5 / std::sqrt(std::abs(x) - d) : 1e300; }},
    {"reciprocal(2+square)", [](double x) { return 1.0 / (2.0 + x * x); }, [](double, double) { return 0.25; }},
    {"exp", [](double x) { return std::exp(x); }, [](double x, double d) { return std::exp(x + d); }},
    {"2+square", [](double x) { return 2.0 + x * x; }, [](double x, double d) { return 2.0 * (std::abs(x) + d); }},
};
constexpr int kFunctions = 11;         // drawn at random: the first 11
constexpr int kExp = 11;               // plain exp: only on tensors (their values lie in [-1, 1))
constexpr int kDivisor = 12;           // the divisor of `/`, never drawn
constexpr int kSqrtAbs = 9;            // special error rule near 0
constexpr double kBoundFactor = 16.0;  // a value's deviation is at most this many times its bound

/// A reference expression: its free labels and extents, and what it reads (leaves hold a
/// copy of their tensor's value when written, as tenex's operands do).
struct R {
  Kind kind = Kind::leaf;
  Labels labels;
  std::vector<std::size_t> extents;
  std::vector<std::shared_ptr<const R>> children;
  Arr leaf;                         // leaf, and the leaf of chip/slice
  double x = 0.0;                   // scale factor
  int fn = 0;                       // map function
  Labels reduced;                   // sum, max_over, min_over
  std::size_t mode = 0, index = 0;  // chip
  std::vector<std::size_t> lo, hi;  // slice
  Labels implicit;                  // see the header
  bool is_product = false;
  Labels product_labels;    // products: the factors' implicit labels, as often as they occur
  bool user_class = false;  // einstein: the value of a user class (Twice, Blend), opaque to tenex
};
using RPtr = std::shared_ptr<const R>;

/// Fills implicit (and product_labels) from the children, as the summation rule says.
inline void finish(R& r) {
  if (r.kind == Kind::mul || (r.kind == Kind::scale && r.children[0]->is_product)) {
    r.is_product = true;
    if (r.kind == Kind::scale) {
      r.product_labels = r.children[0]->product_labels;
    } else {
      for (const RPtr& c : r.children) {
        const Labels& part = c->is_product ? c->product_labels : c->implicit;
        r.product_labels.insert(r.product_labels.end(), part.begin(), part.end());
      }
    }
    for (int l : r.labels) {
      if (std::count(r.product_labels.begin(), r.product_labels.end(), l) == 1) r.implicit.push_back(l);
    }
    return;
  }
  if (r.kind == Kind::add || r.kind == Kind::sub || r.kind == Kind::div) {
    for (int l : r.labels) {
      for (const RPtr& c : r.children) {
        if (has(c->implicit, l)) {
          r.implicit.push_back(l);
          break;
        }
      }
    }
    return;
  }
  if (r.kind == Kind::scale) {
    r.implicit = r.children[0]->implicit;
    return;
  }
  r.implicit = r.labels;
}

/// `c` as a function, max/min, reduction or user class sees it: over its implicit labels
/// (`always`: a node of its own even where that changes nothing, as for a user class's value,
/// which its consumer cannot see into).
inline RPtr einstein_operand(const RPtr& c, bool always = false) {
  if (c->implicit == c->labels && !always) return c;
  auto r = std::make_shared<R>();
  r->kind = Kind::einstein;
  r->children = {c};
  r->labels = c->implicit;
  for (int l : c->implicit) {
    r->extents.push_back(
        c->extents[static_cast<std::size_t>(std::find(c->labels.begin(), c->labels.end(), l) - c->labels.begin())]);
  }
  finish(*r);
  return r;
}

inline Labels intersect(const Labels& a, const Labels& keep) {
  Labels out;
  for (int l : a) {
    if (has(keep, l)) out.push_back(l);
  }
  return out;
}

inline Labels minus(const Labels& a, const Labels& drop) {
  Labels out;
  for (int l : a) {
    if (!has(drop, l)) out.push_back(l);
  }
  return out;
}

/// docs/einstein.md's rule for sums, as the reference reads it: a label that a statement sums
/// by omission (a non-product node evaluated over more labels than its consumer keeps) over a
/// sum, a difference or a scalar added (`+0.5`, `1-`, `sqrt(abs)+0.5`, `2+square`) is an
/// error when a term lacks it, unless a `sum` around it names the label. The sum distributes
/// over sums, scales, products, `sum`, an Einstein operand and a quotient's numerator (and on
/// into their operands); a function, max/min, chip or slice sees its operand whole, and a user
/// class is not looked into. Returns "" or the error.
inline std::string stray_label(const R& r, const Labels& keep, Labels summed, Labels named) {
  const bool scalar_term = r.kind == Kind::map && (r.fn == 5 || r.fn == 6 || r.fn == 9 || r.fn == kDivisor);
  const bool sum = r.kind == Kind::add || r.kind == Kind::sub || scalar_term;
  // A user class is lowered by its own add_to_graph, over its whole value: tenex checks the
  // statements a user writes, not the graphs a class draws.
  if (r.user_class) return "";
  Labels over = keep;
  if (!r.is_product) {
    for (int l : r.implicit) {
      if (has(keep, l)) continue;
      over.push_back(l);
      if (!has(named, l) && !has(summed, l)) summed.push_back(l);
    }
  }
  if (sum) {
    for (int l : summed) {
      if (scalar_term) return "label " + std::string(kLabel[l]) + " summed over a sum with a scalar term";
      for (const RPtr& c : r.children) {
        if (!has(c->labels, l)) return "label " + std::string(kLabel[l]) + " summed over a sum whose term lacks it";
      }
    }
  }
  if (r.kind == Kind::sum) named.insert(named.end(), r.reduced.begin(), r.reduced.end());
  for (std::size_t i = 0; i < r.children.size(); ++i) {
    const R& c = *r.children[i];
    const bool linear = r.is_product || r.kind == Kind::add || r.kind == Kind::sub || r.kind == Kind::scale ||
                        r.kind == Kind::sum || r.kind == Kind::einstein || (r.kind == Kind::div && i == 0) ||
                        (scalar_term && r.fn != 9 && r.fn != kDivisor);
    Labels child_keep = c.labels;
    if (r.kind == Kind::mul) {
      Labels wanted = keep;
      const Labels& other = r.children[1 - i]->labels;
      wanted.insert(wanted.end(), other.begin(), other.end());
      child_keep = intersect(c.labels, wanted);
    } else if (r.is_product) {
      child_keep = intersect(c.labels, keep);
    } else if (linear) {
      child_keep = intersect(c.labels, over);
    }
    const std::string error = linear
                                  ? stray_label(c, child_keep, intersect(summed, c.labels), intersect(named, c.labels))
                                  : stray_label(c, child_keep, {}, {});
    if (!error.empty()) return error;
  }
  return "";
}

inline Arr eval(const R& r, const Labels& keep);

/// f applied to every value of `a` (with its error bound).
inline void apply(Arr& a, int fn) {
  if (g_ref.dry) return;
  const Function& f = kFunction[fn];
  if (a.err.empty()) a.err.assign(a.values.size(), 0.0);
  for (std::size_t o = 0; o < a.values.size(); ++o) {
    const double x = a.values[o], e = a.err[o];
    a.values[o] = f.f(x);
    const double d = kBoundFactor * e * g_ref.unit;  // how far x may be off
    double propagated = e * f.slope(x, d);
    if (fn == kSqrtAbs) {
      // sqrt near 0: a deviation d moves sqrt by at most sqrt(d).
      propagated = std::min(propagated, d > 0 ? std::sqrt(d) / g_ref.unit / kBoundFactor : 0.0);
    }
    a.err[o] = propagated + 4.0 * rounded(a.values[o]);
  }
}

/// The value of non-product node `r` over the labels `over` (implicit(r) ⊆ over ⊆ labels).
inline Arr value_over(const R& r, const Labels& over) {
  switch (r.kind) {
    case Kind::leaf: return einsum({&r.leaf}, over);
    case Kind::add:
    case Kind::sub:
    case Kind::div: {
      const Arr a = eval(*r.children[0], intersect(r.children[0]->labels, over));
      const Arr b = eval(*r.children[1], intersect(r.children[1]->labels, over));
      if (r.kind == Kind::div) {
        return combine(
            a, b, over, [](double x, double y) { return x / y; },
            [](double x, double ex, double y, double ey, double v) {
              return ex / std::abs(y) + std::abs(x) * ey / (y * y) + rounded(v);
            });
      }
      const double sign = r.kind == Kind::add ? 1.0 : -1.0;
      return combine(
          a, b, over, [sign](double x, double y) { return x + sign * y; },
          [](double, double ex, double, double ey, double v) { return ex + ey + rounded(v); });
    }
    case Kind::scale: {
      Arr a = eval(*r.children[0], over);
      if (!g_ref.dry) {
        if (a.err.empty()) a.err.assign(a.values.size(), 0.0);
        for (std::size_t o = 0; o < a.values.size(); ++o) {
          a.values[o] *= r.x;
          a.err[o] = a.err[o] * std::abs(r.x) + rounded(a.values[o]);
        }
      }
      return a;
    }
    case Kind::map: {
      Arr a = eval(*r.children[0], r.children[0]->labels);
      apply(a, r.fn);
      return einsum({&a}, over);
    }
    case Kind::max:
    case Kind::min: {
      const Arr a = eval(*r.children[0], r.children[0]->labels);
      const Arr b = eval(*r.children[1], r.children[1]->labels);
      auto worst = [](double, double ex, double, double ey, double) { return std::max(ex, ey); };
      const Arr c =
          r.kind == Kind::max ? combine(a, b, r.labels, ieee_max, worst) : combine(a, b, r.labels, ieee_min, worst);
      return einsum({&c}, over);
    }
    case Kind::sum:
    case Kind::einstein: return eval(*r.children[0], over);
    case Kind::max_over:
    case Kind::min_over: {
      const Arr a = eval(*r.children[0], r.children[0]->labels);
      Arr c;
      c.labels = r.labels;
      c.extents = r.extents;
      std::size_t extent_of[kMaxLabels] = {};
      for (std::size_t m = 0; m < a.labels.size(); ++m) extent_of[a.labels[m]] = a.extents[m];
      g_ref.cost += static_cast<double>(count(a.extents));
      if (!g_ref.dry) {
        c.values.assign(count(c.extents), r.kind == Kind::max_over ? -INFINITY : INFINITY);
        c.err.assign(c.values.size(), 0.0);
        for_each_index(a.labels, extent_of, [&](std::size_t* index) {
          const std::size_t o = offset(c, index), oa = offset(a, index);
          double& v = c.values[o];
          const double x = a.values[oa];
          v = r.kind == Kind::max_over ? ieee_max(v, x) : ieee_min(v, x);
          c.err[o] = std::max(c.err[o], err_at(a, oa));
        });
      }
      return einsum({&c}, over);
    }
    case Kind::chip:
    case Kind::slice: {
      const Arr& a = r.leaf;  // distinct labels
      Arr c;
      c.labels = r.labels;
      c.extents = r.extents;
      std::size_t extent_of[kMaxLabels] = {};
      for (std::size_t m = 0; m < c.labels.size(); ++m) extent_of[c.labels[m]] = c.extents[m];
      g_ref.cost += static_cast<double>(count(c.extents));
      if (!g_ref.dry) {
        c.values.assign(count(c.extents), 0.0);
        if (!a.err.empty()) c.err.assign(c.values.size(), 0.0);
        for_each_index(c.labels, extent_of, [&](std::size_t* index) {
          std::size_t source[kMaxLabels];
          std::copy(index, index + kMaxLabels, source);
          if (r.kind == Kind::chip) {
            source[a.labels[r.mode]] = r.index;
          } else {
            for (std::size_t m = 0; m < a.labels.size(); ++m) source[a.labels[m]] += r.lo[m];
          }
          c.values[offset(c, index)] = a.values[offset(a, source)];
          if (!a.err.empty()) c.err[offset(c, index)] = a.err[offset(a, source)];
        });
      }
      return einsum({&c}, over);
    }
    case Kind::mul:
    case Kind::twice:
    case Kind::blend: break;  // products go through eval; user classes are built of other kinds
  }
  std::abort();
}

/// The value of `r` over the labels `keep` (a subset of its labels), by the summation rule.
inline Arr eval(const R& r, const Labels& keep) {
  if (r.is_product) {
    if (r.kind == Kind::scale) {
      Arr a = eval(*r.children[0], keep);
      if (!g_ref.dry) {
        for (std::size_t o = 0; o < a.values.size(); ++o) {
          a.values[o] *= r.x;
          a.err[o] = a.err[o] * std::abs(r.x) + rounded(a.values[o]);
        }
      }
      return a;
    }
    // A factor over its labels that the result keeps or the other factor shares.
    Labels ka = keep, kb = keep;
    ka.insert(ka.end(), r.children[1]->labels.begin(), r.children[1]->labels.end());
    kb.insert(kb.end(), r.children[0]->labels.begin(), r.children[0]->labels.end());
    const Arr a = eval(*r.children[0], intersect(r.children[0]->labels, ka));
    const Arr b = eval(*r.children[1], intersect(r.children[1]->labels, kb));
    return einsum({&a, &b}, keep);
  }
  Labels over = keep;
  const bool early =
      g_ref.early_sums && (r.kind == Kind::add || r.kind == Kind::sub || r.kind == Kind::div || r.kind == Kind::scale);
  for (int l : r.implicit) {
    if (!has(over, l) && !early) over.push_back(l);
  }
  Arr v = value_over(r, over);
  if (over.size() == keep.size()) return v;
  return einsum({&v}, keep);
}

// ---- User classes ----------------------------------------------------------------------

/// Twice its operand, in terms of a library expression.
template <class T>
class Twice : public tenex::Nary<1, T> {
 public:
  explicit Twice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Twice"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return (2.0 * this->child(0)).add_to_graph(graph);
  }
};

/// x + 2 y, in terms of library expressions.
template <class T>
class Blend : public tenex::Nary<2, T> {
 public:
  Blend(const tenex::Expression<T>& x, const tenex::Expression<T>& y) : tenex::Nary<2, T>(x, y) {}
  std::string_view name() const override { return "Blend"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return (this->child(0) + 2.0 * this->child(1)).add_to_graph(graph);
  }
};

// ---- The program -----------------------------------------------------------------------

/// One expression of a statement, as decoded: a small DAG (children are earlier nodes of the
/// same statement, so an operand can be shared within it).
struct Node {
  Kind kind = Kind::leaf;
  int slot = -1, handle = -1;  // leaf: a tensor (slot) or a held handle
  Labels labels;               // leaf: written labels; reductions: the labels reduced
  int a = -1, b = -1;          // children (node indices)
  double x = 0.0;
  int fn = 0;  // map: the function; chip: the mode chipped
  std::size_t index = 0;
  std::vector<std::size_t> lo, hi;
};

struct Failure {
  std::string what;
};

/// The reference's results of one run, replayed by later runs of the same program (whose
/// reference results are the same): only the first run pays for the reference.
struct Recording {
  std::vector<Arr> results;
  bool complete = false;
};

/// One run's reads, for the bitwise comparison of repetitions.
template <class T>
struct Reads {
  std::vector<std::string> what;
  std::vector<std::vector<T>> values;
};

/// What a program's statements were.
struct Counts {
  int valid = 0, invalid = 0, left_out = 0, templates = 0;
};

template <class T>
class Program {
 public:
  using Ex = tenex::Expression<Tensor<T>>;
  using EP = std::shared_ptr<const Ex>;

  Program(const std::uint8_t* data, std::size_t size, const Limits& limits, bool verbose, Recording& recording)
      : in_(data, size), limits_(limits), verbose_(verbose), recording_(recording) {}

  void run() {
    g_ref.unit = kUnit;
    g_ref.tiny = std::numeric_limits<T>::min();
    g_ref.huge = std::numeric_limits<T>::max() / 4;
    in_.next();  // the element type: the driver's
    // The alphabet's extents.
    const bool large = !limits_.large_extents.empty() && in_.chance(limits_.large_chance);
    std::string alphabet;
    for (int l = 0; l < limits_.labels; ++l) {
      if (large && in_.chance(limits_.large_label_chance)) {
        extent_[l] = limits_.large_extents[in_.below(static_cast<unsigned>(limits_.large_extents.size()))];
      } else {
        extent_[l] = limits_.small_extents[in_.below(static_cast<unsigned>(limits_.small_extents.size()))];
      }
      if (l) alphabet += ' ';
      alphabet += kLabel[l];
      alphabet += '=';
      alphabet += std::to_string(extent_[l]);
    }
    log(std::string(sizeof(T) == 4 ? "float" : "double") + " program; extents " + alphabet);
    for (int s = 0; s < limits_.slots; ++s) {
      const unsigned rank = in_.below(static_cast<unsigned>(limits_.max_rank) + 1);
      Labels labels;
      std::size_t elements = 1;
      for (unsigned m = 0; m < rank; ++m) {
        const int l = static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels)));
        if (elements * extent_[l] > limits_.max_elements) break;
        labels.push_back(l);
        elements *= extent_[l];
      }
      fresh(s, labels);
    }
    for (int statements = 0; statements < limits_.statements && !in_.empty(); ++statements) statement();
    // The handles die in an order the input chooses, then everything is compared.
    std::vector<int> order;
    for (int h = 0; h < kHandles; ++h) order.push_back(h);
    for (int h = kHandles; h > 1; --h) std::swap(order[h - 1], order[in_.below(h)]);
    for (int h : order) {
      handles_[h].reset();
      refs_[h].reset();
    }
    for (int s = 0; s < limits_.slots; ++s) compare(s, "at the end");
    recording_.complete = true;
  }

  const std::string& transcript() const { return transcript_; }
  const Reads<T>& reads() const { return reads_; }
  const Counts& counts() const { return counts_; }
  /// The largest |tenex - reference| / (unit roundoff * bound) seen (calibrates kBoundFactor).
  double worst_ratio() const { return worst_ratio_; }

 private:
  static constexpr double kUnit = std::numeric_limits<T>::epsilon() / 2;

  static std::string shape_text(const std::vector<std::size_t>& extents) {
    std::string s = "{";
    for (std::size_t e : extents) {
      if (s.size() > 1) s += ',';
      s += std::to_string(e);
    }
    s += '}';
    return s;
  }

  void log(const std::string& line) {
    transcript_ += line + "\n";
    if (verbose_) std::fprintf(stderr, "%s\n", line.c_str());
  }

  [[noreturn]] void fail(const std::string& what) { throw Failure{what}; }

  /// tensors_[s] = a new random tensor over `labels` (their extents).
  void fresh(int s, const Labels& labels) {
    std::vector<std::size_t> extents;
    for (int l : labels) extents.push_back(extent_[l]);
    const unsigned seed = 1 + in_.next();
    tensors_[s] = Tensor<T>(Shape(extents));
    tenex::fill_random(tensors_[s], seed);
    const std::vector<T> values = tensors_[s].to_vector();
    ref_[s] = Arr{{}, extents, std::vector<double>(values.begin(), values.end()), {}};
    log("t" + std::to_string(s) + " = random " + shape_text(extents) + " (seed " + std::to_string(seed) + ")");
  }

  std::size_t elements(const Labels& labels) const {
    std::size_t n = 1;
    for (int l : labels) n *= extent_[l];
    return n;
  }

  // ---- decoding ----

  Labels operand_labels(const std::vector<std::size_t>& extents) {
    Labels labels;
    for (std::size_t e : extents) {
      if (in_.chance(20)) {
        labels.push_back(static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels))));  // maybe a mismatch
        continue;
      }
      Labels fitting;
      for (int l = 0; l < limits_.labels; ++l) {
        if (extent_[l] == e) fitting.push_back(l);
      }
      labels.push_back(fitting.empty() ? static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels)))
                                       : fitting[in_.below(static_cast<unsigned>(fitting.size()))]);
    }
    return labels;
  }

  /// The labels nodes[i] shows before any contraction (a guess for choosing reduced labels).
  Labels rough_labels(const std::vector<Node>& nodes, int i) const {
    const Node& n = nodes[static_cast<std::size_t>(i)];
    if (n.handle >= 0) return refs_[n.handle] ? refs_[n.handle]->labels : Labels{};
    Labels out;
    auto add = [&](const Labels& ls) {
      for (int l : ls) {
        if (!has(out, l)) out.push_back(l);
      }
    };
    switch (n.kind) {
      case Kind::leaf:
      case Kind::slice: add(n.labels); break;
      case Kind::chip:
        add(n.labels);
        out.erase(std::find(out.begin(), out.end(), n.labels[n.fn]));
        break;
      case Kind::sum:
      case Kind::max_over:
      case Kind::min_over: add(minus(rough_labels(nodes, n.a), n.labels)); break;
      default:
        add(rough_labels(nodes, n.a));
        if (n.b >= 0) add(rough_labels(nodes, n.b));
    }
    return out;
  }

  /// Decodes an expression into `nodes`; returns its index.
  int decode(std::vector<Node>& nodes, int depth) {
    Node n;
    const unsigned choice = depth <= 0 ? 0 : in_.below(18);
    if (choice < 4 || choice == 14 || choice == 15) {
      if (!nodes.empty() && in_.chance(40)) return static_cast<int>(in_.below(static_cast<unsigned>(nodes.size())));
      const int h = static_cast<int>(in_.below(kHandles));
      if (handles_[h] && in_.chance(90)) {
        n.handle = h;
      } else {
        n.slot = static_cast<int>(in_.below(static_cast<unsigned>(limits_.slots)));
        n.labels = operand_labels(ref_[n.slot].extents);
        bool distinct = true;
        for (std::size_t x = 0; x < n.labels.size(); ++x) {
          for (std::size_t y = x + 1; y < n.labels.size(); ++y) distinct = distinct && n.labels[x] != n.labels[y];
        }
        if (distinct && !n.labels.empty() && in_.chance(24)) {
          if (in_.chance(128)) {  // chip or slice of this leaf
            n.kind = Kind::chip;
            n.index = in_.below(3);
            n.fn = static_cast<int>(in_.below(static_cast<unsigned>(n.labels.size())));  // the mode chipped
          } else {
            n.kind = Kind::slice;
            for (std::size_t e : ref_[n.slot].extents) {
              const std::size_t lo = in_.below(static_cast<unsigned>(e));
              n.lo.push_back(lo);
              n.hi.push_back(lo + 1 + in_.below(static_cast<unsigned>(e - lo)));
            }
          }
        }
      }
      nodes.push_back(n);
      return static_cast<int>(nodes.size()) - 1;
    }
    n.a = decode(nodes, depth - 1);
    switch (choice) {
      case 4: n.kind = Kind::add; break;
      case 5: n.kind = Kind::sub; break;
      case 6:
      case 7: n.kind = Kind::mul; break;
      case 8: {
        n.kind = Kind::scale;
        const double factors[] = {2.0, -1.0, 0.5, -3.0};
        n.x = factors[in_.below(4)];
        break;
      }
      case 9:
        n.kind = Kind::map;
        n.fn = static_cast<int>(in_.below(kFunctions));
        break;
      case 10: n.kind = in_.chance(128) ? Kind::max : Kind::min; break;
      case 11: n.kind = Kind::div; break;
      case 16: n.kind = Kind::twice; break;
      case 17: n.kind = Kind::blend; break;
      default: {
        const unsigned r = in_.below(3);
        n.kind = r == 0 ? Kind::sum : r == 1 ? Kind::max_over : Kind::min_over;
        // Mostly labels the operand shows; now and then any label (an invalid statement).
        const Labels shown = rough_labels(nodes, n.a);
        auto draw = [&] {
          return shown.empty() || in_.chance(32) ? static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels)))
                                                 : shown[in_.below(static_cast<unsigned>(shown.size()))];
        };
        n.labels.push_back(draw());
        if (in_.chance(60)) n.labels.push_back(draw());
        break;
      }
    }
    if (n.kind == Kind::add || n.kind == Kind::sub || n.kind == Kind::mul || n.kind == Kind::div ||
        n.kind == Kind::max || n.kind == Kind::min || n.kind == Kind::blend) {
      n.b = decode(nodes, depth - 1);
    }
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }

  // ---- the reference's side ----

  /// The reference expression of nodes[i], or an error text in `error`.
  RPtr build_ref(const std::vector<Node>& nodes, int i, std::vector<RPtr>& memo, std::string& error) {
    if (memo[i]) return memo[i];
    const Node& n = nodes[i];
    auto r = std::make_shared<R>();
    r->kind = n.kind;
    auto child = [&](int c) -> RPtr { return error.empty() ? build_ref(nodes, c, memo, error) : nullptr; };
    auto join = [&](R& out, const R& a, const R& b) {
      out.labels = a.labels;
      out.extents = a.extents;
      for (std::size_t m = 0; m < b.labels.size(); ++m) {
        const auto at = std::find(out.labels.begin(), out.labels.end(), b.labels[m]);
        if (at == out.labels.end()) {
          out.labels.push_back(b.labels[m]);
          out.extents.push_back(b.extents[m]);
        } else if (out.extents[static_cast<std::size_t>(at - out.labels.begin())] != b.extents[m]) {
          error = "label " + std::string(kLabel[b.labels[m]]) + " has two extents";
        }
      }
    };
    auto scaled = [](const RPtr& a, double x) {
      auto s = std::make_shared<R>();
      s->kind = Kind::scale;
      s->x = x;
      s->labels = a->labels;
      s->extents = a->extents;
      s->children = {a};
      finish(*s);
      return RPtr(s);
    };
    if (n.handle >= 0) return memo[i] = refs_[n.handle];
    if (n.kind == Kind::leaf || n.kind == Kind::chip || n.kind == Kind::slice) {
      const Arr& value = ref_[n.slot];
      if (value.extents.size() != n.labels.size()) {
        error = "rank";
        return nullptr;
      }
      r->leaf = Arr{n.labels, value.extents, value.values, value.err};
      for (std::size_t m = 0; m < n.labels.size(); ++m) {
        const auto at = std::find(r->labels.begin(), r->labels.end(), n.labels[m]);
        if (at == r->labels.end()) {
          r->labels.push_back(n.labels[m]);
          r->extents.push_back(value.extents[m]);
        } else if (r->extents[static_cast<std::size_t>(at - r->labels.begin())] != value.extents[m]) {
          error = "diagonal of unequal extents";
          return nullptr;
        } else if (n.kind != Kind::leaf) {
          error = "chip/slice of a diagonal";  // not generated as valid: positional modes are ambiguous
          return nullptr;
        }
      }
      if (n.kind == Kind::chip) {
        r->mode = static_cast<std::size_t>(n.fn);
        r->index = n.index;
        if (n.index >= value.extents[r->mode]) error = "chip index out of range";
        r->labels.erase(r->labels.begin() + static_cast<std::ptrdiff_t>(r->mode));
        r->extents.erase(r->extents.begin() + static_cast<std::ptrdiff_t>(r->mode));
      } else if (n.kind == Kind::slice) {
        r->lo = n.lo;
        r->hi = n.hi;
        for (std::size_t m = 0; m < n.lo.size(); ++m) r->extents[m] = n.hi[m] - n.lo[m];
      }
      finish(*r);
      return memo[i] = error.empty() ? RPtr(r) : nullptr;
    }
    RPtr a = child(n.a);
    RPtr b = n.b >= 0 ? child(n.b) : nullptr;
    if (!error.empty()) return nullptr;
    if (n.kind == Kind::einstein) {
      // The reference's own: a's value over the labels of n.labels it has (c op= rhs).
      r->children = {a};
      for (std::size_t m = 0; m < a->labels.size(); ++m) {
        if (has(n.labels, a->labels[m])) {
          r->labels.push_back(a->labels[m]);
          r->extents.push_back(a->extents[m]);
        }
      }
      finish(*r);
      return memo[i] = r;
    }
    if (n.kind == Kind::twice) {
      // (2.0 * x).add_to_graph(g): the user's node is the scale's value over its implicit labels.
      auto value = std::const_pointer_cast<R>(einstein_operand(scaled(a, 2.0), true));
      value->user_class = true;
      return memo[i] = value;
    }
    if (n.kind == Kind::blend) {
      auto add = std::make_shared<R>();
      add->kind = Kind::add;
      const RPtr b2 = scaled(b, 2.0);
      add->children = {a, b2};
      join(*add, *a, *b2);
      if (!error.empty()) return nullptr;
      finish(*add);
      auto value = std::const_pointer_cast<R>(einstein_operand(add, true));
      value->user_class = true;
      return memo[i] = value;
    }
    if (n.kind == Kind::map || n.kind == Kind::max || n.kind == Kind::min || n.kind == Kind::sum ||
        n.kind == Kind::max_over || n.kind == Kind::min_over) {
      a = einstein_operand(a);
      if (b) b = einstein_operand(b);
    }
    r->children.push_back(a);
    if (b) r->children.push_back(b);
    switch (n.kind) {
      case Kind::add:
      case Kind::sub:
      case Kind::mul:
      case Kind::max:
      case Kind::min: join(*r, *a, *b); break;
      case Kind::div: {
        if (n.fn == 1) {  // b is the divisor (c /= rhs)
          join(*r, *a, *b);
          break;
        }
        // a / (2 + square(b)): the divisor is a map node of its own.
        auto d = std::make_shared<R>();
        const RPtr eb = einstein_operand(b);
        d->kind = Kind::map;
        d->fn = kDivisor;
        d->labels = eb->labels;
        d->extents = eb->extents;
        d->children.push_back(eb);
        finish(*d);
        r->children[1] = d;
        join(*r, *a, *d);
        break;
      }
      case Kind::scale:
      case Kind::map:
        r->labels = a->labels;
        r->extents = a->extents;
        r->x = n.x;
        r->fn = n.fn;
        break;
      case Kind::sum:
      case Kind::max_over:
      case Kind::min_over:
        r->reduced = n.labels;
        if (n.labels.size() == 2 && n.labels[0] == n.labels[1]) error = "a label reduced twice";
        for (int l : n.labels) {
          if (!has(a->labels, l)) error = "reduced label " + std::string(kLabel[l]) + " is not the operand's";
        }
        for (std::size_t m = 0; m < a->labels.size(); ++m) {
          if (!has(n.labels, a->labels[m])) {
            r->labels.push_back(a->labels[m]);
            r->extents.push_back(a->extents[m]);
          }
        }
        break;
      default: std::abort();
    }
    finish(*r);
    return memo[i] = error.empty() ? RPtr(r) : nullptr;
  }

  // ---- tenex's side ----

  template <class X>
  static EP keep(const X& x) {
    using tenex::detail::Access;
    return std::make_shared<const tenex::Operand<Tensor<T>>>(
        Access::make<tenex::Operand<Tensor<T>>>(Access::handle(static_cast<const tenex::Expression<Tensor<T>>&>(x))));
  }

  EP build_tenex(const std::vector<Node>& nodes, int i, std::vector<EP>& memo) {
    if (memo[i]) return memo[i];
    const Node& n = nodes[i];
    auto make = [&]() -> EP {
      if (n.handle >= 0) return handles_[n.handle];
      if (n.kind == Kind::leaf) return keep(tensors_[n.slot](text(n.labels)));
      if (n.kind == Kind::chip) {
        const int l = n.labels[static_cast<std::size_t>(n.fn)];
        return keep(tenex::chip(tensors_[n.slot](text(n.labels)), kLabel[l], n.index));
      }
      if (n.kind == Kind::slice) return keep(tenex::slice(tensors_[n.slot](text(n.labels)), n.lo, n.hi));
      const EP pa = build_tenex(nodes, n.a, memo);
      const EP pb = n.b >= 0 ? build_tenex(nodes, n.b, memo) : nullptr;
      const Ex& a = *pa;
      switch (n.kind) {
        case Kind::add: return keep(a + *pb);
        case Kind::sub: return keep(a - *pb);
        case Kind::mul: return keep(a * *pb);
        case Kind::div: return keep(a / (2.0 + tenex::square(*pb)));
        case Kind::max: return keep(tenex::max(a, *pb));
        case Kind::min: return keep(tenex::min(a, *pb));
        case Kind::twice: return std::make_shared<const Twice<Tensor<T>>>(a);
        case Kind::blend: return std::make_shared<const Blend<Tensor<T>>>(a, *pb);
        case Kind::scale:
          if (n.x == -1.0) return keep(-a);
          if (n.x == 0.5) return keep(a / 2.0);
          return keep(n.x * a);
        case Kind::map:
          switch (n.fn) {
            case 0: return keep(tenex::tanh(a));
            case 1: return keep(tenex::sin(a));
            case 2: return keep(tenex::abs(a));
            case 3: return keep(tenex::square(a));
            case 4: return keep(tenex::exp(tenex::clamp(a, -2.0, 2.0)));
            case 5: return keep(a + 0.5);
            case 6: return keep(1.0 - a);
            case 7: return keep(tenex::clamp(a, -0.5, 0.5));
            case 8: return keep(tenex::power(a, 3.0));
            case 9: return keep(tenex::sqrt(tenex::abs(a)) + 0.5);
            case 10: return keep(tenex::reciprocal(2.0 + tenex::square(a)));
            default: return keep(tenex::exp(a));
          }
        case Kind::sum: return keep(tenex::sum(a, text(n.labels)));
        case Kind::max_over: return keep(tenex::max_over(a, text(n.labels)));
        case Kind::min_over: return keep(tenex::min_over(a, text(n.labels)));
        default: std::abort();
      }
    };
    EP e = make();
    memo[i] = e;
    return e;
  }

  // ---- statements ----

  std::string describe(const std::vector<Node>& nodes, int i) const {
    const Node& n = nodes[static_cast<std::size_t>(i)];
    if (n.handle >= 0) return "h" + std::to_string(n.handle);
    const std::string leaf = "t" + std::to_string(n.slot) + "(\"" + text(n.labels) + "\")";
    switch (n.kind) {
      case Kind::leaf: return leaf;
      case Kind::chip:
        return "chip(" + leaf + ", \"" + kLabel[n.labels[static_cast<std::size_t>(n.fn)]] + "\", " +
               std::to_string(n.index) + ")";
      case Kind::slice: {
        std::string s = "slice(" + leaf + ", {";
        for (std::size_t m = 0; m < n.lo.size(); ++m) s += (m ? "," : "") + std::to_string(n.lo[m]);
        s += "}, {";
        for (std::size_t m = 0; m < n.hi.size(); ++m) s += (m ? "," : "") + std::to_string(n.hi[m]);
        return s + "})";
      }
      case Kind::add: return "(" + describe(nodes, n.a) + " + " + describe(nodes, n.b) + ")";
      case Kind::sub: return "(" + describe(nodes, n.a) + " - " + describe(nodes, n.b) + ")";
      case Kind::mul: return "(" + describe(nodes, n.a) + " * " + describe(nodes, n.b) + ")";
      case Kind::div: return "(" + describe(nodes, n.a) + " / (2 + square(" + describe(nodes, n.b) + ")))";
      case Kind::max: return "max(" + describe(nodes, n.a) + ", " + describe(nodes, n.b) + ")";
      case Kind::min: return "min(" + describe(nodes, n.a) + ", " + describe(nodes, n.b) + ")";
      case Kind::twice: return "Twice(" + describe(nodes, n.a) + ")";
      case Kind::blend: return "Blend(" + describe(nodes, n.a) + ", " + describe(nodes, n.b) + ")";
      case Kind::scale: {
        char x[32];
        std::snprintf(x, sizeof x, "%g", n.x);
        return std::string(x) + " * " + describe(nodes, n.a);
      }
      case Kind::map: return std::string(kFunction[n.fn].name) + "(" + describe(nodes, n.a) + ")";
      case Kind::sum: return "sum(" + describe(nodes, n.a) + ", \"" + text(n.labels) + "\")";
      case Kind::max_over: return "max_over(" + describe(nodes, n.a) + ", \"" + text(n.labels) + "\")";
      case Kind::min_over: return "min_over(" + describe(nodes, n.a) + ", \"" + text(n.labels) + "\")";
      case Kind::einstein: break;  // the reference's own node, never decoded
    }
    return "?";
  }

  /// Runs `body` on tenex; the reference's verdict is `ref_error` ("" when valid).
  void expect(const std::string& line, const std::string& ref_error, const std::function<void()>& body) {
    log(line + (ref_error.empty() ? "" : "   // invalid: " + ref_error));
    std::string thrown;
    try {
      body();
    } catch (const tenex::InternalError& e) {
      fail(std::string("InternalError (a library bug): ") + e.what());
    } catch (const tenex::Error& e) {
      thrown = e.what();
      if (thrown.empty()) fail("a tenex::Error with an empty message");
    } catch (const std::exception& e) {
      fail(std::string("an exception that is not tenex::Error: ") + e.what());
    }
    if (ref_error.empty() && !thrown.empty()) fail("tenex rejected a valid statement: " + thrown);
    if (!ref_error.empty() && thrown.empty()) fail("tenex accepted an invalid statement (" + ref_error + ")");
  }

  /// h = nodes[root]: a named intermediate, its set kept open.
  void hold(const std::vector<Node>& nodes, int root, int h) {
    std::vector<RPtr> ref_memo(nodes.size());
    std::string error;
    const RPtr value = build_ref(nodes, root, ref_memo, error);
    const std::string rhs = describe(nodes, root);
    const Node& r = nodes[static_cast<std::size_t>(root)];
    auto tenex_value = [&] {
      std::vector<EP> memo(nodes.size());
      return build_tenex(nodes, root, memo);
    };
    if (!error.empty() && r.kind == Kind::leaf && r.handle < 0) {
      // A bare t("i,i") with bad labels is not an error until it is read (it could be a
      // target): make it, then let it go unused.
      expect("(void) " + rhs + "   // unreadable, unused", "", [&] { (void)tenex_value(); });
      return;
    }
    if (!error.empty() && (r.kind == Kind::twice || r.kind == Kind::blend)) {
      // A user class's operands are checked against each other where it is first used, not
      // where it is made (make_nary takes the union of their labels): either is accepted here.
      log("h" + std::to_string(h) + " = " + rhs + "   // invalid (" + error + "); a user class may say so later");
      try {
        (void)tenex_value();
      } catch (const tenex::InternalError& e) {
        fail(std::string("InternalError (a library bug): ") + e.what());
      } catch (const tenex::Error&) {
      }
      return;
    }
    expect("h" + std::to_string(h) + " = " + rhs, error, [&] { handles_[h] = tenex_value(); });
    if (error.empty()) refs_[h] = value;
  }

  /// t[d](target) op= nodes[root]; form: 0 '=', 1 '+=', 2 '-=', 3 '*=', 4 '/=' (by 2 +
  /// square), 5 '*= 2.0'.
  void assign(const std::vector<Node>& nodes, int root, int d, int form, const Labels& target) {
    std::string error;
    std::vector<RPtr> ref_memo(nodes.size());
    const RPtr value = form == 5 ? nullptr : build_ref(nodes, root, ref_memo, error);
    if (form == 5) error.clear();  // `t(...) *= 2.0` does not use the decoded right side
    const std::string rhs = form == 5 ? "" : describe(nodes, root);
    const std::string lhs = "t" + std::to_string(d) + "(\"" + text(target) + "\")";
    for (std::size_t x = 0; x < target.size() && error.empty(); ++x) {
      for (std::size_t y = x + 1; y < target.size(); ++y) {
        if (target[x] == target[y]) error = "repeated target label";
      }
    }
    RPtr whole = value;
    std::vector<std::size_t> new_extents;
    if (error.empty() && form != 0) {
      // c op= rhs is c = c op e, where e is what c = rhs would write for +=, -= and /= (the
      // labels c lacks summed out of rhs first; docs/einstein.md) and rhs itself for *=.
      std::vector<Node> both = nodes;
      Node leaf;
      leaf.slot = d;
      leaf.labels = target;
      both.push_back(leaf);
      const int c = static_cast<int>(both.size()) - 1;
      int e = root;
      if (form == 4) {  // the divisor, 2 + square(rhs)
        Node divisor;
        divisor.kind = Kind::map;
        divisor.fn = kDivisor;
        divisor.a = e;
        both.push_back(divisor);
        e = static_cast<int>(both.size()) - 1;
      }
      if (form == 1 || form == 2 || form == 4) {
        Node written;
        written.kind = Kind::einstein;
        written.a = e;
        written.labels = target;
        both.push_back(written);
        e = static_cast<int>(both.size()) - 1;
      }
      Node op;
      op.a = c;
      op.b = e;
      op.fn = 1;  // a divisor as it is
      op.kind = form == 1 ? Kind::add : form == 2 ? Kind::sub : form == 3 ? Kind::mul : Kind::div;
      if (form == 5) {
        op.kind = Kind::scale;
        op.x = 2.0;
        op.b = -1;
      }
      both.push_back(op);
      std::vector<RPtr> memo(both.size());
      for (std::size_t k = 0; k < ref_memo.size(); ++k) memo[k] = ref_memo[k];
      whole = build_ref(both, static_cast<int>(both.size()) - 1, memo, error);
    }
    if (error.empty()) {
      for (int l : target) {
        const auto at = std::find(whole->labels.begin(), whole->labels.end(), l);
        if (at == whole->labels.end()) {
          error = "target label " + std::string(kLabel[l]) + " is not produced by the right side";
          break;
        }
        new_extents.push_back(whole->extents[static_cast<std::size_t>(at - whole->labels.begin())]);
      }
    }
    if (error.empty() && form != 5) {
      // The statement's right side as tenex checks it: over the labels the target keeps (for
      // /=, the divisor 2 + square(rhs), a scalar term).
      const Labels keep = intersect(value->labels, target);
      if (form == 4) {
        for (int l : value->implicit) {
          if (!has(keep, l)) error = "label " + std::string(kLabel[l]) + " summed over a sum with a scalar term";
        }
      }
      if (error.empty()) error = stray_label(*value, keep, {}, {});
    }
    const char* const op_text[] = {" = ", " += ", " -= ", " *= ", " /= 2 + square ", " *= 2.0"};
    const std::string line = lhs + op_text[form] + rhs;
    if (error.empty()) {
      // Programs the reference cannot afford are left out (the same in every run).
      g_ref.dry = true;
      g_ref.cost = 0.0;
      (void)eval(*whole, target);
      g_ref.dry = false;
      if (g_ref.cost > limits_.max_work) {
        ++counts_.left_out;
        log("// left out (reference work " + std::to_string(static_cast<long long>(g_ref.cost)) + "): " + line);
        return;
      }
    }
    ++(error.empty() ? counts_.valid : counts_.invalid);
    expect(line, error, [&] {
      auto tenex_value = [&] {
        std::vector<EP> memo(nodes.size());
        return build_tenex(nodes, root, memo);
      };
      Tensor<T>& t = tensors_[d];
      const std::string labels = text(target);
      switch (form) {
        case 1: t(labels) += *tenex_value(); break;
        case 2: t(labels) -= *tenex_value(); break;
        case 3: t(labels) *= *tenex_value(); break;
        case 4: t(labels) /= 2.0 + tenex::square(*tenex_value()); break;
        case 5: t(labels) *= 2.0; break;
        default: t(labels) = *tenex_value(); break;
      }
    });
    if (error.empty()) {
      Arr result;
      if (recording_.complete) {
        if (replayed_ >= recording_.results.size()) fail("the program decoded differently from its first run");
        result = recording_.results[replayed_++];
      } else {
        result = eval(*whole, target);
        recording_.results.push_back(result);
      }
      ref_[d] = Arr{{}, new_extents, std::move(result.values), std::move(result.err)};
      if (g_ref.check_each) compare(d, "right after its statement");
    }
  }

  Labels shuffled(Labels labels) {
    for (std::size_t k = labels.size(); k > 1; --k)
      std::swap(labels[k - 1], labels[in_.below(static_cast<unsigned>(k))]);
    return labels;
  }

  /// A target for a value over `labels`: a random subset in a random order (each kept with
  /// probability keep/256); now and then a wrong label.
  Labels target_for(const Labels& labels, unsigned keep_chance = 180) {
    Labels target;
    for (int l : labels) {
      if (in_.chance(keep_chance)) target.push_back(l);
    }
    target = shuffled(target);
    if (in_.chance(12)) target.push_back(static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels))));
    return target;
  }

  void statement() {
    const unsigned what = in_.below(16 + limits_.templates);
    if (what >= 16) {
      generated_template(in_.below(7));
      return;
    }
    if (what == 0) {  // read a tensor in the middle
      const int s = static_cast<int>(in_.below(static_cast<unsigned>(limits_.slots)));
      log("read t" + std::to_string(s));
      compare(s, "read in the middle");
      return;
    }
    if (what == 1) {  // drop a handle (may evaluate its set)
      const int h = static_cast<int>(in_.below(kHandles));
      log("drop h" + std::to_string(h));
      handles_[h].reset();
      refs_[h].reset();
      return;
    }
    if (what == 2) {  // copy a tensor (reads a pending source)
      const int d = static_cast<int>(in_.below(static_cast<unsigned>(limits_.slots)));
      const int s = static_cast<int>(in_.below(static_cast<unsigned>(limits_.slots)));
      log("t" + std::to_string(d) + " = t" + std::to_string(s) + "   // copy");
      tensors_[d] = Tensor<T>(tensors_[s]);
      ref_[d] = ref_[s];
      return;
    }
    if (what == 3) {  // write one element through at()
      const int s = static_cast<int>(in_.below(static_cast<unsigned>(limits_.slots)));
      Arr& r = ref_[s];
      if (r.extents.size() > 5) return;
      std::vector<std::size_t> index;
      for (std::size_t e : r.extents) index.push_back(in_.below(static_cast<unsigned>(e)));
      const double v = static_cast<double>(in_.below(9)) - 4.0;
      std::size_t o = 0;
      for (std::size_t m = 0; m < index.size(); ++m) o = o * r.extents[m] + index[m];
      log("t" + std::to_string(s) + ".at(...) = " + std::to_string(v));
      Tensor<T>& t = tensors_[s];
      switch (index.size()) {
        case 0: t.at() = static_cast<T>(v); break;
        case 1: t.at(index[0]) = static_cast<T>(v); break;
        case 2: t.at(index[0], index[1]) = static_cast<T>(v); break;
        case 3: t.at(index[0], index[1], index[2]) = static_cast<T>(v); break;
        case 4: t.at(index[0], index[1], index[2], index[3]) = static_cast<T>(v); break;
        default: t.at(index[0], index[1], index[2], index[3], index[4]) = static_cast<T>(v); break;
      }
      r.values[o] = v;
      if (!r.err.empty()) r.err[o] = 0.0;
      return;
    }
    std::vector<Node> nodes;
    const int root = decode(nodes, 1 + static_cast<int>(in_.below(3)));
    if (what == 4) {
      hold(nodes, root, static_cast<int>(in_.below(kHandles)));
      return;
    }
    // An assignment to t[d]: =, +=, -=, *=, /= or a scalar form.
    const int d = static_cast<int>(in_.below(static_cast<unsigned>(limits_.slots)));
    const int forms[] = {0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 0};  // what - 5
    const int form = forms[what - 5];
    Labels target;
    std::string error;
    std::vector<RPtr> ref_memo(nodes.size());
    const RPtr value = build_ref(nodes, root, ref_memo, error);
    if (form == 0 || (!value && form != 5)) {
      target = target_for(value ? value->labels : Labels{});
    } else {
      target = operand_labels(ref_[d].extents);
    }
    assign(nodes, root, d, form, target);
  }

  // ---- templates: the shapes that hid defects, with random labels, extents and functions ----

  int leaf(std::vector<Node>& nodes, int slot, const Labels& labels) {
    Node n;
    n.slot = slot;
    n.labels = labels;
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }
  int handle_leaf(std::vector<Node>& nodes, int h) {
    Node n;
    n.handle = h;
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }
  int op(std::vector<Node>& nodes, Kind kind, int a, int b = -1, int fn = 0, double x = 0.0) {
    Node n;
    n.kind = kind;
    n.a = a;
    n.b = b;
    n.fn = fn;
    n.x = x;
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }
  int reduce(std::vector<Node>& nodes, Kind kind, int a, const Labels& labels) {
    const int r = op(nodes, kind, a);
    nodes[static_cast<std::size_t>(r)].labels = labels;
    return r;
  }

  /// rank_lo..rank_hi distinct labels (from `pool` when not empty), with as close to
  /// [lo, hi] elements as a few draws find.
  Labels pick(int rank_lo, int rank_hi, std::size_t lo, std::size_t hi, const Labels& pool = {}) {
    Labels from = pool;
    if (from.empty()) {
      for (int l = 0; l < limits_.labels; ++l) from.push_back(l);
    }
    rank_hi = std::min(rank_hi, static_cast<int>(from.size()));
    rank_lo = std::min(rank_lo, rank_hi);
    Labels best;
    double best_miss = 1e300;
    for (int attempt = 0; attempt < 24; ++attempt) {
      const Labels order = shuffled(from);
      const int rank = rank_lo + static_cast<int>(in_.below(static_cast<unsigned>(rank_hi - rank_lo + 1)));
      Labels labels(order.begin(), order.begin() + rank);
      // Too few elements: more labels, while the rank allows.
      for (auto more = order.begin() + rank;
           more != order.end() && static_cast<int>(labels.size()) < rank_hi && elements(labels) < lo; ++more) {
        if (elements(labels) * extent_[*more] <= hi) labels.push_back(*more);
      }
      const double n = static_cast<double>(elements(labels));
      const double miss = n < static_cast<double>(lo)   ? std::log(static_cast<double>(lo) / n)
                          : n > static_cast<double>(hi) ? std::log(n / static_cast<double>(hi))
                                                        : 0.0;
      if (miss < best_miss) {
        best = labels;
        best_miss = miss;
      }
      if (miss == 0.0) break;
    }
    return best;
  }

  /// A random function index, or (now and then) none: -1.
  int some_function(bool plain_exp_allowed) {
    const unsigned f = in_.below(plain_exp_allowed ? kFunctions + 2 : kFunctions);
    return f >= static_cast<unsigned>(kFunctions) ? kExp : static_cast<int>(f);
  }

  void generated_template(unsigned which) {
    log("// template " + std::to_string(which));
    ++counts_.templates;
    const int slots = limits_.slots;
    auto slot = [&](int k) { return k % slots; };
    const int base = static_cast<int>(in_.below(static_cast<unsigned>(slots)));
    std::vector<Node> nodes;
    switch (which) {
      case 0: {
        // A product with a function of a large tensor among small factors, labels contracted
        // across nested products (issue 29, first defect). A third of the time in the shape of
        // that defect: (s1 * s2 [* f(B)]) with s1, s2 over B's labels, inside a product with
        // more factors; a third f(B) * M, M holding every label of B the target drops and one
        // of its own (f(B) keeps all its labels and feeds a GEMM: the defect's failing kernel);
        // otherwise the factors in a random tree.
        const Labels big = pick(3, 6, limits_.big_lo, limits_.big_hi);
        const unsigned variant = in_.below(3);
        if (variant == 2) {
          fresh(slot(base), big);
          int fb = leaf(nodes, slot(base), big);
          fb = op(nodes, Kind::map, fb, -1, in_.chance(100) ? 10 : some_function(true));
          const Labels summed = pick(1, static_cast<int>(big.size()) - 1, 2, limits_.max_elements / 4, big);
          Labels lm = summed;
          const Labels outside = minus(pick(limits_.labels, limits_.labels, 1, 1), big);
          if (!outside.empty()) lm.push_back(outside[0]);
          lm = shuffled(lm);
          fresh(slot(base + 1), lm);
          const int m = leaf(nodes, slot(base + 1), lm);
          int e = in_.chance(128) ? op(nodes, Kind::mul, fb, m) : op(nodes, Kind::mul, m, fb);
          if (in_.chance(30)) e = op(nodes, Kind::scale, e, -1, 0, 2.0);
          Labels target = minus(big, summed);
          if (!outside.empty()) target.push_back(outside[0]);
          assign(nodes, e, slot(base + 2), 0, shuffled(target));
          break;
        }
        Labels all = big;
        for (int extra = static_cast<int>(in_.below(3)); extra > 0; --extra) {
          const int l = static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels)));
          if (!has(all, l) &&
              static_cast<double>(elements(all)) * static_cast<double>(extent_[l]) <= limits_.max_work / 4) {
            all.push_back(l);
          }
        }
        const bool shaped = variant == 1;
        // In the defect's shape the rest is a product of two factors that share a label of
        // their own (e("c5,c6") * d("j,c4,c6"), c6 of extent 1), summed between them.
        int own = -1;
        if (shaped) {
          const Labels outside = minus(pick(limits_.labels, limits_.labels, 1, 1), big);
          if (!outside.empty()) {
            own = outside[0];
            // Half the time one of extent 1 where there is one (the defect needed that).
            const bool unit = in_.chance(128);
            for (int l : outside) {
              if (unit && extent_[l] == 1) own = l;
            }
            if (!has(all, own)) all.push_back(own);
          }
        }
        const int factors =
            std::min(shaped ? 4 + static_cast<int>(in_.below(2)) : 2 + static_cast<int>(in_.below(4)), slots);
        fresh(slot(base), big);
        std::vector<int> parts;
        int fb = leaf(nodes, slot(base), big);
        fb = op(nodes, Kind::map, fb, -1, in_.chance(100) ? 10 : some_function(true));
        parts.push_back(fb);
        for (int f = 1; f < factors; ++f) {
          // In the defect's shape, the first two small factors carry labels of B only.
          Labels labels =
              shaped && f <= 2 ? pick(1, 2, 1, limits_.max_elements, big) : pick(1, 3, 1, limits_.max_elements, all);
          if (shaped && f >= 3 && own >= 0 && !has(labels, own)) {
            labels = pick(0, 2, 1, std::max<std::size_t>(1, limits_.max_elements / extent_[own]), minus(all, {own}));
            labels.insert(labels.begin() + in_.below(static_cast<unsigned>(labels.size()) + 1), own);
          }
          fresh(slot(base + f), labels);
          int p = leaf(nodes, slot(base + f), labels);
          if (in_.chance(40)) p = op(nodes, Kind::map, p, -1, some_function(true));
          parts.push_back(p);
        }
        auto multiply = [&](int a, int b) {
          int m = in_.chance(128) ? op(nodes, Kind::mul, a, b) : op(nodes, Kind::mul, b, a);
          if (in_.chance(30)) m = op(nodes, Kind::scale, m, -1, 0, in_.chance(128) ? 2.0 : -1.0);
          return m;
        };
        if (shaped) {
          // ((s1 * s2) * f(B)) or (s1 * (s2 * f(B))), then the rest as a product of its own.
          int inner = in_.chance(128) ? multiply(multiply(parts[1], parts[2]), parts[0])
                                      : multiply(parts[1], multiply(parts[2], parts[0]));
          int rest = parts[3];
          for (std::size_t f = 4; f < parts.size(); ++f) rest = multiply(rest, parts[f]);
          parts = {multiply(rest, inner)};
        }
        while (parts.size() > 1) {
          const std::size_t x = in_.below(static_cast<unsigned>(parts.size()));
          const int a = parts[x];
          parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(x));
          const std::size_t y = in_.below(static_cast<unsigned>(parts.size()));
          parts[y] = multiply(a, parts[y]);
        }
        // The target: 1 to 3 labels the factors show.
        std::vector<RPtr> memo(nodes.size());
        std::string error;
        const RPtr value = build_ref(nodes, parts[0], memo, error);
        const Labels target = value ? pick(1, 3, 1, limits_.max_work, value->labels) : Labels{};
        assign(nodes, parts[0], slot(base + factors), 0, target);
        break;
      }
      case 1: {
        // A function of a large tensor summed over labels the target drops, implicitly or
        // explicitly, assigned more than once (issue 29, second defect).
        const Labels big = pick(2, 3, limits_.big_lo, limits_.big_hi);
        fresh(slot(base), big);
        const int fn = in_.chance(128) ? kExp : some_function(true);
        const Labels dropped = pick(1, static_cast<int>(big.size()) - 1, 1, limits_.max_work, big);
        const int d = slot(base + 1 + static_cast<int>(in_.below(static_cast<unsigned>(slots - 1))));
        const unsigned variant = in_.below(4);
        for (int times = 1 + static_cast<int>(in_.below(2)); times > 0; --times) {
          nodes.clear();
          int e = op(nodes, Kind::map, leaf(nodes, slot(base), big), -1, fn);
          if (variant == 1) e = reduce(nodes, Kind::sum, e, dropped);
          if (variant == 2) e = op(nodes, Kind::scale, e, -1, 0, 0.5);
          if (variant == 3) e = op(nodes, Kind::map, e, -1, some_function(false));
          assign(nodes, e, d, 0, shuffled(minus(big, dropped)));
        }
        break;
      }
      case 2: {
        // A reduction (max_over, min_over, sum) of functions of a rank-4 to 6 tensor, the
        // target a permutation (or a part) of the rest (issue 29, third defect).
        const Labels big = pick(4, 6, limits_.big_lo, limits_.big_hi);
        fresh(slot(base), big);
        int e = leaf(nodes, slot(base), big);
        for (int fns = 1 + static_cast<int>(in_.below(2)); fns > 0; --fns)
          e = op(nodes, Kind::map, e, -1, some_function(true));
        const Kind kinds[] = {Kind::max_over, Kind::min_over, Kind::sum};
        const Labels reduced = pick(1, 3, 1, limits_.max_work, big);
        e = reduce(nodes, kinds[in_.below(3)], e, shuffled(reduced));
        const Labels rest = minus(big, reduced);
        const Labels target = in_.chance(190) ? shuffled(rest) : target_for(rest, 200);
        assign(nodes, e, slot(base + 1), 0, target);
        break;
      }
      case 3: {
        // A broadcast into a reduction: red(a op b) with b lacking labels of a, explicit or
        // implicit (issue 29, fourth defect).
        const bool large = in_.chance(100);
        const Labels la = large ? pick(2, 4, limits_.big_lo, limits_.big_hi) : pick(1, 4, 2, limits_.max_elements);
        Labels lb = pick(0, static_cast<int>(la.size()) - 1, 1, limits_.max_elements, la);
        if (in_.chance(40)) {
          const int l = static_cast<int>(in_.below(static_cast<unsigned>(limits_.labels)));
          if (!has(la, l) && !has(lb, l)) lb.push_back(l);  // broadcast both ways
        }
        lb = shuffled(lb);
        fresh(slot(base), la);
        fresh(slot(base + 1), lb);
        int a = leaf(nodes, slot(base), la);
        int b = leaf(nodes, slot(base + 1), lb);
        if (in_.chance(50)) b = op(nodes, Kind::map, b, -1, some_function(true));
        if (in_.chance(128)) std::swap(a, b);
        const Kind kinds[] = {Kind::add, Kind::sub, Kind::div, Kind::max, Kind::min, Kind::add, Kind::blend};
        int e = op(nodes, kinds[in_.below(7)], a, b);
        if (in_.chance(40)) e = op(nodes, Kind::map, e, -1, some_function(false));
        Labels shown = la;
        for (int l : lb) {
          if (!has(shown, l)) shown.push_back(l);
        }
        const Labels only_a = minus(la, lb);
        const Labels reduced = !only_a.empty() && in_.chance(200) ? pick(1, 2, 1, limits_.max_work, only_a)
                                                                  : pick(1, 2, 1, limits_.max_work, shown);
        const unsigned how = in_.below(5);  // 0-2: sum, max_over, min_over; 3: implicit; 4: sum, then more implicitly
        Labels target;
        if (how == 3) {
          target = shuffled(minus(shown, reduced));
        } else {
          const Kind red[] = {Kind::sum, Kind::max_over, Kind::min_over, Kind::sum};
          e = reduce(nodes, red[std::min(how, 3u)], e, shuffled(reduced));
          target = how == 4 ? target_for(minus(shown, reduced), 160) : shuffled(minus(shown, reduced));
          if (in_.chance(50)) {  // the reduction inside a larger expression
            const Labels lc = pick(0, 2, 1, limits_.max_elements, minus(shown, reduced));
            fresh(slot(base + 2), lc);
            const int c = leaf(nodes, slot(base + 2), lc);
            e = in_.chance(128) ? op(nodes, Kind::add, e, c) : op(nodes, Kind::mul, e, c);
          }
        }
        assign(nodes, e, slot(base + 3), 0, target);
        break;
      }
      case 4: {
        // Nested user classes, beside their own operands (issue 29, fifth defect).
        const Labels lx = pick(1, 3, 2, limits_.max_elements);
        fresh(slot(base), lx);
        int x = leaf(nodes, slot(base), lx);
        if (in_.chance(60)) {  // x a product: the user class sees it contracted
          const Labels ly = pick(1, 2, 1, limits_.max_elements);
          fresh(slot(base + 1), ly);
          x = op(nodes, Kind::mul, x, leaf(nodes, slot(base + 1), ly));
        }
        int e = x;
        for (int depth = 2 + static_cast<int>(in_.below(3)); depth > 0; --depth) {
          switch (in_.below(9)) {
            case 0:
            case 1:
            case 2: e = op(nodes, Kind::twice, e); break;
            case 3: e = op(nodes, Kind::blend, e, x); break;
            case 4: e = op(nodes, Kind::blend, x, e); break;
            case 5: e = op(nodes, Kind::add, e, x); break;
            case 6: e = op(nodes, Kind::sub, x, e); break;
            case 7: e = op(nodes, Kind::mul, e, x); break;
            default: e = op(nodes, Kind::map, e, -1, some_function(false)); break;
          }
        }
        std::vector<RPtr> memo(nodes.size());
        std::string error;
        const RPtr value = build_ref(nodes, e, memo, error);
        assign(nodes, e, slot(base + 2), 0, target_for(value ? value->labels : Labels{}, 220));
        break;
      }
      case 5: {
        // A named intermediate used twice in one statement and again in another.
        const int h = static_cast<int>(in_.below(kHandles));
        std::vector<Node> held;
        const int root = decode(held, 1 + static_cast<int>(in_.below(2)));
        hold(held, root, h);
        if (!handles_[h]) break;
        for (int uses = 1 + static_cast<int>(in_.below(2)); uses > 0; --uses) {
          nodes.clear();
          const int a = handle_leaf(nodes, h);
          const Kind kinds[] = {Kind::add, Kind::mul, Kind::sub, Kind::max, Kind::blend, Kind::div};
          int e = op(nodes, kinds[in_.below(6)], a, in_.chance(160) ? a : decode(nodes, 1));
          if (in_.chance(80)) e = op(nodes, Kind::map, e, -1, some_function(false));
          std::vector<RPtr> memo(nodes.size());
          std::string error;
          const RPtr value = build_ref(nodes, e, memo, error);
          assign(nodes, e, static_cast<int>(in_.below(static_cast<unsigned>(slots))), 0,
                 target_for(value ? value->labels : Labels{}));
        }
        if (in_.chance(128)) {
          log("drop h" + std::to_string(h));
          handles_[h].reset();
          refs_[h].reset();
        }
        break;
      }
      default: {
        // `+=` (-=, *=, /=) chains on one target through a set a held handle keeps open.
        const int d = slot(base);
        const Labels lt = pick(1, 3, 2, limits_.max_elements);
        fresh(d, lt);
        const int h = static_cast<int>(in_.below(kHandles));
        std::vector<Node> held;
        const int root = decode(held, 1);
        hold(held, root, h);
        for (int ops = 2 + static_cast<int>(in_.below(3)); ops > 0; --ops) {
          nodes.clear();
          int e = decode(nodes, 1 + static_cast<int>(in_.below(2)));
          if (handles_[h] && in_.chance(160))
            e = op(nodes, in_.chance(128) ? Kind::mul : Kind::add, handle_leaf(nodes, h), e);
          const int forms[] = {1, 1, 1, 2, 2, 3, 4, 5};
          assign(nodes, e, d, forms[in_.below(8)], in_.chance(240) ? lt : shuffled(lt));
          if (in_.chance(40)) {
            log("read t" + std::to_string(d));
            compare(d, "read in the middle");
          }
        }
        if (in_.chance(160)) {
          log("drop h" + std::to_string(h));
          handles_[h].reset();
          refs_[h].reset();
        }
        break;
      }
    }
  }

  void compare(int s, const std::string& when) {
    const Arr& want = ref_[s];
    std::vector<T> got;
    std::vector<std::size_t> extents;
    try {
      got = tensors_[s].to_vector();
      extents = tensors_[s].shape().extents();
    } catch (const std::exception& e) {
      fail("t" + std::to_string(s) + " " + when + ": reading threw " + e.what());
    }
    reads_.what.push_back("t" + std::to_string(s) + " " + when + " (statement " +
                          std::to_string(std::count(transcript_.begin(), transcript_.end(), '\n')) + ")");
    reads_.values.push_back(got);
    if (extents != want.extents) {
      fail("t" + std::to_string(s) + " " + when + ": shape " + shape_text(extents) + ", the reference has " +
           shape_text(want.extents));
    }
    for (std::size_t x = 0; x < got.size(); ++x) {
      const double g = static_cast<double>(got[x]), w = want.values[x];
      const double bound = kUnit * err_at(want, x);
      bool same = (std::isnan(g) && std::isnan(w)) || g == w || !(bound < INFINITY);  // unchecked: see rounded()
      if (!same && std::isfinite(g) && std::isfinite(w)) {
        const double off = std::abs(g - w);
        same = off <= kBoundFactor * bound;
        if (bound > 0) worst_ratio_ = std::max(worst_ratio_, off / bound);
      }
      if (!same) {
        char line[256];
        std::snprintf(line, sizeof line, ": element %zu is %.17g, the reference says %.17g (tolerance %.3g)", x, g, w,
                      kBoundFactor * bound);
        fail("t" + std::to_string(s) + " " + when + line);
      }
    }
  }

  Bytes in_;
  const Limits& limits_;
  bool verbose_;
  Recording& recording_;
  std::size_t replayed_ = 0;
  std::size_t extent_[kMaxLabels] = {};
  std::string transcript_;
  Tensor<T> tensors_[kMaxSlots];
  Arr ref_[kMaxSlots];
  EP handles_[kHandles];
  RPtr refs_[kHandles];
  Reads<T> reads_;
  Counts counts_;
  double worst_ratio_ = 0.0;
};

// ---- Configurations and the runner -----------------------------------------------------

/// One way to run a program: TENEX_PASSES (empty: unset, every pass), TENEX_PLAN_CACHE, the
/// OpenMP thread count (0: leave it), and how many times in a row.
struct Config {
  std::string passes;
  bool plan_cache = true;
  int threads = 0;
  int repeats = 1;
  std::string name() const {
    return "TENEX_PASSES=" + (passes.empty() ? std::string("(all)") : passes) +
           (plan_cache ? "" : " TENEX_PLAN_CACHE=0") + (threads ? " threads=" + std::to_string(threads) : "");
  }
};

/// The pass names TENEX_PASSES accepts, read from the library's own message for an unknown
/// one (so the list follows src/tenex/graph/passes/optimize.cpp).
inline std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  ::setenv("TENEX_PASSES", "no-such-pass", 1);
  try {
    Tensor<double> a(Shape{2}), b;
    tenex::fill_random(a, 1);
    b("i") = a("i");
    (void)b.to_vector();
  } catch (const tenex::Error& e) {
    const std::string what = e.what();
    const std::string marker = "list of: ";
    std::size_t at = what.find(marker);
    if (at != std::string::npos) {
      at += marker.size();
      while (at < what.size()) {
        std::size_t end = what.find(", ", at);
        if (end == std::string::npos) end = what.size();
        names.push_back(what.substr(at, end - at));
        at = end + 2;
      }
    }
  }
  ::unsetenv("TENEX_PASSES");
  if (names.empty()) names = {"cse", "order", "fold_scales", "gemm_beta", "slice", "collapse", "fuse", "sparse"};
  return names;
}

/// Sets the environment for `c` (and resets it when destroyed).
struct Environment {
  explicit Environment(const Config& c) {
    if (c.passes.empty()) {
      ::unsetenv("TENEX_PASSES");
    } else {
      ::setenv("TENEX_PASSES", c.passes.c_str(), 1);
    }
    if (c.plan_cache) {
      ::unsetenv("TENEX_PLAN_CACHE");
    } else {
      ::setenv("TENEX_PLAN_CACHE", "0", 1);
    }
  }
  ~Environment() {
    ::unsetenv("TENEX_PASSES");
    ::unsetenv("TENEX_PLAN_CACHE");
  }
};

/// The outcome of run_program: empty `failure` when every run agreed.
struct Outcome {
  std::string failure;  // the configuration, the program and what went wrong
  int runs = 0;
  Counts counts;  // of the first run
  double worst_ratio = 0.0;
};

template <class T>
Outcome run_program_as(const std::uint8_t* data, std::size_t size, const Limits& limits,
                       const std::vector<Config>& configs, bool verbose, void (*set_threads)(int)) {
  Outcome out;
  Recording recording;
  for (const Config& c : configs) {
    const Environment env(c);
    if (c.threads && set_threads) set_threads(c.threads);
    std::optional<Reads<T>> first;
    std::string first_transcript;
    for (int rep = 0; rep < c.repeats; ++rep) {
      Program<T> program(data, size, limits, verbose && out.runs == 0, recording);
      ++out.runs;
      const std::string where =
          c.name() + (c.repeats > 1 ? ", run " + std::to_string(rep + 1) + " of " + std::to_string(c.repeats) : "");
      try {
        program.run();
      } catch (const Failure& f) {
        out.failure = "mismatch with " + where + "\n--- program ---\n" + program.transcript() + "--- " + f.what;
        return out;
      }
      out.worst_ratio = std::max(out.worst_ratio, program.worst_ratio());
      if (out.runs == 1) out.counts = program.counts();
      if (!first) {
        first = program.reads();
        continue;
      }
      const Reads<T>& again = program.reads();
      for (std::size_t r = 0; r < again.values.size() && r < first->values.size(); ++r) {
        const std::vector<T>& x = first->values[r];
        const std::vector<T>& y = again.values[r];
        if (x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0)) continue;
        std::size_t e = 0;
        while (e < x.size() && e < y.size() && std::memcmp(&x[e], &y[e], sizeof(T)) == 0) ++e;
        char line[200];
        std::snprintf(line, sizeof line, "element %zu: %.17g in run 1, %.17g in run %d", e,
                      e < x.size() ? static_cast<double>(x[e]) : NAN, e < y.size() ? static_cast<double>(y[e]) : NAN,
                      rep + 1);
        out.failure = "repetitions differ with " + c.name() + ": " + again.what[r] + ", " + line +
                      " (both within the reference's tolerance)\n--- program ---\n" + program.transcript() + "---";
        return out;
      }
      if (again.values.size() != first->values.size()) {
        out.failure = "repetitions read a different number of tensors with " + c.name() + "\n--- program ---\n" +
                      program.transcript() + "---";
        return out;
      }
    }
  }
  return out;
}

/// Runs the program `data` encodes under every configuration (its first byte chooses float
/// or double, with limits.float_chance in 256).
inline Outcome run_program(const std::uint8_t* data, std::size_t size, const Limits& limits,
                           const std::vector<Config>& configs, bool verbose, void (*set_threads)(int) = nullptr) {
  const bool as_float = size > 0 && data[0] < limits.float_chance;
  return as_float ? run_program_as<float>(data, size, limits, configs, verbose, set_threads)
                  : run_program_as<double>(data, size, limits, configs, verbose, set_threads);
}

}  // namespace tenex_fuzz
