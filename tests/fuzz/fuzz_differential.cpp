// libFuzzer target: differential testing of whole programs against a naive reference.
//
// The input bytes decode into a program of statements over four small tensors (ranks 0 to 3,
// labels from {i, j, k, l, m} with extents {2, 3, 2, 3, 1}): assignments `=`, `+=`, `-=`,
// `*=`, `/=` and scalar forms, targets reused as operands, expressions of + - * /, scales,
// element-wise functions, max/min, sum/max_over/min_over, chip and slice, named handles held
// across statements (sharing, and linked sets kept open) and destroyed in any order, element
// writes through at(), tensor copies and reads in the middle of a set.
//
// tenex runs the program twice (with the passes, then with TENEX_PASSES=none); a naive
// reference (plain loops over std::vector<double>) evaluates it statement by statement in
// program order. Every read and the final tensors must agree within a tolerance, a
// statement the reference rejects must throw tenex::Error where it is written (and change
// nothing), and a statement it accepts must not throw. Any disagreement aborts with the
// program printed.
//
//   ./fuzz_differential corpus/fuzz_differential     # docs/reliability.md
//   TENEX_FUZZ_VERBOSE=1 ./fuzz_differential crash-...   # prints the program as it runs
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;
using E = tenex::Operand<Tensor<double>>;

constexpr int kSlots = 4;
constexpr int kHandles = 4;
constexpr int kAlphabet = 5;
const char* const kLabel[kAlphabet] = {"i", "j", "k", "l", "m"};
constexpr std::size_t kExtent[kAlphabet] = {2, 3, 2, 3, 1};

// ---- The input -------------------------------------------------------------------------

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool empty() const { return at_ >= size_; }
  unsigned next() { return at_ < size_ ? data_[at_++] : 0u; }
  unsigned below(unsigned n) { return next() % n; }
  bool chance(unsigned in256) { return next() < in256; }

 private:
  const std::uint8_t* data_;
  std::size_t size_, at_ = 0;
};

// ---- The reference ---------------------------------------------------------------------

/// max and min as tenex defines them: a NaN on either side gives NaN (std::max would keep
/// its first operand).
double ieee_max(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); }
double ieee_min(double x, double y) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); }

using Labels = std::vector<int>;  // alphabet indices

std::string text(const Labels& labels) {
  std::string s;
  for (int l : labels) s += (s.empty() ? "" : ",") + std::string(kLabel[l]);
  return s;
}

