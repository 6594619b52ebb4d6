// TENEX_DUMP_GRAPH: the pipeline writes each set's optimized graph into the folder it names,
// creating a missing one, and fails the set with a message naming it when it cannot.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <tenex/tenex.hpp>

namespace {

using tenex::Shape;
using tenex::Tensor;

}  // namespace

TEST_CASE("graph dump: TENEX_DUMP_GRAPH creates a missing folder, or says why it cannot") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("tenex-missing-" + std::to_string(::getpid())) / "deeper";
  fs::remove_all(dir.parent_path());
  Tensor<double> a(Shape{2}, {1, 2}), c;
  ::setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1);
  c("i") = 2.0 * a("i");
  ::unsetenv("TENEX_DUMP_GRAPH");
  CHECK(c.at(0) == 2.0);
  REQUIRE(fs::is_directory(dir));
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);
  // A file where the folder should be: the set fails with a message naming it.
  const fs::path file = dir.parent_path() / "a-file";
  std::ofstream(file) << "x";
  ::setenv("TENEX_DUMP_GRAPH", file.c_str(), 1);
  Tensor<double> d;
  d("i") = 2.0 * a("i");
  ::unsetenv("TENEX_DUMP_GRAPH");
  CHECK_THROWS_WITH_AS(d.wait(), doctest::Contains("cannot create the folder"), tenex::Error);
  fs::remove_all(dir.parent_path());
}
