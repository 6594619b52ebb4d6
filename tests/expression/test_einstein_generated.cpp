// Generated Einstein-notation cases, in every scalar type, against the naive reference.
//
// Each category below draws its cases from deterministic seeds: operands with random labels
// and small extents, a target with some of their labels in a random order, sometimes a
// scale, a negation or a division by a number, sometimes `+=` / `-=`. The expression is
// built the way a user writes it (`a("i,k") * b("k,j") * c("j,l")`), assigned, and read back;
// the reference evaluates the same statement with plain loops. A failure prints the
// statement (INFO) so that it can be replayed by hand.
//
// In complex<float> and complex<double> the same cases run with complex values (both parts
// random) and are decorated from their own seed: `tenex::conj` on random factors (and on a
// whole right-hand side), complex scale factors, and the element-wise functions defined for
// complex numbers on random operands (exp, log, sqrt, ..., and abs, real, imag, arg cast back
// to complex). A further complex category enumerates conj on every operand position of
// products of two and three factors, in place, permuted and batched; a last one has a few
// large statements.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

#include "support/reference.hpp"

namespace {

namespace ref = tenex_test::reference;
using ref::Random;

using ref::Complex;
using tenex_test::AllScalars;
using tenex_test::ComplexScalars;

// ---------------------------------------------------------------------------------------
// Case description

enum class Modifier { none, scale_left, scale_right, divide, negate };
enum class Assign { set, add, subtract };

// What a complex case applies to an operand as the user writes it: `tenex::conj(t0("i,k"))`,
// `tenex::exp(t0("i,k"))`, `tenex::cast<T>(tenex::abs(t0("i,k")))`, ...
enum class Function { none, conj, exp, log, sqrt, square, sin, cos, tanh, reciprocal, power, abs, real, imag, arg };
constexpr int kFunctionCount = 15;
const char* const kFunctionNames[kFunctionCount] = {"",       "conj", "exp",  "log",  "sqrt",
                                                    "square", "sin",  "cos",  "tanh", "reciprocal",
                                                    "power",  "abs",  "real", "imag", "arg"};

struct Operand {
  std::string labels;  // as the user writes them: "i,k"
  ref::Extents extents;
  bool denominator = false;  // values kept away from zero
};

struct Case {
  std::string category;
  std::uint64_t seed = 0;
  std::vector<Operand> operands;
  // Product form: the product of all operands. Element-wise form: terms (each the product
  // of one or two operands) combined left to right by ops.
  bool elementwise = false;
  std::vector<std::vector<int>> terms;
  std::vector<ref::Op> ops;
  Modifier modifier = Modifier::none;
  double alpha = 1.0;
  Assign assign = Assign::set;
  std::string target;
  // Complex cases only: a function on each operand (empty: none), conj on the whole
  // right-hand side, and a complex factor in place of alpha.
  std::vector<Function> functions;
  bool conj_all = false;
  bool complex_factor = false;
  Complex calpha{1.0, 0.0};

  Function function(int k) const { return functions.empty() ? Function::none : functions[static_cast<std::size_t>(k)]; }

