// compile (src/tenex/runtime/compile.hpp): the pipeline and explain(e) compile a set with one
// function, so the plan explain(e) shows before a set runs is the plan explain() shows after
// it ran, under a memory limit, with sparse maps and with TENEX_PASSES; and the plan cache's
// signature, written by each node class, never gives a class another class's plan.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"
#include "support/user_classes.hpp"

namespace {

using tenex::AssignMode;
using tenex::AssignTo;
using tenex::Shape;
using tenex::Tensor;

Tensor<double> random_tensor(const Shape& shape, std::uint64_t seed) {
  Tensor<double> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

bool contains(const std::string& text, std::string_view what) { return text.find(what) != std::string::npos; }

/// The plan's part of an explain text: without the title (which names what was asked) and
/// without the lines a run measured.
std::string plan_part(const std::string& text) {
  const std::size_t title_end = text.find(" (");
  REQUIRE(title_end < text.find('\n'));
  std::string part;
  std::size_t at = title_end;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + at, end - at);
    // What the run measured, and the plan each CPU contraction ran (explain() only).
    if (!line.starts_with("measured: ") && !line.starts_with("device: ") && !line.starts_with("the set failed") &&
        !line.starts_with("contraction ") && !line.starts_with("... and ")) {
      part.append(line);
    }
    at = end;
  }
  return part;
}

/// Restores "no limit" whatever a test case does.
struct LimitGuard {
  ~LimitGuard() {
    tenex::set_memory_limit(0);
    ::unsetenv("TENEX_MEMORY_LIMIT");
  }
};

/// Records `target = rhs` as a statement held by the caller, runs nothing yet: explain of the
/// statement is the plan of its set as it would run.
using Statement = AssignTo<Tensor<double>>;

/// e = sum_{i,a,b} x(i,a) y(i,b) z(a,b): whichever pair is multiplied first makes an n x n
/// intermediate.
struct Triangle {
  static constexpr std::size_t n = 120;
  Tensor<double> x = random_tensor({n, n}, 11), y = random_tensor({n, n}, 12), z = random_tensor({n, n}, 13);
  double expected() const {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t a = 0; a < n; ++a) {
        for (std::size_t b = 0; b < n; ++b) sum += x.at(i, a) * y.at(i, b) * z.at(a, b);
      }
    }
    return sum;
  }
  /// explain(statement) before the set runs, and explain() after; checks the result.
  std::pair<std::string, std::string> plans() {
    Tensor<double> e;
    std::string before;
    {
      Statement s(e(""), e, x("i,a") * y("i,b") * z("a,b"), AssignMode::replace);
      before = tenex::explain(s);
      CHECK(e.pending());
    }
    CHECK(std::abs(e.at() - expected()) <= 1e-9 * (1 + std::abs(expected())));
    return {before, tenex::explain()};
  }
};

}  // namespace

TEST_CASE("compile: under set_memory_limit, explain(e) shows the batches that run") {
  LimitGuard guard;
  const EnvironmentScope passes("TENEX_PASSES", "all");
  Triangle t;
  const std::size_t limit = Triangle::n * Triangle::n * sizeof(double) / 3;
  tenex::set_memory_limit(limit);
  for (int round = 0; round < 2; ++round) {  // the second reuses the plan cache's plan
    CAPTURE(round);
    const auto [before, after] = t.plans();
    CAPTURE(before);
    CAPTURE(after);
    CHECK(contains(before, "slice"));  // batched: the limit was read
    CHECK(plan_part(before) == plan_part(after));
    CHECK(tenex::last_run_stats().peak_bytes <= limit);
    if (round == 1) CHECK(tenex::last_run_stats().plan_reused);
  }
  // Without the limit the plan differs (no batches), and still agrees with the run.
  tenex::set_memory_limit(0);
  const auto [before, after] = t.plans();
  CHECK_FALSE(contains(before, "slice"));
  CHECK(plan_part(before) == plan_part(after));
}

TEST_CASE("compile: under TENEX_MEMORY_LIMIT, explain(e) shows the batches that run") {
  LimitGuard guard;
  const EnvironmentScope passes("TENEX_PASSES", "all");
  Triangle t;
  const std::string limit = std::to_string(Triangle::n * Triangle::n * sizeof(double) / 3);
  const EnvironmentScope scope("TENEX_MEMORY_LIMIT", limit.c_str());
  const auto [before, after] = t.plans();
  CAPTURE(before);
  CHECK(contains(before, "slice"));
  CHECK(plan_part(before) == plan_part(after));
}

TEST_CASE("compile: with TENEX_PASSES=none explain(e) shows the graph as built, as it runs") {
  auto p = random_tensor({2, 50}, 1), q = random_tensor({50, 40}, 2), r = random_tensor({40, 30}, 3);
  const auto run = [&](std::string& before) {
    Tensor<double> x;
    {
      Statement s(x("i,l"), x, p("i,j") * (q("j,k") * r("k,l")), AssignMode::replace);
      before = tenex::explain(s);
    }
    const double x00 = x.at(0, 0);
    double expected = 0;
    for (std::size_t j = 0; j < 50; ++j) {
      for (std::size_t k = 0; k < 40; ++k) expected += p.at(0, j) * q.at(j, k) * r.at(k, 0);
    }
    CHECK(x00 == doctest::Approx(expected).epsilon(1e-12));
    return tenex::explain();
  };
  {
    const EnvironmentScope scope("TENEX_PASSES", "all");
    std::string before;
    const std::string after = run(before);
    CHECK(plan_part(before) == plan_part(after));
    CHECK(contains(before, "total: 12800 flops"));  // reordered
  }
  const EnvironmentScope scope("TENEX_PASSES", "none");
  std::string before;
  const std::string after = run(before);
  CAPTURE(before);
  CAPTURE(after);
  CHECK(plan_part(before) == plan_part(after));
  CHECK(contains(before, "total: 126000 flops"));  // the written order
  CHECK(contains(before, "speed-up 1.00x"));
}

