// The plan cache (src/tenex/runtime/plan_cache.hpp): a set of the same structure and
// extents as one run before reuses its optimized graph, bound to its own tensors. Its
// results must be exactly those of a fresh build: every statement here runs with the cache
// on and off (TENEX_PLAN_CACHE=0) and the two are compared, element for element, while
// extents, labels, aliasing, scales, sparse maps and decompositions change between
// repetitions; RunStats::plan_reused says whether the cache was used.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <unistd.h>

#include <tenex/tenex.hpp>

#include "support/reference.hpp"
#include "support/scalars.hpp"
#include "support/user_classes.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;
namespace ref = tenex_test::reference;

template <class T>
Tensor<T> random_tensor(const Shape& shape, std::uint64_t seed) {
  ref::Random rng(seed);
  std::vector<T> values(shape.size());
  for (T& v : values) v = static_cast<T>(rng.uniform());
  return Tensor<T>(shape, std::move(values));
}

/// Sets TENEX_PLAN_CACHE for its lifetime (unset again after).
struct PlanCacheSwitch {
  explicit PlanCacheSwitch(bool on) {
    if (on) {
      ::unsetenv("TENEX_PLAN_CACHE");
    } else {
      ::setenv("TENEX_PLAN_CACHE", "0", 1);
    }
  }
  ~PlanCacheSwitch() { ::unsetenv("TENEX_PLAN_CACHE"); }
  PlanCacheSwitch(const PlanCacheSwitch&) = delete;
  PlanCacheSwitch& operator=(const PlanCacheSwitch&) = delete;
};

/// What a program computed: every tensor it returns, flattened, in order.
template <class T>
using Program = std::function<std::vector<Tensor<T>>()>;

template <class T>
std::vector<std::vector<T>> values_of(const std::vector<Tensor<T>>& tensors) {
  std::vector<std::vector<T>> out;
  for (const Tensor<T>& t : tensors) out.push_back(t.to_vector());
  return out;
}

