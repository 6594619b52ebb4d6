// Every pass preserves results: random expression sets (random labels and extents, the
// element-wise algebra, products, reductions, sharing, targets read back as operands,
// aliasing, += and -=) evaluated with TENEX_PASSES=none, with every pass, and with each
// pass alone must agree.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using T = double;
using tenex::Operand;
using tenex::Tensor;
using E = Operand<Tensor<T>>;

/// `x` as an Operand: a handle onto the same node and set, of one type whatever x's class.
E as_operand(const tenex::Expression<Tensor<T>>& x) {
  return tenex::detail::Access::make<E>(tenex::detail::Access::handle(x));
}

/// A small deterministic generator (splitmix64).
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
  bool chance(double p) { return static_cast<double>(next() % 1000) < p * 1000; }
};

const std::vector<std::string> kLabels = {"i", "j", "k", "l"};
const std::vector<std::size_t> kExtents = {2, 3, 4, 5};

std::size_t extent_of(const std::string& label) {
  for (std::size_t i = 0; i < kLabels.size(); ++i) {
    if (kLabels[i] == label) return kExtents[i];
  }
  return 1;
}

std::string join(const std::vector<std::string>& labels) {
  std::string s;
  for (const auto& l : labels) s += (s.empty() ? "" : ",") + l;
  return s;
}

/// Builds one random program: its statements run in one linked set.
class Program {
 public:
  explicit Program(std::uint64_t seed) : rng_{seed} {}

  /// Runs the program; returns every target's values, in order.
  std::vector<std::vector<T>> run() {
    std::vector<std::vector<T>> out;
    {
      const std::size_t statements = 1 + rng_.below(4);
      for (std::size_t s = 0; s < statements; ++s) statement();
      shared_.clear();
    }  // the set runs here, if no statement was read before
    for (const auto& t : targets_) out.push_back(t->to_vector());
    return out;
  }

 private:
  std::vector<std::string> random_labels(std::size_t rank) {
    std::vector<std::string> pool = kLabels, labels;
    for (std::size_t r = 0; r < rank; ++r) {
      const std::size_t at = rng_.below(pool.size());
      labels.push_back(pool[at]);
      pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(at));
    }
    return labels;
  }

  E leaf() {
    // An earlier target (a pending result of this set, read back) or a fresh tensor.
    if (!targets_.empty() && rng_.chance(0.25)) {
      const std::size_t t = rng_.below(targets_.size());
      return as_operand((*targets_[t])(target_labels_[t]));
    }
    const std::vector<std::string> labels = random_labels(rng_.below(4));
    std::vector<std::size_t> extents;
    for (const auto& l : labels) extents.push_back(extent_of(l));
    auto t = std::make_shared<Tensor<T>>(tenex::Shape(extents));
    tenex::fill_random(*t, rng_.next());
    leaves_.push_back(t);
    return as_operand((*t)(join(labels)));
  }

  E expr(int depth) {
    if (depth == 0 || rng_.chance(0.25)) {
      if (!shared_.empty() && rng_.chance(0.3)) return shared_[rng_.below(shared_.size())];
      return leaf();
    }
    E a = expr(depth - 1);
    E result = [&]() -> E {
      switch (rng_.below(13)) {
        case 0: return as_operand((a + expr(depth - 1)));
        case 1: return as_operand((a - expr(depth - 1)));
        case 2: return as_operand((a * expr(depth - 1)));
        case 3: return as_operand((a / (2.0 + tenex::square(expr(depth - 1)))));
        case 4: return as_operand((1.5 * a));
        case 5: return as_operand(tenex::tanh(a));
        case 6: return as_operand(tenex::max(a, expr(depth - 1)));
        case 7: return as_operand(tenex::min(a, expr(depth - 1)));
        case 8: return as_operand((a + 0.5));
        case 9: return as_operand((2.0 - a));
        case 10: {
          E l = leaf();
          if (l.labels().empty()) return as_operand((l * a));
          return as_operand(tenex::sum(l, l.labels()[rng_.below(l.labels().size())]));
        }
        case 11: return as_operand(tenex::clamp(a, -0.5, 0.5));
        default: return as_operand((-a));
      }
    }();
    if (rng_.chance(0.25)) shared_.push_back(result);  // a named intermediate, used again
    return result;
  }

  void statement() {
    E value = expr(3);
    // Keep a random subset of the value's labels, in a random order.
    std::vector<std::string> keep;
    for (const auto& l : value.labels()) {
      if (rng_.chance(0.7)) keep.push_back(l);
    }
    for (std::size_t i = keep.size(); i > 1; --i) std::swap(keep[i - 1], keep[rng_.below(i)]);
    // A label dropped that some terms of a sum lack is an error where it is written
    // (docs/einstein.md): such a statement keeps every label instead.
    try {
      Tensor<T> probe;
      probe(join(keep)) = value;
    } catch (const tenex::ShapeError& e) {
      REQUIRE(std::string(e.what()).find("a sum whose terms lack a summed label") != std::string::npos);
      keep = value.labels();
    }
    const std::string labels = join(keep);
    // Sometimes accumulate into (or overwrite) an earlier target with the same labels.
    for (std::size_t t = 0; t < targets_.size(); ++t) {
      if (target_labels_[t] == labels && rng_.chance(0.5)) {
        Tensor<T>& target = *targets_[t];
        // The target read as an operand lacks the labels the statement drops: += then.
        switch (keep.size() == value.labels().size() ? rng_.below(3) : rng_.below(2)) {
          case 0: target(labels) += value; break;
          case 1: target(labels) -= value; break;
          default: target(labels) = value + target(labels); break;  // the target read as an operand
        }
        return;
      }
    }
    targets_.push_back(std::make_shared<Tensor<T>>());
    target_labels_.push_back(labels);
    (*targets_.back())(labels) = value;
  }

  Rng rng_;
  std::vector<std::shared_ptr<Tensor<T>>> leaves_;
  std::vector<std::shared_ptr<Tensor<T>>> targets_;
  std::vector<std::string> target_labels_;
  std::vector<E> shared_;
};

