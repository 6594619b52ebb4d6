// SparseMap: building a map, its queries and errors, and maps registered on linked sets
// (zeros exactly where the map excludes, the map shown in the operation graph).
#include <doctest/doctest.h>

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::SparseMap;
using tenex::Tensor;
using Index = SparseMap::Index;

Tensor<double> random_tensor(const Shape& shape, std::uint64_t seed) {
  Tensor<double> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

}  // namespace

TEST_CASE("sparse map: an empty map") {
  const SparseMap m;
  CHECK(m.empty());
  CHECK(m.pair_count() == 0);
  CHECK(m.source_rank() == 0);
  CHECK(m.target_rank() == 0);
  CHECK(m.entries().empty());
  CHECK_FALSE(m.allows({0}, {0}));
}

TEST_CASE("sparse map: insert, allows, entries and pair_count") {
  SparseMap L;
  L.insert({0}, {{0}, {1}});
  L.insert({1}, {{1}, {2}});
  CHECK_FALSE(L.empty());
  CHECK(L.source_rank() == 1);
  CHECK(L.target_rank() == 1);
  CHECK(L.pair_count() == 4);
  CHECK(L.allows({0}, {0}));
  CHECK(L.allows({0}, {1}));
  CHECK_FALSE(L.allows({0}, {2}));
  CHECK(L.allows({1}, {2}));
  CHECK_FALSE(L.allows({1}, {0}));
  CHECK_FALSE(L.allows({2}, {2}));  // a source not listed allows nothing
  const std::map<Index, std::set<Index>> expected{{{0}, {{0}, {1}}}, {{1}, {{1}, {2}}}};
  CHECK(L.entries() == expected);

  // Inserting again adds to the allowed set; a pair allowed twice counts once.
  L.insert({0}, {{1}, {5}});
  CHECK(L.pair_count() == 5);
  CHECK(L.allows({0}, {5}));
  CHECK(L.entries().at({0}) == std::set<Index>{{0}, {1}, {5}});
}

TEST_CASE("sparse map: the std::map constructor is one mode to one mode") {
  const SparseMap M(std::map<std::size_t, std::vector<std::size_t>>{{0, {0, 1}}, {1, {1, 2}}, {4, {3}}});
  CHECK(M.source_rank() == 1);
  CHECK(M.target_rank() == 1);
  CHECK(M.pair_count() == 5);
  CHECK(M.allows({0}, {1}));
  CHECK(M.allows({4}, {3}));
  CHECK_FALSE(M.allows({4}, {0}));
  CHECK_FALSE(M.allows({2}, {0}));
  SparseMap L;
  L.insert({0}, {{0}, {1}});
  L.insert({1}, {{1}, {2}});
  L.insert({4}, {{3}});
  CHECK(M.entries() == L.entries());
}

TEST_CASE("sparse map: tuples over several modes") {
  SparseMap P;
  P.insert({0, 1}, {{2}, {3}});
  P.insert({1, 0}, {{0}});
  CHECK(P.source_rank() == 2);
  CHECK(P.target_rank() == 1);
  CHECK(P.pair_count() == 3);
  CHECK(P.allows({0, 1}, {3}));
  CHECK_FALSE(P.allows({1, 0}, {3}));
  CHECK_FALSE(P.allows({0, 0}, {2}));

  SparseMap Q;
  Q.insert({2}, {{0, 1}, {1, 1}});
  CHECK(Q.source_rank() == 1);
  CHECK(Q.target_rank() == 2);
  CHECK(Q.allows({2}, {1, 1}));
  CHECK_FALSE(Q.allows({2}, {1, 0}));
}

TEST_CASE("sparse map: malformed tuples throw tenex::Error") {
  SparseMap L;
  CHECK_THROWS_AS(L.insert({}, {{0}}), tenex::Error);
  CHECK(L.empty());
  L.insert({0}, {{0}});
  // Tuple lengths must stay those of the first insertion.
  CHECK_THROWS_AS(L.insert({0, 1}, {{0}}), tenex::Error);
  CHECK_THROWS_AS(L.insert({1}, {{0, 1}}), tenex::Error);
  CHECK_THROWS_AS(L.insert({1}, {{0}, {0, 1}}), tenex::Error);
  CHECK_THROWS_AS(L.insert({1}, {{}}), tenex::Error);
  CHECK_THROWS_AS(L.insert({}, {{0}}), tenex::Error);
  // The failed insertions changed nothing.
  CHECK(L.pair_count() == 1);
  CHECK(L.source_rank() == 1);
  CHECK(L.target_rank() == 1);
  CHECK_FALSE(L.allows({1}, {0}));
  CHECK_NOTHROW(L.insert({1}, {{2}}));
  CHECK(L.pair_count() == 2);
}