/// Runs `program` with the cache off, then twice with it on (the second run reuses what
/// the first cached), and checks the three agree exactly and that the cache was used.
template <class T>
void check_same_with_and_without_cache(const Program<T>& program, bool expect_reuse = true) {
  std::vector<std::vector<T>> off, on_first, on_again;
  {
    PlanCacheSwitch cache(false);
    off = values_of(program());
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
  }
  {
    PlanCacheSwitch cache(true);
    on_first = values_of(program());
    on_again = values_of(program());
    if (expect_reuse) CHECK(tenex::last_run_stats().plan_reused);
  }
  REQUIRE(off.size() == on_first.size());
  for (std::size_t i = 0; i < off.size(); ++i) {
    CAPTURE(i);
    CHECK(off[i] == on_first[i]);
    CHECK(off[i] == on_again[i]);
  }
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("plan cache: a repeated statement reuses its plan", T, plan_cache_reuse) {
  auto a = random_tensor<T>({2, 2}, 1), b = random_tensor<T>({2, 2}, 2);
  Tensor<T> c;
  PlanCacheSwitch cache(true);
  c("i,j") = a("i,k") * b("k,j");
  c("i,j") = a("i,k") * b("k,j");
  CHECK(tenex::last_run_stats().plan_reused);
  const std::vector<T> first = c.to_vector();
  // Other tensors of the same shapes: the same plan, their own values.
  auto x = random_tensor<T>({2, 2}, 3), y = random_tensor<T>({2, 2}, 4);
  c("i,j") = x("i,k") * y("k,j");
  CHECK(tenex::last_run_stats().plan_reused);
  const std::vector<T> xv = x.to_vector(), yv = y.to_vector(), cv = c.to_vector();
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 2; ++j) {
      const T expected = xv[i * 2] * yv[j] + xv[i * 2 + 1] * yv[2 + j];
      CHECK(std::abs(cv[i * 2 + j] - expected) <= 1e-6 * (1 + std::abs(expected)));
    }
  }
  // Another extent, labels or element-wise kind is another plan.
  auto big = random_tensor<T>({3, 2}, 5);
  c("i,j") = big("i,k") * b("k,j");
  CHECK_FALSE(tenex::last_run_stats().plan_reused);
  c("j,i") = a("i,k") * b("k,j");
  CHECK_FALSE(tenex::last_run_stats().plan_reused);
  // (13 x 11: a shape no other test subtracts, so the cache cannot hold it from an earlier test
  // of this process.)
  auto p = random_tensor<T>({13, 11}, 6), q = random_tensor<T>({13, 11}, 7);
  c("i,j") = p("i,j") + q("i,j");
  c("i,j") = p("i,j") - q("i,j");
  CHECK_FALSE(tenex::last_run_stats().plan_reused);
  // Off: never reused.
  {
    PlanCacheSwitch off(false);
    c("i,j") = a("i,k") * b("k,j");
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
  }
  (void)first;
}
TEST_CASE_TEMPLATE_APPLY(plan_cache_reuse, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("plan cache: results equal a fresh build while extents and labels change", T,
                          plan_cache_extents) {
  check_same_with_and_without_cache<T>([] {
    std::vector<Tensor<T>> out;
    for (std::size_t n : {2, 3, 2, 4, 3}) {
      auto a = random_tensor<T>({n, n + 1}, n), b = random_tensor<T>({n + 1, n}, 10 + n);
      Tensor<T> c, d, e;
      c("i,j") = a("i,k") * b("k,j");
      d("j,i") = a("i,k") * b("k,j");
      e("k,l") = a("i,k") * b("l,i");
      out.push_back(c);
      out.push_back(d);
      out.push_back(e);
    }
    return out;
  });
}
TEST_CASE_TEMPLATE_APPLY(plan_cache_extents, tenex_test::Scalars);

TEST_CASE("plan cache: label names of every length are part of the key") {
  // The key writes a label of up to 7 characters as one word and a longer one as its length
  // and bytes: labels that differ only at the end, or across that boundary, are other sets.
  // Here the second statement of each pair sums its two labels apart (an outer product of
  // sums), the first contracts them: a plan taken for the other would give the wrong value.
  auto a = random_tensor<double>({2, 3}, 1), b = random_tensor<double>({3, 2}, 2);
  const std::vector<double> av = a.to_vector(), bv = b.to_vector();
  auto product = [&](std::size_t i, std::size_t j) {
    double sum = 0;
    for (std::size_t k = 0; k < 3; ++k) sum += av[i * 3 + k] * bv[k * 2 + j];
    return sum;
  };
  auto sums = [&](std::size_t i, std::size_t j) {
    double sa = 0, sb = 0;
    for (std::size_t k = 0; k < 3; ++k) sa += av[i * 3 + k], sb += bv[k * 2 + j];
    return sa * sb;
  };
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"abcdefg", "abcdefh"}, {"abcdefg", "abcdefgh"}, {"abcdefgh", "abcdefgi"}, {"k_long_label", "k_long_labem"}};
  PlanCacheSwitch cache(true);
  Tensor<double> c;
  for (int round = 0; round < 2; ++round) {  // the second round reuses the plans of the first
    for (const auto& [x, y] : pairs) {
      CAPTURE(x);
      CAPTURE(y);
      c("i,j") = a("i," + x) * b(x + ",j");
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) CHECK(c.at(i, j) == doctest::Approx(product(i, j)));
      c("i,j") = a("i," + x) * b(y + ",j");
      for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) CHECK(c.at(i, j) == doctest::Approx(sums(i, j)));
    }
  }
  // Labels written with spaces are the same labels: the same set, the same plan.
  c("i,j") = a("i,k") * b("k,j");
  c("i , j") = a(" i,k ") * b("k,  j");
  CHECK(tenex::last_run_stats().plan_reused);
  for (std::size_t i = 0; i < 2; ++i)
    for (std::size_t j = 0; j < 2; ++j) CHECK(c.at(i, j) == doctest::Approx(product(i, j)));
}