  std::string describe() const {
    auto operand = [&](int k) {
      std::string s = "t" + std::to_string(k) + "(\"" + operands[static_cast<std::size_t>(k)].labels + "\")";
      const Function f = function(k);
      if (f == Function::power) return "tenex::power(" + s + ", 1.5)";
      if (f == Function::abs || f == Function::real || f == Function::imag || f == Function::arg) {
        return std::string("tenex::cast<T>(tenex::") + kFunctionNames[static_cast<int>(f)] + "(" + s + "))";
      }
      if (f != Function::none) return std::string("tenex::") + kFunctionNames[static_cast<int>(f)] + "(" + s + ")";
      return s;
    };
    auto product = [&](const std::vector<int>& ids) {
      std::string s;
      for (std::size_t n = 0; n < ids.size(); ++n) s += (n ? " * " : "") + operand(ids[n]);
      return s;
    };
    auto grouped = [](const std::string& s) { return s.find(' ') == std::string::npos ? s : "(" + s + ")"; };
    std::string rhs;
    if (!elementwise) {
      std::vector<int> all;
      for (std::size_t k = 0; k < operands.size(); ++k) all.push_back(static_cast<int>(k));
      rhs = product(all);
    } else {
      rhs = grouped(product(terms[0]));
      for (std::size_t t = 1; t < terms.size(); ++t) {
        const char* sym = ops[t - 1] == ref::Op::add ? " + " : ops[t - 1] == ref::Op::subtract ? " - " : " / ";
        rhs = (t > 1 ? "(" + rhs + ")" : rhs) + sym + grouped(product(terms[t]));
      }
    }
    if (conj_all) rhs = "tenex::conj(" + rhs + ")";
    std::ostringstream a;
    if (complex_factor) {
      a << "Complex" << calpha;
    } else {
      a << alpha;
    }
    switch (modifier) {
      case Modifier::none: break;
      case Modifier::scale_left: rhs = a.str() + " * " + grouped(rhs); break;
      case Modifier::scale_right: rhs = grouped(rhs) + " * " + a.str(); break;
      case Modifier::divide: rhs = grouped(rhs) + " / " + a.str(); break;
      case Modifier::negate: rhs = "-" + grouped(rhs); break;
    }
    const char* op = assign == Assign::set ? " = " : assign == Assign::add ? " += " : " -= ";
    std::string s = "c(\"" + target + "\")" + op + rhs + ";   with ";
    for (std::size_t k = 0; k < operands.size(); ++k) {
      s += (k ? ", t" : "t") + std::to_string(k) + " " + ref::format_extents(operands[k].extents);
    }
    return s;
  }
};

// ---------------------------------------------------------------------------------------
// Generators

const std::vector<std::string> kLabelPool = {"i", "j", "k", "l", "m", "n", "p", "q", "r", "s", "mu", "nu"};
constexpr std::size_t kBudget = 20000;  // most label combinations the reference loops over

template <class V>
void shuffle(V& v, Random& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

// Labels and extents of one case under construction.
struct Space {
  Random& rng;
  std::map<std::string, std::size_t> extent;
  std::vector<std::string> used;

  std::vector<std::string> fresh(std::size_t n, std::size_t min_extent = 1, std::size_t max_extent = 4) {
    std::vector<std::string> out;
    while (out.size() < n) {
      const std::string& l = kLabelPool[rng.below(kLabelPool.size())];
      if (extent.count(l)) continue;
      std::size_t e = min_extent + rng.below(max_extent - min_extent + 1);
      if (rng.chance(0.08)) e = 5;
      extent[l] = e;
      used.push_back(l);
      out.push_back(l);
    }
    return out;
  }
  Operand operand(const std::vector<std::string>& labels) const {
    Operand o;
    o.labels = ref::join_labels(labels);
    for (const auto& l : labels) o.extents.push_back(extent.at(l));
    return o;
  }
  std::size_t combinations() const {
    std::size_t n = 1;
    for (const auto& [l, e] : extent) n *= e;
    return n;
  }
};

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::string> shuffled(std::vector<std::string> v, Random& rng) {
  shuffle(v, rng);
  return v;
}

// A random subset (each kept with probability p), in random order.
std::vector<std::string> subset(const std::vector<std::string>& v, Random& rng, double p) {
  std::vector<std::string> out;
  for (const auto& l : v) {
    if (rng.chance(p)) out.push_back(l);
  }
  return shuffled(out, rng);
}

void random_modifier(Case& c, Random& rng, double p = 0.4) {
  if (!rng.chance(p)) return;
  static const double alphas[] = {2.0, -0.5, 1.5, 3.25, -2.0};
  c.modifier = static_cast<Modifier>(1 + rng.below(4));
  c.alpha = alphas[rng.below(5)];
}

// Two operands: shared labels summed, the free labels kept in a random order.
Case gen_contraction(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  auto shared = s.fresh(1 + rng.below(3));
  auto fa = s.fresh(rng.below(4)), fb = s.fresh(rng.below(4));
  while (shared.size() + fa.size() > 6) fa.pop_back();
  while (shared.size() + fb.size() > 6) fb.pop_back();
  c.operands = {s.operand(shuffled(concat(shared, fa), rng)), s.operand(shuffled(concat(shared, fb), rng))};
  c.target = ref::join_labels(shuffled(concat(fa, fb), rng));
  random_modifier(c, rng);
  return c;
}

// Three to five operands in a chain t0(l0,l1) t1(l1,l2) ..., some with a free label.
Case gen_chain(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  const std::size_t n = 3 + rng.below(3);
  auto chain = s.fresh(n + 1);
  std::vector<std::string> kept = {chain.front(), chain.back()};
  for (std::size_t k = 0; k < n; ++k) {
    std::vector<std::string> labels = {chain[k], chain[k + 1]};
    if (rng.chance(0.3)) {
      auto extra = s.fresh(1, 1, 3);
      labels.push_back(extra[0]);
      if (rng.chance(0.6)) kept.push_back(extra[0]);  // else summed over one operand only
    }
    c.operands.push_back(s.operand(shuffled(labels, rng)));
  }
  if (rng.chance(0.2)) kept.erase(kept.begin());  // sum over the chain's first open label too
  c.target = ref::join_labels(shuffled(kept, rng));
  random_modifier(c, rng);
  return c;
}

// One operand with repeated labels (diagonals, traces), sometimes times a second operand.
Case gen_diagonal(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  auto distinct = s.fresh(1 + rng.below(3), 2, 4);
  const std::size_t rank = std::max<std::size_t>(distinct.size() + 1, 2 + rng.below(4));
  std::vector<std::string> labels = distinct;
  labels.push_back(distinct[rng.below(distinct.size())]);  // at least one repeat
  while (labels.size() < rank) labels.push_back(distinct[rng.below(distinct.size())]);
  shuffle(labels, rng);
  c.operands.push_back(s.operand(labels));
  std::vector<std::string> pool = distinct;
  if (rng.chance(0.35)) {  // times a matrix sharing one of the diagonal's labels
    auto other = s.fresh(1);
    c.operands.push_back(s.operand(shuffled({distinct[0], other[0]}, rng)));
    pool.push_back(other[0]);
  }
  c.target = ref::join_labels(subset(pool, rng, 0.5));
  random_modifier(c, rng, 0.3);
  return c;
}

// Labels on several factors that the target keeps (Hadamard / batch), with contractions.
Case gen_batch(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  const std::size_t n = 2 + rng.below(2);
  auto batch = s.fresh(1 + rng.below(2));
  auto contracted = s.fresh(rng.below(2));
  std::vector<std::string> kept = batch;
  for (std::size_t k = 0; k < n; ++k) {
    auto labels = concat(batch, contracted);
    if (rng.chance(0.6)) {
      auto f = s.fresh(1, 1, 3);
      labels.push_back(f[0]);
      kept.push_back(f[0]);
    }
    c.operands.push_back(s.operand(shuffled(labels, rng)));
  }
  c.target = ref::join_labels(shuffled(kept, rng));
  random_modifier(c, rng);
  return c;
}

// Operands with disjoint labels: an outer product.
Case gen_outer(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  const std::size_t n = 2 + rng.below(2);
  std::vector<std::string> all;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t rank = rng.below(4);
    if (all.size() + rank > 6) rank = 6 - all.size();
    auto labels = s.fresh(rank, 1, 3);
    all = concat(all, labels);
    c.operands.push_back(s.operand(labels));
  }
  c.target = ref::join_labels(shuffled(all, rng));
  random_modifier(c, rng);
  return c;
}

// One operand permuted and summed over some of its labels; or a label of one factor of a
// product summed away.
Case gen_sum(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  if (rng.chance(0.6)) {
    const std::size_t rank = 1 + rng.below(6);
    auto labels = s.fresh(rank, 1, rank > 4 ? 3 : 4);
    c.operands.push_back(s.operand(labels));
    c.target = ref::join_labels(rng.chance(0.3) ? shuffled(labels, rng) : subset(labels, rng, 0.6));
  } else {
    auto k = s.fresh(1), fa = s.fresh(1 + rng.below(2)), fb = s.fresh(1), lone = s.fresh(1 + rng.below(2));
    c.operands = {s.operand(shuffled(concat(concat(k, fa), lone), rng)), s.operand(shuffled(concat(k, fb), rng))};
    c.target = ref::join_labels(shuffled(concat(fa, fb), rng));
  }
  random_modifier(c, rng);
  return c;
}

// Rank-0 operands and rank-0 results.
Case gen_scalar(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  const std::size_t n = 1 + rng.below(4);
  std::vector<std::string> seen;
  const std::size_t scalars = 1 + rng.below(std::min<std::size_t>(n, 2));
  for (std::size_t k = 0; k < n; ++k) {
    if (k < scalars && rng.chance(0.8)) {
      c.operands.push_back(s.operand({}));
      continue;
    }
    auto labels = seen.empty() || rng.chance(0.3) ? s.fresh(1 + rng.below(2)) : std::vector<std::string>{seen[0]};
    if (!seen.empty() && rng.chance(0.5)) labels.push_back(seen[rng.below(seen.size())]);
    std::sort(labels.begin(), labels.end());
    labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
    for (const auto& l : labels) {
      if (std::find(seen.begin(), seen.end(), l) == seen.end()) seen.push_back(l);
    }
    c.operands.push_back(s.operand(shuffled(labels, rng)));
  }
  shuffle(c.operands, rng);
  c.target = rng.chance(0.6) ? "" : ref::join_labels(subset(seen, rng, 0.5));
  random_modifier(c, rng);
  return c;
}

// Anything: 1 to 5 operands of rank 0 to 6 over a few labels, repeats allowed.
Case gen_general(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  auto labels = s.fresh(1 + rng.below(6), 1, 4);
  const std::size_t n = 1 + rng.below(5);
  std::set<std::string> seen;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t rank = rng.below(7);
    std::vector<std::string> ol;
    std::vector<std::string> candidates = shuffled(labels, rng);
    for (std::size_t m = 0; m < rank; ++m) {
      if (m < candidates.size() && !rng.chance(0.1)) ol.push_back(candidates[m]);
      else ol.push_back(labels[rng.below(labels.size())]);  // a repeat: a diagonal
    }
    seen.insert(ol.begin(), ol.end());
    c.operands.push_back(s.operand(ol));
  }
  c.target = ref::join_labels(subset(std::vector<std::string>(seen.begin(), seen.end()), rng, 0.5));
  random_modifier(c, rng);
  return c;
}