TEST_CASE("sparse map: a map on a set zeroes exactly what it excludes") {
  const auto a = random_tensor({3, 4}, 11), b = random_tensor({3, 4}, 12);
  SparseMap L;
  L.insert({0}, {{0}, {1}});
  L.insert({1}, {{1}, {2}});
  L.insert({2}, {{3}});
  Tensor<double> c;
  {
    Tensor<double> a2 = a, b2 = b;
    auto x = a2("i,j");
    x.set_sparse_map("i", "j", L);
    c("i,j") = x + b2("i,j");
  }
  REQUIRE(c.shape() == Shape{3, 4});
  std::size_t kept = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      if (L.allows({i}, {j})) {
        ++kept;
        CHECK(c.at(i, j) == doctest::Approx(a.at(i, j) + b.at(i, j)).epsilon(1e-14));
        CHECK(c.at(i, j) != 0.0);
      } else {
        CHECK(c.at(i, j) == 0.0);
      }
    }
  }
  CHECK(kept == L.pair_count());

  // The same statement without the map is the plain sum everywhere.
  Tensor<double> d, a3 = a, b3 = b;
  d("i,j") = a3("i,j") + b3("i,j");
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) CHECK(d.at(i, j) == doctest::Approx(a.at(i, j) + b.at(i, j)));
  }
}

TEST_CASE("sparse map: a map from two modes to one") {
  Tensor<double> a = random_tensor({2, 3, 4}, 21), b = random_tensor({2, 3, 4}, 22);
  SparseMap M;
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) M.insert({i, j}, {{(i + j) % 4}, {3}});
  }
  REQUIRE(M.source_rank() == 2);
  Tensor<double> c;
  {
    auto x = a("i,j,k");
    x.set_sparse_map("i,j", "k", M);
    c("i,j,k") = x + b("i,j,k");
  }
  REQUIRE(c.shape() == Shape{2, 3, 4});
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 3; ++j) {
      for (std::size_t k = 0; k < 4; ++k) {
        CAPTURE(i);
        CAPTURE(j);
        CAPTURE(k);
        const bool allowed = k == (i + j) % 4 || k == 3;
        REQUIRE(M.allows({i, j}, {k}) == allowed);
        if (allowed) {
          CHECK(c.at(i, j, k) == doctest::Approx(a.at(i, j, k) + b.at(i, j, k)).epsilon(1e-14));
        } else {
          CHECK(c.at(i, j, k) == 0.0);
        }
        nonzero += c.at(i, j, k) != 0.0 ? 1 : 0;
      }
    }
  }
  CHECK(nonzero == M.pair_count());
}

TEST_CASE("sparse map: the operation graph shows a registered map") {
  Tensor<double> a = random_tensor({3, 4}, 31), b = random_tensor({4, 3}, 32);
  SparseMap L;
  L.insert({0}, {{0}, {1}});
  L.insert({1}, {{1}, {2}});
  tenex::OpGraph g;
  auto aij = a("i,j");
  aij.set_sparse_map("i", "j", L);
  const tenex::NodeId id = (aij + 2.0 * b("j,i")).add_to_graph(g);
  REQUIRE(g.sparse_maps().size() == 1);
  CHECK(g.sparse_maps()[0].source == std::vector<std::string>{"i"});
  CHECK(g.sparse_maps()[0].target == std::vector<std::string>{"j"});
  CHECK(g.sparse_maps()[0].map->pair_count() == 4);
  // The result carries both labels, so the map masks it.
  CHECK(g.node(id).sparse_maps == std::vector<std::size_t>{0});
  const std::string dot = g.to_dot();
  CHECK_MESSAGE(dot.find("sparse i -> j") != std::string::npos, dot);
  CHECK_MESSAGE(dot.find("(4 pairs)") != std::string::npos, dot);

  // Without a map the graph shows none.
  tenex::OpGraph plain;
  (void)(a("i,j") + 2.0 * b("j,i")).add_to_graph(plain);
  CHECK(plain.sparse_maps().empty());
  CHECK(plain.to_dot().find("sparse") == std::string::npos);
}

TEST_CASE("sparse map: a sparse map after an early read is refused") {
  Tensor<double> a(Shape{2, 2}, {1, 2, 3, 4}), c, d;
  tenex::SparseMap map;
  map.insert({0}, {{0}});
  map.insert({1}, {{1}});
  auto h = a("i,j");
  c("i,j") = h * 2.0;
  CHECK(c.at(0, 1) == 4.0);  // an early read runs what the set recorded so far
  CHECK_THROWS_WITH_AS(h.set_sparse_map("i", "j", map), doctest::Contains("already evaluated"), tenex::Error);
  d("i,j") = h * 1.0;
  CHECK(d.at(0, 1) == 2.0);
}