TEST_CASE("compile: with sparse maps explain(e) says how they run, as they run") {
  auto a = random_tensor({16, 16}, 21), b = random_tensor({16, 16}, 22);
  tenex::SparseMap band;
  for (std::size_t i = 0; i < 16; ++i) {
    std::vector<tenex::SparseMap::Index> allowed;
    for (std::size_t j = i >= 1 ? i - 1 : 0; j < std::min<std::size_t>(16, i + 2); ++j) allowed.push_back({j});
    band.insert({i}, allowed);
  }
  const auto run = [&](tenex::BackendKind kind) {
    tenex::set_default_backend(kind);
    Tensor<double> c;
    std::string before;
    {
      auto product = a("i,k") * b("k,j");
      product.set_sparse_map("i", "j", band);
      Statement s(c("i,j"), c, 2.0 * product, AssignMode::replace);
      tenex::set_default_backend(tenex::BackendKind::automatic);
      before = tenex::explain(s);
    }
    // The band of 2 a b, zero elsewhere.
    for (std::size_t i = 0; i < 16; ++i) {
      for (std::size_t j = 0; j < 16; ++j) {
        double expected = 0;
        if (j + 1 >= i && j <= i + 1) {
          for (std::size_t k = 0; k < 16; ++k) expected += 2.0 * a.at(i, k) * b.at(k, j);
        }
        CHECK(c.at(i, j) == doctest::Approx(expected).epsilon(1e-12));
      }
    }
    const std::string after = tenex::explain();
    CAPTURE(before);
    CAPTURE(after);
    CHECK(plan_part(before) == plan_part(after));
    return before;
  };
  const EnvironmentScope passes("TENEX_PASSES", "all");
  const std::string cpu = run(tenex::BackendKind::cpu);
  CHECK(contains(cpu, "evaluated on their allowed elements only"));
  {
    // Without the sparse pass the maps run dense and masked, and explain(e) knew it.
    const EnvironmentScope scope("TENEX_PASSES", "cse,order,fold_scales,gemm_beta,collapse,fuse");
    CHECK(contains(run(tenex::BackendKind::cpu), "sparse maps: evaluated dense and masked (no node"));
  }
  if (tenex::cuda_available()) {
    // The CUDA backend declines per-key blocks: its plan is dense and masked, decided before the
    // passes ran, and explain(e) says why.
    const std::string cuda = run(tenex::BackendKind::cuda);
    CHECK(contains(cuda, "sparse maps: evaluated dense and masked (the cuda backend"));
  } else {
    MESSAGE("no CUDA device: the plan of a backend that declines sparse maps is not checked here");
  }
}

namespace {

// Thrice: a user class of the same shape as Twice (support/user_classes.hpp), on the same
// operands, with another meaning. Neither writes a plan cache signature.
template <class T>
class Thrice : public tenex::Nary<1, T> {
 public:
  explicit Thrice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Thrice"; }
  tenex::NodeId add_to_graph(tenex::OpGraph& graph) const override {
    return (3.0 * this->child(0)).add_to_graph(graph);
  }
};

}  // namespace

TEST_CASE("compile: a user class that writes no signature never runs another class's cached plan") {
  ::unsetenv("TENEX_PLAN_CACHE");
  auto a = random_tensor({3, 4}, 31), b = random_tensor({4, 5}, 32);
  const std::vector<double> av = a.to_vector();
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    Tensor<double> twice, thrice, product, again;
    twice("i,j") = Twice<Tensor<double>>(a("i,j"));
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
    thrice("i,j") = Thrice<Tensor<double>>(a("i,j"));
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
    // Inside a product of library classes too.
    product("i,k") = Thrice<Tensor<double>>(a("i,j")) * b("j,k");
    again("i,k") = Twice<Tensor<double>>(a("i,j")) * b("j,k");
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
    const std::vector<double> tw = twice.to_vector(), th = thrice.to_vector();
    for (std::size_t x = 0; x < av.size(); ++x) {
      CHECK(tw[x] == 2.0 * av[x]);
      CHECK(th[x] == 3.0 * av[x]);
    }
    for (std::size_t i = 0; i < 3; ++i) {
      for (std::size_t k = 0; k < 5; ++k) {
        double ab = 0;
        for (std::size_t j = 0; j < 4; ++j) ab += a.at(i, j) * b.at(j, k);
        CHECK(product.at(i, k) == doctest::Approx(3.0 * ab).epsilon(1e-12));
        CHECK(again.at(i, k) == doctest::Approx(2.0 * ab).epsilon(1e-12));
      }
    }
  }
  // The library's own classes still share plans: the same statement twice reuses it.
  Tensor<double> c;
  c("i,k") = 2.0 * (a("i,j") * b("j,k"));
  c("i,k") = 2.0 * (a("i,j") * b("j,k"));
  CHECK(tenex::last_run_stats().plan_reused);
}