// `+ - /` by label with broadcasting; a term is one operand or a product of two with a
// private summed label.
Case gen_elementwise(Random& rng) {
  Case c;
  Space s{rng, {}, {}};
  c.elementwise = true;
  auto kept = s.fresh(1 + rng.below(4), 1, 4);
  const std::size_t nterms = 2 + (rng.chance(0.3) ? 1 : 0);
  for (std::size_t t = 0; t < nterms; ++t) {
    const bool last = t + 1 == nterms;
    ref::Op op = ref::Op::add;
    if (t > 0) {
      op = static_cast<ref::Op>(std::array<int, 3>{0, 1, 3}[rng.below(3)]);
      c.ops.push_back(op);
    }
    // Which kept labels this term has: the last term gets those no earlier term has.
    std::vector<std::string> mine;
    for (const auto& l : kept) {
      bool earlier = false;
      for (const auto& o : c.operands) {
        for (const auto& x : ref::parse_labels(o.labels)) earlier = earlier || x == l;
      }
      if ((last && !earlier) || rng.chance(0.5)) mine.push_back(l);
    }
    shuffle(mine, rng);
    const int first = static_cast<int>(c.operands.size());
    if (op == ref::Op::divide || mine.empty() || rng.chance(0.6)) {
      auto labels = mine;
      if (!labels.empty() && op != ref::Op::divide && rng.chance(0.15)) {  // a diagonal
        labels.push_back(labels[0]);
      }
      Operand o = s.operand(shuffled(labels, rng));
      o.denominator = op == ref::Op::divide;
      c.operands.push_back(o);
      c.terms.push_back({first});
    } else {  // a product with a summed label of its own
      auto k = s.fresh(1);
      std::vector<std::string> left = {k[0]}, right = {k[0]};
      for (const auto& l : mine) (rng.chance(0.5) ? left : right).push_back(l);
      c.operands.push_back(s.operand(shuffled(left, rng)));
      c.operands.push_back(s.operand(shuffled(right, rng)));
      c.terms.push_back({first, first + 1});
    }
  }
  c.target = ref::join_labels(shuffled(kept, rng));
  random_modifier(c, rng, 0.3);
  return c;
}