TEST_CASE_TEMPLATE_DEFINE("plan cache: aliasing is part of the structure", T, plan_cache_aliasing) {
  check_same_with_and_without_cache<T>([] {
    std::vector<Tensor<T>> out;
    auto a = random_tensor<T>({3, 3}, 21), b = random_tensor<T>({3, 3}, 22);
    Tensor<T> c;
    for (int round = 0; round < 3; ++round) {
      c("i,j") = a("i,k") * b("k,j");  // two storages
      out.push_back(c);
      c("i,j") = a("i,k") * a("k,j");  // one storage read twice
      out.push_back(c);
      c("i,j") = a("i,j") + a("j,i");  // one storage, two labellings
      out.push_back(c);
      c("i,j") = a("i,j") + b("j,i");
      out.push_back(c);
      a("i,j") = a("j,i");  // the target is the operand's tensor
      out.push_back(a);
      b("i,j") = b("i,k") * b("k,j");  // in place, squared
      out.push_back(b);
      c("i,j") = c("i,j") + a("i,j");  // reads the target's previous value
      out.push_back(c);
      c("i,j") += b("i,j");
      out.push_back(c);
    }
    return out;
  });
}
TEST_CASE_TEMPLATE_APPLY(plan_cache_aliasing, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("plan cache: linked sets, pending results and shared intermediates", T, plan_cache_linked) {
  check_same_with_and_without_cache<T>([] {
    std::vector<Tensor<T>> out;
    auto a = random_tensor<T>({3, 4}, 31), b = random_tensor<T>({4, 3}, 32), s = random_tensor<T>({3, 3}, 33);
    for (int round = 0; round < 3; ++round) {
      Tensor<T> t, u, v, w;
      {
        auto shared = a("i,k") * b("k,j");  // one named intermediate, used twice
        t("i,j") = shared;
        u("i,j") = 2.0 * shared + s("j,i");
        v("i,j") = u("i,k") * t("k,j");  // reads pending results of the set
        w("i,j") = 0.5 * (v("i,j") - t("j,i"));
      }
      out.insert(out.end(), {t, u, v, w});
      // The same statements with one of them reading another tensor: another plan.
      {
        auto shared = a("i,k") * b("k,j");
        t("i,j") = shared;
        u("i,j") = 2.0 * shared + t("j,i");
      }
      out.insert(out.end(), {t, u});
    }
    return out;
  });
}
TEST_CASE_TEMPLATE_APPLY(plan_cache_linked, tenex_test::Scalars);

TEST_CASE_TEMPLATE_DEFINE("plan cache: scales, chains, decompositions and slices", T, plan_cache_kinds) {
  check_same_with_and_without_cache<T>([] {
    std::vector<Tensor<T>> out;
    auto a = random_tensor<T>({4, 4}, 41), b = random_tensor<T>({4, 4}, 42), c = random_tensor<T>({4, 4}, 43);
    Tensor<T> spd, l, x, y, z;
    Tensor<T> eye(Shape{4, 4}, std::vector<T>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
    for (double factor : {2.0, 3.0, 2.0}) {
      x("i,l") = factor * a("i,j") * b("j,k") * c("k,l");
      y("i,j") = a("i,j") / (factor * b("i,j") + c("i,j"));
      spd("i,j") = a("k,i") * a("k,j") + 4.0 * eye("i,j");
      l("i,j") = tenex::cholesky(spd("i,j"));
      z("i,j") = tenex::slice(a("i,j"), {1, 0}, {3, 2});
      out.insert(out.end(), {x, y, spd, l, z});
    }
    return out;
  });
}
TEST_CASE_TEMPLATE_APPLY(plan_cache_kinds, tenex_test::Scalars);

TEST_CASE("plan cache: sparse maps are part of the key, by content") {
  auto a = random_tensor<double>({4, 3}, 51), b = random_tensor<double>({3, 4}, 52);
  auto masked = [&](const tenex::SparseMap& map) {
    Tensor<double> c;
    {
      auto x = a("i,k") * b("k,j");
      x.set_sparse_map("i", "j", map);
      c("i,j") = x;
    }
    return c;
  };
  const tenex::SparseMap diagonal(
      std::map<std::size_t, std::vector<std::size_t>>{{0, {0}}, {1, {1}}, {2, {2}}, {3, {3}}});
  const tenex::SparseMap band(
      std::map<std::size_t, std::vector<std::size_t>>{{0, {0, 1}}, {1, {0, 1, 2}}, {2, {1, 2, 3}}, {3, {2, 3}}});
  check_same_with_and_without_cache<double>([&] {
    std::vector<Tensor<double>> out;
    for (int round = 0; round < 2; ++round) {
      out.push_back(masked(diagonal));
      out.push_back(masked(band));
      Tensor<double> plain;
      plain("i,j") = a("i,k") * b("k,j");
      out.push_back(plain);
    }
    return out;
  });
  PlanCacheSwitch cache(true);
  const Tensor<double> d = masked(diagonal);
  const Tensor<double> again = masked(tenex::SparseMap(diagonal));  // another object, same content
  CHECK(tenex::last_run_stats().plan_reused);
  CHECK(d.to_vector() == again.to_vector());
  CHECK(d.at(0, 1) == 0.0);
  CHECK(masked(band).at(0, 1) != 0.0);
}

TEST_CASE("plan cache: errors are the same with and without it") {
  auto spd = random_tensor<double>({3, 3}, 61);
  Tensor<double> bad(Shape{3, 3}, std::vector<double>{1, 0, 0, 0, -1, 0, 0, 0, 1});  // not positive definite
  for (bool on : {false, true, true}) {
    PlanCacheSwitch cache(on);
    Tensor<double> l;
    l("i,j") = tenex::cholesky(bad("i,j"));
    CHECK_THROWS_AS(l.to_vector(), tenex::NumericalError);
  }
}

TEST_CASE("plan cache: threads share it") {
  PlanCacheSwitch cache(true);
  auto a = random_tensor<double>({5, 5}, 71), b = random_tensor<double>({5, 5}, 72);
  Tensor<double> expected;
  {
    PlanCacheSwitch off(false);
    expected("i,j") = a("i,k") * b("k,j") + a("j,i");
  }
  const std::vector<double> want = expected.to_vector();
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int n = 0; n < 200; ++n) {
        Tensor<double> c;
        c("i,j") = a("i,k") * b("k,j") + a("j,i");
        if (c.to_vector() != want) ++bad[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int count : bad) CHECK(count == 0);
}

TEST_CASE("plan cache: more shapes than it holds") {
  // Past its capacity the least recently used plans go; every result stays right.
  PlanCacheSwitch cache(true);
  for (int round = 0; round < 2; ++round) {
    for (std::size_t n = 1; n <= 300; n += 1) {
      auto a = random_tensor<double>({1, n}, n), b = random_tensor<double>({n, 1}, n + 1000);
      Tensor<double> c;
      c("i,j") = a("i,k") * b("k,j");
      const std::vector<double> av = a.to_vector(), bv = b.to_vector();
      double expected = 0;
      for (std::size_t k = 0; k < n; ++k) expected += av[k] * bv[k];
      const double got = c.at(0, 0);
      if (std::abs(got - expected) > 1e-12 * (1 + std::abs(expected))) FAIL_CHECK("n = " << n);
    }
  }
}

TEST_CASE("plan cache: a user class's own lowering is not cached, and stays right") {
  PlanCacheSwitch cache(true);
  auto a = random_tensor<double>({2, 3}, 81);
  const std::vector<double> av = a.to_vector();
  for (int round = 0; round < 3; ++round) {
    Tensor<double> z;
    z("i,j") = Twice<Tensor<double>>(a("i,j"));
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
    const std::vector<double> zv = z.to_vector();
    for (std::size_t x = 0; x < av.size(); ++x) CHECK(zv[x] == 2.0 * av[x]);
  }
}

TEST_CASE("plan cache: every set is dumped while TENEX_DUMP_GRAPH is set") {
  PlanCacheSwitch cache(true);
  const std::string dir = "plan_cache_dump_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto a = random_tensor<double>({2, 2}, 91), b = random_tensor<double>({2, 2}, 92);
  Tensor<double> c;
  c("i,j") = a("i,k") * b("k,j");  // cached before dumping starts
  ::setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1);
  for (int n = 0; n < 3; ++n) {
    c("i,j") = a("i,k") * b("k,j");
    CHECK_FALSE(tenex::last_run_stats().plan_reused);
  }
  ::unsetenv("TENEX_DUMP_GRAPH");
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.path().extension() == ".dot";
  CHECK(files == 3);
  std::filesystem::remove_all(dir);
  c("i,j") = a("i,k") * b("k,j");
  CHECK(tenex::last_run_stats().plan_reused);
}