bool has(const Labels& labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

/// A dense row-major array whose modes carry labels (unique, except a leaf's written labels).
struct Arr {
  Labels labels;
  std::vector<std::size_t> extents;
  std::vector<double> values;
};

std::size_t count(const std::vector<std::size_t>& extents) {
  std::size_t n = 1;
  for (std::size_t e : extents) n *= e;
  return n;
}

/// Offset in `a` of the element whose labels have the values `index` (by alphabet label).
std::size_t offset(const Arr& a, const std::size_t* index) {
  std::size_t o = 0;
  for (std::size_t m = 0; m < a.labels.size(); ++m) o = o * a.extents[m] + index[a.labels[m]];
  return o;
}

/// Calls f(index) for every value of `labels` (extents from `extent_of`).
void for_each_index(const Labels& labels, const std::size_t* extent_of, const std::function<void(std::size_t*)>& f) {
  std::size_t index[kAlphabet] = {};
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

/// The largest magnitude of any value the reference computed (scales the tolerance: rounding
/// differences grow with the terms summed, not with the result).
double g_magnitude = 1.0;

void note_magnitude(const std::vector<double>& values) {
  for (double v : values) {
    if (std::isfinite(v)) g_magnitude = std::max(g_magnitude, std::abs(v));
  }
}

/// out[keep] = sum over every other label of the product of the operands (their repeated
/// labels read diagonals).
Arr einsum(const std::vector<const Arr*>& operands, const Labels& keep) {
  std::size_t extent_of[kAlphabet] = {};
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
  out.values.assign(count(out.extents), 0.0);
  for_each_index(all, extent_of, [&](std::size_t* index) {
    double p = 1.0;
    for (const Arr* a : operands) p *= a->values[offset(*a, index)];
    out.values[offset(out, index)] += p;
  });
  note_magnitude(out.values);
  return out;
}

/// out[labels] = f(a, b) element by element, matched by label and broadcast.
Arr combine(const Arr& a, const Arr& b, const Labels& labels, double (*f)(double, double)) {
  std::size_t extent_of[kAlphabet] = {};
  for (std::size_t m = 0; m < a.labels.size(); ++m) extent_of[a.labels[m]] = a.extents[m];
  for (std::size_t m = 0; m < b.labels.size(); ++m) extent_of[b.labels[m]] = b.extents[m];
  Arr out;
  out.labels = labels;
  for (int l : labels) out.extents.push_back(extent_of[l]);
  out.values.assign(count(out.extents), 0.0);
  for_each_index(labels, extent_of, [&](std::size_t* index) {
    out.values[offset(out, index)] = f(a.values[offset(a, index)], b.values[offset(b, index)]);
  });
  note_magnitude(out.values);
  return out;
}

enum class Kind { leaf, add, sub, div, mul, scale, map, max, min, sum, max_over, min_over, chip, slice, einstein };

double fn_tanh(double x) { return std::tanh(x); }
double fn_sin(double x) { return std::sin(x); }
double fn_abs(double x) { return std::abs(x); }
double fn_square(double x) { return x * x; }
double fn_exp_clamped(double x) { return std::exp(std::min(2.0, std::max(-2.0, x))); }
double fn_plus_half(double x) { return x + 0.5; }
double fn_one_minus(double x) { return 1.0 - x; }
double fn_clamp(double x) { return std::min(0.5, std::max(-0.5, x)); }
double fn_cube(double x) { return x * x * x; }
double fn_two_plus_square(double x) { return 2.0 + x * x; }
constexpr int kFunctions = 9;  // fn_two_plus_square is the divisor of `/`, not drawn on its own
double (*const kFunction[])(double) = {fn_tanh,      fn_sin,       fn_abs,   fn_square, fn_exp_clamped,
                                       fn_plus_half, fn_one_minus, fn_clamp, fn_cube,   fn_two_plus_square};
const char* const kFunctionName[] = {"tanh", "sin", "abs",   "square",  "exp(clamp(-2,2))",
                                     "+0.5", "1-",  "clamp", "power 3", "2+square"};

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
  /// The labels a function, max/min or reduction sees of this operand: inside a product a
  /// label on two or more factors is summed first (docs/einstein.md: exp(a("i,k") *
  /// b("k,j")) is the exponential of the matrix product).
  Labels implicit;
  bool is_product = false;
  Labels product_labels;  // products: the factors' labels, as often as they occur
};
using RPtr = std::shared_ptr<const R>;

/// Fills implicit (and product_labels) from the children, as the library's rule says.
void finish(R& r) {
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

/// `c` as a function, max/min or reduction sees it: its implicit labels (the others summed).
RPtr einstein_operand(const RPtr& c) {
  if (c->implicit == c->labels) return c;
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

Labels intersect(const Labels& a, const Labels& keep) {
  Labels out;
  for (int l : a) {
    if (has(keep, l)) out.push_back(l);
  }
  return out;
}

Arr eval(const R& r, const Labels& keep) {
  switch (r.kind) {
    case Kind::leaf: return einsum({&r.leaf}, keep);
    case Kind::add:
    case Kind::sub:
    case Kind::div: {
      const Arr a = eval(*r.children[0], intersect(r.children[0]->labels, keep));
      const Arr b = eval(*r.children[1], intersect(r.children[1]->labels, keep));
      auto op = r.kind == Kind::add   ? +[](double x, double y) { return x + y; }
                : r.kind == Kind::sub ? +[](double x, double y) { return x - y; }
                                      : +[](double x, double y) { return x / y; };
      return combine(a, b, keep, op);
    }
    case Kind::mul: {
      Labels ka = keep, kb = keep;
      ka.insert(ka.end(), r.children[1]->labels.begin(), r.children[1]->labels.end());
      kb.insert(kb.end(), r.children[0]->labels.begin(), r.children[0]->labels.end());
      const Arr a = eval(*r.children[0], intersect(r.children[0]->labels, ka));
      const Arr b = eval(*r.children[1], intersect(r.children[1]->labels, kb));
      return einsum({&a, &b}, keep);
    }
    case Kind::scale: {
      Arr a = eval(*r.children[0], keep);
      for (double& v : a.values) v *= r.x;
      return a;
    }
    case Kind::map: {
      Arr a = eval(*r.children[0], r.children[0]->labels);
      for (double& v : a.values) v = kFunction[r.fn](v);
      return einsum({&a}, keep);
    }
    case Kind::max:
    case Kind::min: {
      const Arr a = eval(*r.children[0], r.children[0]->labels);
      const Arr b = eval(*r.children[1], r.children[1]->labels);
      const Arr c = combine(
          a, b, r.labels,
          r.kind == Kind::max ? +[](double x, double y) { return ieee_max(x, y); }
                              : +[](double x, double y) { return ieee_min(x, y); });
      return einsum({&c}, keep);
    }
    case Kind::sum:
    case Kind::einstein: return eval(*r.children[0], keep);
    case Kind::max_over:
    case Kind::min_over: {
      const Arr a = eval(*r.children[0], r.children[0]->labels);
      Arr c;
      c.labels = r.labels;
      c.extents = r.extents;
      c.values.assign(count(c.extents), r.kind == Kind::max_over ? -INFINITY : INFINITY);
      std::size_t extent_of[kAlphabet] = {};
      for (std::size_t m = 0; m < a.labels.size(); ++m) extent_of[a.labels[m]] = a.extents[m];
      for_each_index(a.labels, extent_of, [&](std::size_t* index) {
        double& v = c.values[offset(c, index)];
        const double x = a.values[offset(a, index)];
        v = r.kind == Kind::max_over ? ieee_max(v, x) : ieee_min(v, x);
      });
      return einsum({&c}, keep);
    }
    case Kind::chip:
    case Kind::slice: {
      const Arr& a = r.leaf;  // distinct labels
      Arr c;
      c.labels = r.labels;
      c.extents = r.extents;
      c.values.assign(count(c.extents), 0.0);
      std::size_t extent_of[kAlphabet] = {};
      for (std::size_t m = 0; m < c.labels.size(); ++m) extent_of[c.labels[m]] = c.extents[m];
      for_each_index(c.labels, extent_of, [&](std::size_t* index) {
        std::size_t source[kAlphabet];
        std::copy(index, index + kAlphabet, source);
        if (r.kind == Kind::chip) {
          source[a.labels[r.mode]] = r.index;
        } else {
          for (std::size_t m = 0; m < a.labels.size(); ++m) source[a.labels[m]] += r.lo[m];
        }
        c.values[offset(c, index)] = a.values[offset(a, source)];
      });
      return einsum({&c}, keep);
    }
  }
  std::abort();
}

// ---- The program -----------------------------------------------------------------------

/// One expression of a statement, as decoded: a small DAG (children are earlier nodes of the
/// same statement, so an operand can be shared within it).
struct Node {
  Kind kind = Kind::leaf;
  int slot = -1, handle = -1;  // leaf: a tensor (slot) or a held handle
  Labels labels;               // leaf: written labels; reductions: the labels reduced; chip: {label}
  int a = -1, b = -1;          // children (node indices)
  double x = 0.0;
  int fn = 0;
  std::size_t index = 0;
  std::vector<std::size_t> lo, hi;
};

struct Failure {
  std::string what;
};

class Program {
 public:
  Program(const std::uint8_t* data, std::size_t size, bool verbose) : data_(data), size_(size), verbose_(verbose) {}

  void run() {
    Bytes in(data_, size_);
    for (int s = 0; s < kSlots; ++s) {
      const unsigned rank = in.below(4);
      Labels labels;
      std::vector<std::size_t> extents;
      for (unsigned m = 0; m < rank; ++m) {
        labels.push_back(static_cast<int>(in.below(kAlphabet)));
        extents.push_back(kExtent[labels.back()]);
      }
      tensors_[s] = Tensor<double>(Shape(extents));
      tenex::fill_random(tensors_[s], 1 + in.next());
      ref_[s] = Arr{{}, extents, tensors_[s].to_vector()};
      log("t" + std::to_string(s) + " = random " + shape_text(extents));
    }
    for (int statements = 0; statements < 24 && !in.empty(); ++statements) statement(in);
    // The handles die in an order the input chooses, then everything is compared.
    std::vector<int> order;
    for (int h = 0; h < kHandles; ++h) order.push_back(h);
    for (int h = kHandles; h > 1; --h) std::swap(order[h - 1], order[in.below(h)]);
    for (int h : order) {
      handles_[h].reset();
      refs_[h].reset();
    }
    for (int s = 0; s < kSlots; ++s) compare(s, "at the end");
  }

  const std::string& transcript() const { return transcript_; }

 private:
  static std::string shape_text(const std::vector<std::size_t>& extents) {
    std::string s = "{";
    for (std::size_t e : extents) s += (s.size() > 1 ? "," : "") + std::to_string(e);
    return s + "}";
  }

  void log(const std::string& line) {
    transcript_ += line + "\n";
    if (verbose_) std::fprintf(stderr, "%s\n", line.c_str());
  }

  [[noreturn]] void fail(const std::string& what) { throw Failure{what}; }

  // ---- decoding ----

  Labels operand_labels(Bytes& in, const std::vector<std::size_t>& extents) {
    Labels labels;
    for (std::size_t e : extents) {
      if (in.chance(20)) {
        labels.push_back(static_cast<int>(in.below(kAlphabet)));  // any label: maybe a mismatch
        continue;
      }
      Labels fitting;
      for (int l = 0; l < kAlphabet; ++l) {
        if (kExtent[l] == e) fitting.push_back(l);
      }
      labels.push_back(fitting.empty() ? static_cast<int>(in.below(kAlphabet))
                                       : fitting[in.below(static_cast<unsigned>(fitting.size()))]);
    }
    return labels;
  }

  /// Decodes an expression into `nodes`; returns its index.
  int decode(Bytes& in, std::vector<Node>& nodes, int depth) {
    Node n;
    const unsigned choice = depth <= 0 ? 0 : in.below(16);
    if (choice < 4 || choice >= 14) {
      if (!nodes.empty() && in.chance(40)) return static_cast<int>(in.below(static_cast<unsigned>(nodes.size())));
      const int h = static_cast<int>(in.below(kHandles));
      if (handles_[h] && in.chance(90)) {
        n.handle = h;
      } else {
        n.slot = static_cast<int>(in.below(kSlots));
        n.labels = operand_labels(in, tensors_shape(n.slot));
        bool distinct = true;
        for (std::size_t x = 0; x < n.labels.size(); ++x) {
          for (std::size_t y = x + 1; y < n.labels.size(); ++y) distinct = distinct && n.labels[x] != n.labels[y];
        }
        if (distinct && !n.labels.empty() && in.chance(24)) {
          // chip or slice of this leaf
          if (in.chance(128)) {
            n.kind = Kind::chip;
            n.index = in.below(3);
            n.fn = static_cast<int>(in.below(static_cast<unsigned>(n.labels.size())));  // the mode chipped
          } else {
            n.kind = Kind::slice;
            for (std::size_t e : tensors_shape(n.slot)) {
              const std::size_t lo = in.below(static_cast<unsigned>(e));
              n.lo.push_back(lo);
              n.hi.push_back(lo + 1 + in.below(static_cast<unsigned>(e - lo)));
            }
          }
        }
      }
      nodes.push_back(n);
      return static_cast<int>(nodes.size()) - 1;
    }
    n.a = decode(in, nodes, depth - 1);
    switch (choice) {
      case 4: n.kind = Kind::add; break;
      case 5: n.kind = Kind::sub; break;
      case 6:
      case 7: n.kind = Kind::mul; break;
      case 8: {
        n.kind = Kind::scale;
        const double factors[] = {2.0, -1.0, 0.5, -3.0};
        n.x = factors[in.below(4)];
        break;
      }
      case 9:
        n.kind = Kind::map;
        n.fn = static_cast<int>(in.below(kFunctions));
        break;
      case 10: n.kind = in.chance(128) ? Kind::max : Kind::min; break;
      case 11: n.kind = Kind::div; break;
      default: {
        const unsigned r = in.below(3);
        n.kind = r == 0 ? Kind::sum : r == 1 ? Kind::max_over : Kind::min_over;
        n.labels.push_back(static_cast<int>(in.below(kAlphabet)));
        if (in.chance(60)) n.labels.push_back(static_cast<int>(in.below(kAlphabet)));
        break;
      }
    }
    if (n.kind == Kind::add || n.kind == Kind::sub || n.kind == Kind::mul || n.kind == Kind::div ||
        n.kind == Kind::max || n.kind == Kind::min) {
      n.b = decode(in, nodes, depth - 1);
    }
    nodes.push_back(n);
    return static_cast<int>(nodes.size()) - 1;
  }

  std::vector<std::size_t> tensors_shape(int slot) const { return ref_[slot].extents; }

  // ---- the reference's side ----

  /// The reference expression of nodes[i], or a Failure-free error text in `error`.
  RPtr build_ref(const std::vector<Node>& nodes, int i, std::vector<RPtr>& memo, std::string& error) {
    if (memo[i]) return memo[i];
    const Node& n = nodes[i];
    auto r = std::make_shared<R>();
    r->kind = n.kind;
    auto child = [&](int c) -> RPtr { return error.empty() ? build_ref(nodes, c, memo, error) : nullptr; };
    auto join = [&](const R& a, const R& b) {
      r->labels = a.labels;
      r->extents = a.extents;
      for (std::size_t m = 0; m < b.labels.size(); ++m) {
        const auto at = std::find(r->labels.begin(), r->labels.end(), b.labels[m]);
        if (at == r->labels.end()) {
          r->labels.push_back(b.labels[m]);
          r->extents.push_back(b.extents[m]);
        } else if (r->extents[static_cast<std::size_t>(at - r->labels.begin())] != b.extents[m]) {
          error = "label " + std::string(kLabel[b.labels[m]]) + " has two extents";
        }
      }
    };
    if (n.handle >= 0) return memo[i] = refs_[n.handle];
    if (n.kind == Kind::leaf || n.kind == Kind::chip || n.kind == Kind::slice) {
      const Arr& value = ref_[n.slot];
      if (value.extents.size() != n.labels.size()) {
        error = "rank";
        return nullptr;
      }
      r->leaf = Arr{n.labels, value.extents, value.values};
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
    if (n.kind == Kind::map || n.kind == Kind::max || n.kind == Kind::min || n.kind == Kind::sum ||
        n.kind == Kind::max_over || n.kind == Kind::min_over) {
      a = einstein_operand(a);
      if (b) b = einstein_operand(b);
    }
    if (!error.empty()) return nullptr;
    r->children.push_back(a);
    if (b) r->children.push_back(b);
    switch (n.kind) {
      case Kind::add:
      case Kind::sub:
      case Kind::mul:
      case Kind::max:
      case Kind::min: join(*a, *b); break;
      case Kind::div: {
        // a / (2 + square(b)): the divisor is a map node of its own.
        auto d = std::make_shared<R>();
        const RPtr eb = einstein_operand(b);
        d->kind = Kind::map;
        d->fn = 9;
        d->labels = eb->labels;
        d->extents = eb->extents;
        d->children.push_back(eb);
        finish(*d);
        r->children[1] = d;
        join(*a, *d);
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
    r->children[0] = a;
    if (r->children.size() > 1 && n.kind != Kind::div) r->children[1] = b;
    finish(*r);
    return memo[i] = error.empty() ? RPtr(r) : nullptr;
  }

  // ---- tenex's side ----

  E build_tenex(const std::vector<Node>& nodes, int i, std::vector<std::optional<E>>& memo) {
    if (memo[i]) return *memo[i];
    const Node& n = nodes[i];
    auto make = [&]() -> E {
      if (n.handle >= 0) return *handles_[n.handle];
      if (n.kind == Kind::leaf) return E(tensors_[n.slot](text(n.labels)).handle());
      if (n.kind == Kind::chip) {
        const int l = n.labels[static_cast<std::size_t>(n.fn)];
        return E(tenex::chip(tensors_[n.slot](text(n.labels)), kLabel[l], n.index).handle());
      }
      if (n.kind == Kind::slice) return E(tenex::slice(tensors_[n.slot](text(n.labels)), n.lo, n.hi).handle());
      const E a = build_tenex(nodes, n.a, memo);
      switch (n.kind) {
        case Kind::add: return E((a + build_tenex(nodes, n.b, memo)).handle());
        case Kind::sub: return E((a - build_tenex(nodes, n.b, memo)).handle());
        case Kind::mul: return E((a * build_tenex(nodes, n.b, memo)).handle());
        case Kind::div: return E((a / (2.0 + tenex::square(build_tenex(nodes, n.b, memo)))).handle());
        case Kind::max: return E(tenex::max(a, build_tenex(nodes, n.b, memo)).handle());
        case Kind::min: return E(tenex::min(a, build_tenex(nodes, n.b, memo)).handle());
        case Kind::scale:
          if (n.x == -1.0) return E((-a).handle());
          if (n.x == 0.5) return E((a / 2.0).handle());
          return E((n.x * a).handle());
        case Kind::map:
          switch (n.fn) {
            case 0: return E(tenex::tanh(a).handle());
            case 1: return E(tenex::sin(a).handle());
            case 2: return E(tenex::abs(a).handle());
            case 3: return E(tenex::square(a).handle());
            case 4: return E(tenex::exp(tenex::clamp(a, -2.0, 2.0)).handle());
            case 5: return E((a + 0.5).handle());
            case 6: return E((1.0 - a).handle());
            case 7: return E(tenex::clamp(a, -0.5, 0.5).handle());
            default: return E(tenex::power(a, 3.0).handle());
          }
        case Kind::sum: return E(tenex::sum(a, text(n.labels)).handle());
        case Kind::max_over: return E(tenex::max_over(a, text(n.labels)).handle());
        case Kind::min_over: return E(tenex::min_over(a, text(n.labels)).handle());
        default: std::abort();
      }
    };
    E e = make();
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
      case Kind::scale: return std::to_string(n.x) + " * " + describe(nodes, n.a);
      case Kind::map: return std::string(kFunctionName[n.fn]) + "(" + describe(nodes, n.a) + ")";
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

  void statement(Bytes& in) {
    const unsigned what = in.below(16);
    if (what == 0) {  // read a tensor in the middle
      const int s = static_cast<int>(in.below(kSlots));
      log("read t" + std::to_string(s));
      compare(s, "read in the middle");
      return;
    }
    if (what == 1) {  // drop a handle (may evaluate its set)
      const int h = static_cast<int>(in.below(kHandles));
      log("drop h" + std::to_string(h));
      handles_[h].reset();
      refs_[h].reset();
      return;
    }
    if (what == 2) {  // copy a tensor (reads a pending source)
      const int d = static_cast<int>(in.below(kSlots)), s = static_cast<int>(in.below(kSlots));
      log("t" + std::to_string(d) + " = t" + std::to_string(s) + "   // copy");
      tensors_[d] = Tensor<double>(tensors_[s]);
      ref_[d] = ref_[s];
      return;
    }
    if (what == 3) {  // write one element through at()
      const int s = static_cast<int>(in.below(kSlots));
      Arr& r = ref_[s];
      if (r.extents.size() > 5) return;
      std::vector<std::size_t> index;
      for (std::size_t e : r.extents) index.push_back(in.below(static_cast<unsigned>(e)));
      const double v = static_cast<double>(in.below(9)) - 4.0;
      std::size_t o = 0;
      for (std::size_t m = 0; m < index.size(); ++m) o = o * r.extents[m] + index[m];
      log("t" + std::to_string(s) + ".at(...) = " + std::to_string(v));
      Tensor<double>& t = tensors_[s];
      switch (index.size()) {
        case 0: t.at() = v; break;
        case 1: t.at(index[0]) = v; break;
        case 2: t.at(index[0], index[1]) = v; break;
        case 3: t.at(index[0], index[1], index[2]) = v; break;
        case 4: t.at(index[0], index[1], index[2], index[3]) = v; break;
        default: t.at(index[0], index[1], index[2], index[3], index[4]) = v; break;
      }
      r.values[o] = v;
      return;
    }
    std::vector<Node> nodes;
    const int root = decode(in, nodes, 1 + static_cast<int>(in.below(3)));
    std::vector<RPtr> ref_memo(nodes.size());
    std::string error;
    const RPtr value = build_ref(nodes, root, ref_memo, error);
    const std::string rhs = describe(nodes, root);
    auto tenex_value = [&] {
      std::vector<std::optional<E>> memo(nodes.size());
      return build_tenex(nodes, root, memo);
    };

    if (what == 4) {  // hold a handle: a named intermediate, its set kept open
      const int h = static_cast<int>(in.below(kHandles));
      const Node& r = nodes[static_cast<std::size_t>(root)];
      if (!error.empty() && r.kind == Kind::leaf && r.handle < 0) {
        // A bare t("i,i") with bad labels is not an error until it is read (it could be a
        // target): make it, then let it go unused.
        expect("(void) " + rhs + "   // unreadable, unused", "", [&] { (void)tenex_value(); });
        return;
      }
      expect("h" + std::to_string(h) + " = " + rhs, error, [&] {
        E e = tenex_value();
        handles_[h].emplace(std::move(e));
      });
      if (error.empty()) refs_[h] = value;
      return;
    }

    // An assignment to t[d]: =, +=, -=, *=, /= or a scalar form.
    const int d = static_cast<int>(in.below(kSlots));
    const unsigned form = what < 9 ? 0 : what - 9;  // 0 '=', 1 '+=', 2 '-=', 3 '*=', 4 '/=', 5 scalar, 6 '=' again
    if (form == 5) error.clear();                   // `t(...) *= 2.0` does not use the decoded right side
    Labels target;
    if (form == 0 || form == 6 || (!value && form != 5)) {
      // A random subset of the value's labels in a random order; now and then a wrong one.
      if (value) {
        for (int l : value->labels) {
          if (in.chance(180)) target.push_back(l);
        }
        for (std::size_t k = target.size(); k > 1; --k)
          std::swap(target[k - 1], target[in.below(static_cast<unsigned>(k))]);
      }
      if (in.chance(12)) target.push_back(static_cast<int>(in.below(kAlphabet)));
    } else {
      target = operand_labels(in, ref_[d].extents);
    }
    const std::string lhs = "t" + std::to_string(d) + "(\"" + text(target) + "\")";

    // The reference: the statement's value over the target labels, or why it is invalid.
    for (std::size_t x = 0; x < target.size() && error.empty(); ++x) {
      for (std::size_t y = x + 1; y < target.size(); ++y) {
        if (target[x] == target[y]) error = "repeated target label";
      }
    }
    RPtr whole = value;
    std::vector<std::size_t> new_extents;
    if (error.empty() && form != 0 && form != 6) {
      // c op= rhs is c = c op rhs: the target is an operand too.
      std::vector<Node> both = nodes;
      Node leaf;
      leaf.slot = d;
      leaf.labels = target;
      both.push_back(leaf);
      Node op;
      op.a = static_cast<int>(both.size()) - 1;
      op.b = root;
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
    const char* const op_text[] = {" = ", " += ", " -= ", " *= ", " /= 2 + square ", " *= 2.0", " = "};
    expect(lhs + op_text[form] + (form == 5 ? "" : rhs), error, [&] {
      Tensor<double>& t = tensors_[d];
      const std::string labels = text(target);
      switch (form) {
        case 1: t(labels) += tenex_value(); break;
        case 2: t(labels) -= tenex_value(); break;
        case 3: t(labels) *= tenex_value(); break;
        case 4: t(labels) /= 2.0 + tenex::square(tenex_value()); break;
        case 5: t(labels) *= 2.0; break;
        default: t(labels) = tenex_value(); break;
      }
    });
    if (error.empty()) {
      Arr result = eval(*whole, target);
      ref_[d] = Arr{{}, new_extents, std::move(result.values)};
    }
  }

  void compare(int s, const std::string& when) {
    const Arr& want = ref_[s];
    std::vector<double> got;
    std::vector<std::size_t> extents;
    try {
      got = tensors_[s].to_vector();
      extents = tensors_[s].shape().extents();
    } catch (const std::exception& e) {
      fail("t" + std::to_string(s) + " " + when + ": reading threw " + e.what());
    }
    if (extents != want.extents) {
      fail("t" + std::to_string(s) + " " + when + ": shape " + shape_text(extents) + ", the reference has " +
           shape_text(want.extents));
    }
    const double tolerance = 1e-9 * g_magnitude;
    for (std::size_t x = 0; x < got.size(); ++x) {
      const double g = got[x], w = want.values[x];
      const bool same = (std::isnan(g) && std::isnan(w)) || g == w || std::abs(g - w) <= tolerance;
      if (!same) {
        fail("t" + std::to_string(s) + " " + when + ": element " + std::to_string(x) + " is " + std::to_string(g) +
             ", the reference says " + std::to_string(w));
      }
    }
  }

  const std::uint8_t* data_;
  std::size_t size_;
  bool verbose_;
  std::string transcript_;
  Tensor<double> tensors_[kSlots];
  Arr ref_[kSlots];
  std::optional<E> handles_[kHandles];
  RPtr refs_[kHandles];
};

struct PassesSetting {
  explicit PassesSetting(const char* value) {
    if (value) {
      ::setenv("TENEX_PASSES", value, 1);
    } else {
      ::unsetenv("TENEX_PASSES");
    }
  }
  ~PassesSetting() { ::unsetenv("TENEX_PASSES"); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1024) return 0;
  static const bool verbose = std::getenv("TENEX_FUZZ_VERBOSE") != nullptr;
  for (const char* passes : {static_cast<const char*>(nullptr), "none"}) {
    const PassesSetting setting(passes);
    g_magnitude = 1.0;
    Program program(data, size, verbose);
    try {
      program.run();
    } catch (const Failure& f) {
      std::fprintf(stderr, "fuzz_differential: mismatch with TENEX_PASSES=%s\n--- program ---\n%s--- %s\n",
                   passes ? passes : "(all)", program.transcript().c_str(), f.what.c_str());
      std::abort();
    }
  }
  return 0;
}