// A product accumulated into an existing target with += or -=.
Case gen_accumulate(Random& rng) {
  Case c = rng.chance(0.5) ? gen_contraction(rng) : gen_batch(rng);
  c.assign = rng.chance(0.5) ? Assign::add : Assign::subtract;
  return c;
}

// ---------------------------------------------------------------------------------------
// Complex cases

const Complex kComplexFactors[] = {{0.0, 1.0}, {0.6, -0.8}, {-1.5, 0.5}, {2.0, 0.25}, {-0.5, -2.0}};

// Whether tenex::conj may wrap the whole right-hand side without changing which labels are
// summed: a function's operand product contracts every label on two or more of its factors
// (docs/einstein.md: functions see their operand's product contracted), so a product with
// a Hadamard label the target keeps is left unwrapped.
bool conj_all_allowed(const Case& c) {
  if (c.elementwise) return true;  // its products share only their own summed label
  const auto target = ref::parse_labels(c.target);
  std::map<std::string, int> factors;
  for (const Operand& o : c.operands) {
    const auto labels = ref::parse_labels(o.labels);
    for (const auto& l : std::set<std::string>(labels.begin(), labels.end())) ++factors[l];
  }
  for (const auto& [label, count] : factors) {
    if (count > 1 && std::find(target.begin(), target.end(), label) != target.end()) return false;
  }
  return true;
}

// The complex form of a case, drawn from its own seed (the real form stays as generated):
// conj or a function on random operands, sometimes conj on the whole right-hand side, and
// mostly a complex factor where the case scales or divides.
Case complex_form(Case c) {
  Random rng(c.seed * 104729 + std::hash<std::string>{}(c.category) % 1000 + 17);
  static const Function any[] = {Function::exp,  Function::log,  Function::sqrt,       Function::square, Function::sin,
                                 Function::cos,  Function::tanh, Function::reciprocal, Function::power,  Function::abs,
                                 Function::real, Function::imag, Function::arg};
  // A divisor keeps its modulus away from zero.
  static const Function divisor[] = {Function::exp, Function::square};
  c.functions.assign(c.operands.size(), Function::none);
  for (std::size_t k = 0; k < c.operands.size(); ++k) {
    if (rng.chance(0.4)) {
      c.functions[k] = Function::conj;
    } else if (rng.chance(0.25)) {
      c.functions[k] = c.operands[k].denominator ? divisor[rng.below(2)] : any[rng.below(std::size(any))];
    }
  }
  c.conj_all = rng.chance(0.15) && conj_all_allowed(c);
  const bool factor =
      c.modifier == Modifier::scale_left || c.modifier == Modifier::scale_right || c.modifier == Modifier::divide;
  if (factor && rng.chance(0.75)) {
    c.complex_factor = true;
    c.calpha = kComplexFactors[rng.below(std::size(kComplexFactors))];
  }
  return c;
}

// Products of two and three factors with conj on every subset of them, each in three layouts
// (read in place by the GEMM, permuted, with a batch label), small (the plain loops) and large.
std::vector<Case> conjugation_cases() {
  struct Layout {
    std::vector<std::string> factors;
    std::string target;
  };
  static const std::vector<Layout> layouts = {
      {{"i,k", "k,j"}, "i,j"},        {{"k,i", "j,k"}, "j,i"},        {{"k,b,i", "b,j,k"}, "b,i,j"},
      {{"i,k", "k,l", "l,j"}, "i,j"}, {{"k,i", "l,k", "j,l"}, "j,i"}, {{"i,k,b", "b,l,k", "l,j,b"}, "b,j,i"},
  };
  std::vector<Case> cases;
  std::uint64_t seed = 0;
  for (const Layout& layout : layouts) {
    const std::size_t n = layout.factors.size();
    for (const bool large : {false, true}) {
      for (std::size_t mask = 0; mask < (std::size_t{1} << n); ++mask) {
        Case c;
        c.category = "conjugation";
        c.seed = ++seed;
        Random rng(c.seed * 7919 + 5);
        std::map<std::string, std::size_t> extent;
        for (const auto& f : layout.factors) {
          for (const auto& l : ref::parse_labels(f)) {
            if (!extent.count(l)) extent[l] = large ? (l == "b" ? 3 : 9) + rng.below(4) : 1 + rng.below(4);
          }
        }
        for (std::size_t k = 0; k < n; ++k) {
          Operand o;
          o.labels = layout.factors[k];
          for (const auto& l : ref::parse_labels(o.labels)) o.extents.push_back(extent[l]);
          c.operands.push_back(o);
          c.functions.push_back((mask >> k) & 1 ? Function::conj : Function::none);
        }
        c.target = layout.target;
        cases.push_back(std::move(c));
      }
    }
  }
  return cases;
}

