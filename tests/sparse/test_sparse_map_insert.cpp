// SparseMap::insert's strong guarantee: an insert that throws (a malformed entry, or ranks or
// lengths that clash with the map's) leaves the map exactly as it was, its ranks included, and
// the error says which lengths clash.
#include <doctest/doctest.h>

#include <cstddef>
#include <map>
#include <set>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using tenex::SparseMap;
using Index = SparseMap::Index;

// Everything a SparseMap lets one observe.
struct Observed {
  std::map<Index, std::set<Index>> entries;
  std::size_t source_rank;
  std::size_t target_rank;
  bool empty;
  std::size_t pair_count;
  bool operator==(const Observed&) const = default;
};

Observed observe(const SparseMap& m) {
  return {m.entries(), m.source_rank(), m.target_rank(), m.empty(), m.pair_count()};
}

// Inserts that must throw whatever the map holds: malformed on their own.
void check_malformed_inserts_change_nothing(SparseMap& m) {
  const Observed before = observe(m);
  CHECK_THROWS_AS(m.insert({}, {{0}}), tenex::Error);
  CHECK(observe(m) == before);
  CHECK_THROWS_AS(m.insert({0}, {{}}), tenex::Error);
  CHECK(observe(m) == before);
  CHECK_THROWS_AS(m.insert({0}, {{0}, {}}), tenex::Error);
  CHECK(observe(m) == before);
  CHECK_THROWS_AS(m.insert({0}, {{0}, {0, 1}}), tenex::Error);
  CHECK(observe(m) == before);
  CHECK_THROWS_AS(m.insert({0, 1}, {{0, 1}, {0}}), tenex::Error);
  CHECK(observe(m) == before);
  CHECK_THROWS_AS(m.insert({}, {}), tenex::Error);
  CHECK(observe(m) == before);
}

}  // namespace

TEST_CASE("sparse map insert: a throwing insert leaves an empty map empty, ranks 0") {
  SparseMap m;
  const Observed empty = observe(m);
  REQUIRE(empty.source_rank == 0);
  REQUIRE(empty.target_rank == 0);
  check_malformed_inserts_change_nothing(m);

  // Each failed insert on its own, checked for the ranks it used to leave behind.
  CHECK_THROWS_AS(m.insert({0, 1}, {{0}, {1, 2}}), tenex::Error);
  CHECK(m.source_rank() == 0);
  CHECK(m.target_rank() == 0);
  CHECK(m.empty());
  CHECK_THROWS_AS(m.insert({0, 1, 2}, {{}}), tenex::Error);
  CHECK(m.source_rank() == 0);
  CHECK(m.target_rank() == 0);
  CHECK(observe(m) == empty);

  // The map still takes any first insert, and its lengths are then those of that insert.
  m.insert({4, 5, 6}, {{1, 2}});
  CHECK(m.source_rank() == 3);
  CHECK(m.target_rank() == 2);
  CHECK(m.pair_count() == 1);
}

TEST_CASE("sparse map insert: a throwing insert leaves a non-empty map as it was") {
  SparseMap m;
  m.insert({0}, {{0}, {1}});
  m.insert({2}, {{3}});
  const Observed before = observe(m);
  check_malformed_inserts_change_nothing(m);

  // Lengths that differ from the map's.
  CHECK_THROWS_AS(m.insert({0, 1}, {{0}}), tenex::Error);
  CHECK_THROWS_AS(m.insert({1}, {{0, 1}}), tenex::Error);
  CHECK_THROWS_AS(m.insert({0}, {{2}, {0, 1}}), tenex::Error);  // a known source, one bad target
  CHECK_THROWS_AS(m.insert({5}, {{7}, {}}), tenex::Error);      // a new source, one bad target
  CHECK(observe(m) == before);
  CHECK_FALSE(m.allows({0}, {2}));
  CHECK_FALSE(m.allows({5}, {7}));

  m.insert({0}, {{2}});
  CHECK(m.pair_count() == before.pair_count + 1);
}

TEST_CASE("sparse map insert: a throwing insert keeps a target length not yet fixed unfixed") {
  // A source with no targets yet: the map has a source length but no target length.
  SparseMap m;
  m.insert({0}, {});
  REQUIRE(m.source_rank() == 1);
  REQUIRE(m.target_rank() == 0);
  const Observed before = observe(m);

  CHECK_THROWS_AS(m.insert({1}, {{0}, {0, 1}}), tenex::Error);
  CHECK(m.target_rank() == 0);
  CHECK_THROWS_AS(m.insert({1}, {{0, 1, 2}, {}}), tenex::Error);
  CHECK(m.target_rank() == 0);
  CHECK(observe(m) == before);

  // A target length the failed inserts did not fix is still free.
  m.insert({1}, {{0, 1}});
  CHECK(m.target_rank() == 2);
  CHECK(m.allows({1}, {0, 1}));
}

TEST_CASE("sparse map insert: the error says which lengths clash") {
  SparseMap m;
  CHECK_THROWS_WITH_AS(m.insert({0}, {{0}, {0, 1}}),
                       "tenex: SparseMap::insert: target tuples of lengths 1 and 2 in one insertion; all "
                       "target tuples of a map must have one length",
                       tenex::Error);
  m.insert({0}, {{0}});
  CHECK_THROWS_WITH_AS(m.insert({1}, {{0, 1}}),
                       "tenex: SparseMap::insert: target tuple of length 2 in a map whose target tuples have "
                       "length 1",
                       tenex::Error);
}