struct PassesScope {
  explicit PassesScope(const std::string& value) { ::setenv("TENEX_PASSES", value.c_str(), 1); }
  ~PassesScope() { ::unsetenv("TENEX_PASSES"); }
};

std::vector<std::vector<T>> run_with(std::uint64_t seed, const std::string& passes) {
  const PassesScope scope(passes);
  return Program(seed).run();
}

}  // namespace

TEST_CASE("pass properties: every pass, each pass alone and none agree on random expression sets") {
  const std::vector<std::string> settings = {"all", "cse", "order", "fold_scales", "gemm_beta", "collapse", "fuse"};
  std::size_t targets = 0;
  for (std::uint64_t seed = 1; seed <= 150; ++seed) {
    CAPTURE(seed);
    const auto reference = run_with(seed, "none");
    targets += reference.size();
    for (const std::string& setting : settings) {
      CAPTURE(setting);
      const auto got = run_with(seed, setting);
      REQUIRE(got.size() == reference.size());
      for (std::size_t t = 0; t < got.size(); ++t) {
        CAPTURE(t);
        REQUIRE(got[t].size() == reference[t].size());
        for (std::size_t x = 0; x < got[t].size(); ++x) {
          const double tol = 1e-10 * (1.0 + std::abs(reference[t][x]));
          if (!(std::abs(got[t][x] - reference[t][x]) <= tol)) {
            CAPTURE(x);
            CHECK(got[t][x] == doctest::Approx(reference[t][x]).epsilon(1e-10));
            break;
          }
        }
      }
    }
  }
  MESSAGE("targets compared: ", targets);
  CHECK(targets >= 150);
}

TEST_CASE("pass properties: TENEX_PASSES names passes; an unknown one is an error of the set") {
  Tensor<T> a(tenex::Shape{3, 4}), c;
  tenex::fill_random(a, 7);
  {
    const PassesScope scope("fuse, cse");
    c("i,j") = tenex::exp(a("i,j")) + 1.0;
  }
  CHECK(c.at(1, 2) == doctest::Approx(std::exp(a.at(1, 2)) + 1.0));
  Tensor<T> d;
  {
    const PassesScope scope("fuse,bogus");
    d("i,j") = a("i,j") + 1.0;
  }
  try {
    d.wait();
    FAIL("an unknown pass was accepted");
  } catch (const tenex::Error& e) {
    const std::string text = e.what();
    CHECK(text.find("TENEX_PASSES=fuse,bogus") != std::string::npos);
    CHECK(text.find("unknown pass \"bogus\"") != std::string::npos);
    CHECK(text.find("fuse") != std::string::npos);
  }
}