// A few complex statements over 30,000 to 60,000 elements, past the size from which the fused,
// element-wise and permutation kernels split their work between threads.
std::vector<Case> large_cases() {
  auto operand = [](std::string labels, ref::Extents extents, bool denominator = false) {
    return Operand{std::move(labels), std::move(extents), denominator};
  };
  std::vector<Case> cases(4);
  // conj(t0) + t1 permuted / t2 broadcast.
  cases[0].operands = {operand("i,j,k", {40, 30, 32}), operand("k,j,i", {32, 30, 40}), operand("j", {30}, true)};
  cases[0].elementwise = true;
  cases[0].terms = {{0}, {1}, {2}};
  cases[0].ops = {ref::Op::add, ref::Op::divide};
  cases[0].functions = {Function::conj, Function::none, Function::none};
  cases[0].target = "k,i,j";
  // A function of a factor and a conjugated factor of a matrix product.
  cases[1].operands = {operand("i,k", {64, 48}), operand("k,j", {48, 72})};
  cases[1].functions = {Function::exp, Function::conj};
  cases[1].target = "j,i";
  // A Hadamard label kept, two summed, one factor conjugated, a complex factor.
  cases[2].operands = {operand("i,j,k", {40, 30, 32}), operand("k,i,j", {32, 40, 30})};
  cases[2].functions = {Function::conj, Function::none};
  cases[2].target = "i";
  cases[2].modifier = Modifier::scale_left;
  cases[2].complex_factor = true;
  cases[2].calpha = Complex(0.5, -1.5);
  // The conjugate of a whole sum of terms, accumulated.
  cases[3].operands = {operand("i,j", {200, 180}), operand("j,i", {180, 200})};
  cases[3].elementwise = true;
  cases[3].terms = {{0}, {1}};
  cases[3].ops = {ref::Op::subtract};
  cases[3].functions = {Function::sqrt, Function::none};
  cases[3].conj_all = true;
  cases[3].assign = Assign::add;
  cases[3].target = "i,j";
  for (std::size_t n = 0; n < cases.size(); ++n) {
    cases[n].category = "large";
    cases[n].seed = n + 1;
  }
  return cases;
}

struct Category {
  const char* name;
  Case (*generate)(Random&);
  std::size_t count;
};

const std::vector<Category>& categories() {
  static const std::vector<Category> list = {
      {"contraction", gen_contraction, 30},
      {"chain", gen_chain, 20},
      {"diagonal", gen_diagonal, 25},
      {"batch", gen_batch, 20},
      {"outer", gen_outer, 15},
      {"sum", gen_sum, 20},
      {"scalar", gen_scalar, 20},
      {"general", gen_general, 40},
      {"elementwise", gen_elementwise, 40},
      {"accumulate", gen_accumulate, 15},
  };
  return list;
}

// The distinct cases of a category, from seeds 1, 2, ... (seeds that repeat an earlier case or
// exceed the loop budget of the reference are skipped).
std::vector<Case> generate(const Category& category) {
  std::vector<Case> cases;
  std::set<std::string> seen;
  for (std::uint64_t seed = 1; cases.size() < category.count && seed < 100000; ++seed) {
    Random rng(seed * 7919 + std::hash<std::string>{}(category.name) % 1000);
    Case c = category.generate(rng);
    c.category = category.name;
    c.seed = seed;
    Space check{rng, {}, {}};
    for (const auto& o : c.operands) {
      auto labels = ref::parse_labels(o.labels);
      for (std::size_t m = 0; m < labels.size(); ++m) check.extent[labels[m]] = o.extents[m];
    }
    if (check.combinations() > kBudget) continue;
    if (!seen.insert(c.describe()).second) continue;
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---------------------------------------------------------------------------------------
// Running a case

template <class V>
struct Expected {
  ref::BasicArray<V> value, magnitude;
};

// f(v) for an operand's function in the reference (complex values only).
Complex apply(Function f, Complex v) {
  switch (f) {
    case Function::none: return v;
    case Function::conj: return std::conj(v);
    case Function::exp: return std::exp(v);
    case Function::log: return std::log(v);
    case Function::sqrt: return std::sqrt(v);
    case Function::square: return v * v;
    case Function::sin: return std::sin(v);
    case Function::cos: return std::cos(v);
    case Function::tanh: return std::tanh(v);
    case Function::reciprocal: return 1.0 / v;
    case Function::power: return std::pow(v, Complex(1.5));
    case Function::abs: return std::abs(v);
    case Function::real: return v.real();
    case Function::imag: return v.imag();
    case Function::arg: return std::arg(v);
  }
  return v;
}

// Whether a function's rounding error is relative to its value (conj, square, ...) or may
// be absolute (log near 1, arg, the trigonometric functions): the latter's magnitude is
// |f(v)| + 1.
bool absolute_error(Function f) {
  return f != Function::none && f != Function::conj && f != Function::square && f != Function::reciprocal &&
         f != Function::abs && f != Function::real && f != Function::imag;
}

// The reference result of a case, given the operands' values and the target's old value.
template <class V>
Expected<V> reference_result(const Case& c, std::vector<ref::BasicArray<V>> inputs,
                             const ref::BasicArray<V>* old_target) {
  const auto target = ref::parse_labels(c.target);
  auto abs_inputs = inputs;
  for (auto& a : abs_inputs) a = ref::absolute(a);
  if constexpr (std::is_same_v<V, Complex>) {
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const Function f = c.function(static_cast<int>(k));
      inputs[k] = ref::mapped(inputs[k], [f](Complex v) { return apply(f, v); });
      abs_inputs[k] = ref::mapped(inputs[k], [f](Complex v) { return std::abs(v) + (absolute_error(f) ? 1.0 : 0.0); });
    }
  }
  Expected<V> e;
  if (!c.elementwise) {
    e.value = ref::einsum(inputs, target);
    e.magnitude = ref::einsum(abs_inputs, target);
  } else {
    // Each term keeps its labels that the target has (its own summed labels go).
    auto term = [&](const std::vector<int>& ids, const std::vector<ref::BasicArray<V>>& from) {
      std::vector<ref::BasicArray<V>> ops;
      ref::Labels keep;
      for (int id : ids) {
        ops.push_back(from[static_cast<std::size_t>(id)]);
        for (const auto& l : ops.back().labels) {
          if (std::find(target.begin(), target.end(), l) != target.end() &&
              std::find(keep.begin(), keep.end(), l) == keep.end()) {
            keep.push_back(l);
          }
        }
      }
      return ref::einsum(ops, keep);
    };
    auto union_labels = [&](const ref::BasicArray<V>& a, const ref::BasicArray<V>& b) {
      ref::Labels out;
      for (const auto& l : target) {
        if (std::count(a.labels.begin(), a.labels.end(), l) || std::count(b.labels.begin(), b.labels.end(), l)) {
          out.push_back(l);
        }
      }
      return out;
    };
    e.value = term(c.terms[0], inputs);
    e.magnitude = term(c.terms[0], abs_inputs);
    for (std::size_t t = 1; t < c.terms.size(); ++t) {
      const ref::BasicArray<V> v = term(c.terms[t], inputs), m = term(c.terms[t], abs_inputs);
      const auto out = union_labels(e.value, v);
      const ref::Op op = c.ops[t - 1];
      ref::BasicArray<V> mag = op == ref::Op::divide ? ref::elementwise(ref::Op::divide, e.magnitude, m, out)
                                                     : ref::elementwise(ref::Op::add, e.magnitude, m, out);
      e.value = ref::elementwise(op, e.value, v, out);
      e.magnitude = std::move(mag);
    }
    e.value = ref::permuted(e.value, target);
    e.magnitude = ref::permuted(e.magnitude, target);
  }
  if constexpr (std::is_same_v<V, Complex>) {
    if (c.conj_all) e.value = ref::conjugated(e.value);
  }
  const Complex alpha = c.complex_factor ? c.calpha : Complex(c.alpha);
  Complex factor = 1.0;
  switch (c.modifier) {
    case Modifier::none: break;
    case Modifier::scale_left:
    case Modifier::scale_right: factor = alpha; break;
    case Modifier::divide: factor = 1.0 / alpha; break;
    case Modifier::negate: factor = -1.0; break;
  }
  if constexpr (std::is_same_v<V, Complex>) {
    e.value = ref::scaled(e.value, factor);
  } else {
    e.value = ref::scaled(e.value, factor.real());
  }
  e.magnitude = ref::scaled(e.magnitude, std::abs(factor));
  if (c.assign != Assign::set) {
    e.value =
        ref::elementwise(c.assign == Assign::add ? ref::Op::add : ref::Op::subtract, *old_target, e.value, target);
    e.magnitude = ref::elementwise(ref::Op::add, ref::absolute(*old_target), e.magnitude, target);
  }
  return e;
}

template <class T>
class Runner {
 public:
  using Tensor = tenex::Tensor<T>;
  using Expr = tenex::Expression<Tensor>;
  using Next = std::function<void(const Expr&)>;

  Runner(const Case& c, std::vector<Tensor>& tensors) : case_(c), tensors_(tensors) {}

  void assign_to(Tensor& target) {
    auto finish = [&](const Expr& e) {
      switch (case_.assign) {
        case Assign::set: target(case_.target) = e; break;
        case Assign::add: target(case_.target) += e; break;
        case Assign::subtract: target(case_.target) -= e; break;
      }
    };
    auto conjugated = [&](const Expr& e) {
      if constexpr (tenex::is_complex_v<T>) {
        if (case_.conj_all) return modify(tenex::conj(e), finish);
      }
      modify(e, finish);
    };
    auto modified = [&](const Expr& e) { conjugated(e); };
    if (!case_.elementwise) {
      std::vector<int> all;
      for (std::size_t k = 0; k < case_.operands.size(); ++k) all.push_back(static_cast<int>(k));
      product(all, modified);
    } else {
      product(case_.terms[0], [&](const Expr& x) {
        product(case_.terms[1], [&](const Expr& y) {
          combine(case_.ops[0], x, y, [&](const Expr& xy) {
            if (case_.terms.size() == 2) return modified(xy);
            product(case_.terms[2], [&](const Expr& z) { combine(case_.ops[1], xy, z, modified); });
          });
        });
      });
    }
  }

 private:
  tenex::Indexed<Tensor> indexed(int k) {
    return tensors_[static_cast<std::size_t>(k)](case_.operands[static_cast<std::size_t>(k)].labels);
  }

  // next(operand k), with its function applied as a user writes it.
  void operand(int k, const Next& next) {
    if constexpr (tenex::is_complex_v<T>) {
      const auto x = indexed(k);
      switch (case_.function(k)) {
        case Function::none: return next(x);
        case Function::conj: return next(tenex::conj(x));
        case Function::exp: return next(tenex::exp(x));
        case Function::log: return next(tenex::log(x));
        case Function::sqrt: return next(tenex::sqrt(x));
        case Function::square: return next(tenex::square(x));
        case Function::sin: return next(tenex::sin(x));
        case Function::cos: return next(tenex::cos(x));
        case Function::tanh: return next(tenex::tanh(x));
        case Function::reciprocal: return next(tenex::reciprocal(x));
        case Function::power: return next(tenex::power(x, 1.5));
        case Function::abs: return next(tenex::cast<T>(tenex::abs(x)));
        case Function::real: return next(tenex::cast<T>(tenex::real(x)));
        case Function::imag: return next(tenex::cast<T>(tenex::imag(x)));
        case Function::arg: return next(tenex::cast<T>(tenex::arg(x)));
      }
    }
    next(indexed(k));
  }

  // next(t_ids[0] * t_ids[1] * ...), built left to right as a user writes it.
  void product(const std::vector<int>& ids, const Next& next) {
    operand(ids[0], [&](const Expr& first) { multiply_from(1, first, ids, next); });
  }
  void multiply_from(std::size_t k, const Expr& acc, const std::vector<int>& ids, const Next& next) {
    if (k == ids.size()) return next(acc);
    operand(ids[k], [&](const Expr& x) { multiply_from(k + 1, acc * x, ids, next); });
  }

  static void combine(ref::Op op, const Expr& x, const Expr& y, const Next& next) {
    switch (op) {
      case ref::Op::add: return next(x + y);
      case ref::Op::subtract: return next(x - y);
      case ref::Op::divide: return next(x / y);
      case ref::Op::multiply: return next(x * y);
    }
  }

  void modify(const Expr& e, const Next& next) {
    if constexpr (tenex::is_complex_v<T>) {
      if (case_.complex_factor) {
        switch (case_.modifier) {
          case Modifier::scale_left: return next(case_.calpha * e);
          case Modifier::scale_right: return next(e * case_.calpha);
          case Modifier::divide: return next(e / case_.calpha);
          default: break;
        }
      }
    }
    switch (case_.modifier) {
      case Modifier::none: return next(e);
      case Modifier::scale_left: return next(case_.alpha * e);
      case Modifier::scale_right: return next(e * case_.alpha);
      case Modifier::divide: return next(e / case_.alpha);
      case Modifier::negate: return next(-e);
    }
  }

  const Case& case_;
  std::vector<Tensor>& tensors_;
};

template <class T>
constexpr double relative_tolerance() {
  return std::is_same_v<tenex::real_type_t<T>, float> ? 1e-4 : 1e-10;
}

// Values of type T (so that the reference sees exactly what tenex sees), as the reference's
// type: both parts random for a complex T; a divisor's modulus at least 0.5.
template <class T>
std::vector<ref::ValueOf<T>> random_values(Random& rng, std::size_t n, bool denominator) {
  std::vector<ref::ValueOf<T>> v(n);
  for (auto& x : v) {
    if constexpr (tenex::is_complex_v<T>) {
      Complex u = rng.uniform_complex();
      if (denominator) u *= (0.5 + std::abs(u)) / std::max(std::abs(u), 1e-300);
      x = static_cast<Complex>(static_cast<T>(u));
    } else {
      double u = rng.uniform();
      if (denominator) u = (u < 0 ? -1.0 : 1.0) * (0.5 + std::abs(u));
      x = static_cast<double>(static_cast<T>(u));
    }
  }
  return v;
}

template <class T>
void run_case(const Case& c) {
  using V = ref::ValueOf<T>;
  INFO("case ", c.category, " #", c.seed, ": ", c.describe());
  Random rng(c.seed * 31 + 7);
  std::vector<tenex::Tensor<T>> tensors;
  std::vector<ref::BasicArray<V>> inputs;
  for (const Operand& o : c.operands) {
    auto values = random_values<T>(rng, ref::element_count(o.extents), o.denominator);
    tensors.emplace_back(tenex::Shape(o.extents), std::vector<T>(values.begin(), values.end()));
    auto labels = ref::parse_labels(o.labels);
    inputs.push_back(ref::BasicArray<V>{labels, o.extents, values});
  }

  const auto target_labels = ref::parse_labels(c.target);
  ref::Extents target_extents;
  for (const auto& l : target_labels) {
    for (const auto& in : inputs) {
      auto it = std::find(in.labels.begin(), in.labels.end(), l);
      if (it != in.labels.end()) {
        target_extents.push_back(in.extents[static_cast<std::size_t>(it - in.labels.begin())]);
        break;
      }
    }
  }

  tenex::Tensor<T> result;
  ref::BasicArray<V> old_target;
  if (c.assign != Assign::set) {
    auto values = random_values<T>(rng, ref::element_count(target_extents), false);
    result = tenex::Tensor<T>(tenex::Shape(target_extents), std::vector<T>(values.begin(), values.end()));
    old_target = ref::BasicArray<V>{target_labels, target_extents, values};
  }
  const Expected<V> expected = reference_result(c, inputs, &old_target);

  try {
    Runner<T>(c, tensors).assign_to(result);
    const ref::Extents got_extents(result.shape().extents().begin(), result.shape().extents().end());
    INFO("result shape ", ref::format_extents(got_extents), ", expected ", ref::format_extents(target_extents));
    CHECK(got_extents == target_extents);
    if (got_extents != target_extents) return;
    const std::string report = ref::compare(ref::widened(result.to_vector()), expected.value, expected.magnitude,
                                            relative_tolerance<T>(), relative_tolerance<T>() * 1e-3);
    INFO(report);
    CHECK(report.empty());
  } catch (const std::exception& e) {
    FAIL_CHECK("threw: ", std::string(e.what()));
  }
}

template <class T>
void run_category(const char* name) {
  for (const Category& category : categories()) {
    if (std::string(category.name) != name) continue;
    const auto cases = generate(category);
    CHECK(cases.size() == category.count);
    for (const Case& c : cases) {
      if constexpr (tenex::is_complex_v<T>) {
        run_case<T>(complex_form(c));
      } else {
        run_case<T>(c);
      }
    }
    return;
  }
  FAIL("no category ", name);
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("einstein generated: contraction", T, einstein_contraction) {
  run_category<T>("contraction");
}
TEST_CASE_TEMPLATE_APPLY(einstein_contraction, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: chain", T, einstein_chain) { run_category<T>("chain"); }
TEST_CASE_TEMPLATE_APPLY(einstein_chain, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: diagonal and trace", T, einstein_diagonal) {
  run_category<T>("diagonal");
}
TEST_CASE_TEMPLATE_APPLY(einstein_diagonal, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: batch", T, einstein_batch) { run_category<T>("batch"); }
TEST_CASE_TEMPLATE_APPLY(einstein_batch, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: outer product", T, einstein_outer) { run_category<T>("outer"); }
TEST_CASE_TEMPLATE_APPLY(einstein_outer, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: sums and permutations", T, einstein_sum) { run_category<T>("sum"); }
TEST_CASE_TEMPLATE_APPLY(einstein_sum, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: scalars", T, einstein_scalar) { run_category<T>("scalar"); }
TEST_CASE_TEMPLATE_APPLY(einstein_scalar, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: general", T, einstein_general) { run_category<T>("general"); }
TEST_CASE_TEMPLATE_APPLY(einstein_general, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: elementwise", T, einstein_elementwise) {
  run_category<T>("elementwise");
}
TEST_CASE_TEMPLATE_APPLY(einstein_elementwise, AllScalars);
TEST_CASE_TEMPLATE_DEFINE("einstein generated: accumulate", T, einstein_accumulate) { run_category<T>("accumulate"); }
TEST_CASE_TEMPLATE_APPLY(einstein_accumulate, AllScalars);

// The generators cover what the issue asks for: at least 150 distinct cases, 1 to 5 operands,
// operand and result ranks 0 to 6, diagonals, scalars, broadcasting, every modifier.
TEST_CASE("einstein generated: coverage of the generated cases") {
  std::set<std::string> all;
  std::set<std::size_t> operand_counts, operand_ranks, target_ranks;
  std::set<int> modifiers, element_ops;
  bool diagonal = false, scalar_operand = false, scalar_result = false, accumulate = false;
  for (const Category& category : categories()) {
    for (const Case& c : generate(category)) {
      all.insert(c.describe());
      if (!c.elementwise) operand_counts.insert(c.operands.size());
      for (const auto& o : c.operands) {
        auto labels = ref::parse_labels(o.labels);
        operand_ranks.insert(labels.size());
        scalar_operand = scalar_operand || labels.empty();
        std::set<std::string> distinct(labels.begin(), labels.end());
        diagonal = diagonal || distinct.size() < labels.size();
      }
      target_ranks.insert(ref::parse_labels(c.target).size());
      scalar_result = scalar_result || c.target.empty();
      modifiers.insert(static_cast<int>(c.modifier));
      for (ref::Op op : c.ops) element_ops.insert(static_cast<int>(op));
      accumulate = accumulate || c.assign != Assign::set;
    }
  }
  MESSAGE("distinct generated Einstein cases per scalar type: ", all.size());
  CHECK(all.size() >= 150);
  CHECK(operand_counts == std::set<std::size_t>{1, 2, 3, 4, 5});
  CHECK(operand_ranks == std::set<std::size_t>{0, 1, 2, 3, 4, 5, 6});
  for (std::size_t r = 0; r <= 6; ++r) CHECK(target_ranks.count(r) == 1);
  CHECK(modifiers.size() == 5);
  CHECK(element_ops.size() == 3);
  CHECK(diagonal);
  CHECK(scalar_operand);
  CHECK(scalar_result);
  CHECK(accumulate);
}

TEST_CASE_TEMPLATE_DEFINE("einstein generated: conj on every factor of products of two and three", T,
                          einstein_conjugation) {
  for (const Case& c : conjugation_cases()) run_case<T>(c);
}
TEST_CASE_TEMPLATE_APPLY(einstein_conjugation, ComplexScalars);

TEST_CASE_TEMPLATE_DEFINE("einstein generated: large complex statements", T, einstein_large) {
  for (const Case& c : large_cases()) run_case<T>(c);
}
TEST_CASE_TEMPLATE_APPLY(einstein_large, ComplexScalars);

// The complex decorations cover what the issue asks for: conj on every operand position of
// products of two and of three factors, a conj over a whole statement, complex factors with
// every modifier that takes one, and every function defined for complex numbers.
TEST_CASE("einstein generated: coverage of the complex cases") {
  std::set<std::pair<std::size_t, std::size_t>> conj_positions;  // (factors, position)
  std::set<int> functions;
  std::set<int> complex_modifiers;
  std::size_t conj_all = 0, cases = 0;
  for (const Category& category : categories()) {
    for (const Case& generated : generate(category)) {
      const Case c = complex_form(generated);
      ++cases;
      for (std::size_t k = 0; k < c.operands.size(); ++k) {
        const Function f = c.function(static_cast<int>(k));
        functions.insert(static_cast<int>(f));
        if (f == Function::conj && !c.elementwise) conj_positions.insert({c.operands.size(), k});
      }
      conj_all += c.conj_all ? 1 : 0;
      if (c.complex_factor) complex_modifiers.insert(static_cast<int>(c.modifier));
    }
  }
  for (const Case& c : conjugation_cases()) {
    for (std::size_t k = 0; k < c.operands.size(); ++k) {
      if (c.function(static_cast<int>(k)) == Function::conj) conj_positions.insert({c.operands.size(), k});
    }
  }
  MESSAGE("complex cases per complex type: ", cases, " generated, ", conjugation_cases().size(), " conjugation; ",
          conj_all, " conjugated as a whole");
  for (std::size_t n = 2; n <= 3; ++n) {
    for (std::size_t k = 0; k < n; ++k) {
      CAPTURE(n);
      CAPTURE(k);
      CHECK(conj_positions.count({n, k}) == 1);
    }
  }
  CHECK(functions.size() == static_cast<std::size_t>(kFunctionCount));
  CHECK(complex_modifiers == std::set<int>{static_cast<int>(Modifier::scale_left),
                                           static_cast<int>(Modifier::scale_right),
                                           static_cast<int>(Modifier::divide)});
  CHECK(conj_all > 10);
  CHECK(conjugation_cases().size() == 72);
}
