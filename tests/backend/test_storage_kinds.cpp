// Storage kinds (tenex/graph/storage_kind.hpp, docs/architecture.md "Storage kinds"): a node's
// layout, the kinds a backend declares in its capabilities, and the sparse pass storing
// blocks only for a backend that lists them (the reference plugin lists dense alone).
#include <doctest/doctest.h>

#include <cstddef>
#include <string>
#include <vector>

#include <tenex/backend/backend_interface.hpp>
#include <tenex/ir.hpp>
#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"

namespace {

using tenex::StorageKind;
using tenex::StorageKinds;

struct AutomaticAfter {
  ~AutomaticAfter() { tenex::set_default_backend(tenex::BackendKind::automatic); }
};

}  // namespace

TEST_CASE("storage kinds: names and sets") {
  CHECK(std::string(tenex::storage_kind_name(StorageKind::dense)) == "dense");
  CHECK(std::string(tenex::storage_kind_name(StorageKind::packed)) == "packed");
  CHECK(std::string(tenex::storage_kind_name(StorageKind::blocks)) == "blocks");
  const StorageKinds none;
  CHECK(none.text() == "none");
  CHECK_FALSE(none.contains(StorageKind::dense));
  StorageKinds some{StorageKind::blocks, StorageKind::dense};
  CHECK(some.contains(StorageKind::dense));
  CHECK(some.contains(StorageKind::blocks));
  CHECK_FALSE(some.contains(StorageKind::packed));
  CHECK(some.text() == "dense, blocks");
  CHECK(some.add(StorageKind::packed).text() == "dense, packed, blocks");
  CHECK(some == StorageKinds{StorageKind::dense, StorageKind::packed, StorageKind::blocks});
  // A backend that says nothing stores dense values only.
  CHECK(tenex::detail::BackendCapabilities{}.storage_kinds == StorageKinds{StorageKind::dense});
}

TEST_CASE("storage kinds: a node is dense unless a pass stores it otherwise") {
  tenex::Tensor<double> a({3, 4});
  tenex::OpGraph g;
  const tenex::NodeId in = g.add_input(a, "i,j");
  const tenex::NodeId s = g.add(tenex::ScaleParams{2.0}, {in});
  for (tenex::NodeId id : {in, s}) {
    CHECK(g.node(id).layout == StorageKind::dense);
    CHECK_FALSE(g.node(id).blocks());
    CHECK(g.node(id).elements == 12);
  }
  g.node(s).layout = StorageKind::blocks;
  CHECK(g.node(s).blocks());
  CHECK(g.to_dot().find("digraph") != std::string::npos);
}

TEST_CASE("storage kinds: a backend without blocks runs sparse maps dense and masked, equal to the CPU's blocks") {
  const EnvironmentScope passes("TENEX_PASSES", "all");
  const EnvironmentScope path("TENEX_PLUGIN_PATH", TENEX_TEST_PLUGIN_DIR);
  const AutomaticAfter after;
  const std::size_t n = 24;
  tenex::Tensor<double> a({n, n}), b({n, n});
  tenex::fill_random(a, 5);
  tenex::fill_random(b, 6);
  tenex::SparseMap ik, ij;  // each i pairs with two k and two j
  for (std::size_t i = 0; i < n; ++i) {
    ik.insert({i}, {{i}, {(i + 3) % n}});
    ij.insert({i}, {{(i + 1) % n}, {(i + 5) % n}});
  }
  const auto run = [&](const std::string& backend) {
    tenex::set_default_backend(backend);
    tenex::Tensor<double> c;
    {
      auto aik = a("i,k");
      aik.set_sparse_map("i", "k", ik);
      auto x = aik * b("k,j");
      x.set_sparse_map("i", "j", ij);
      c("i,j") = x;
    }
    c.wait();
    return std::pair<std::vector<double>, std::string>(c.to_vector(), tenex::explain());
  };
  const auto [on_cpu, cpu_plan] = run("cpu");
  CHECK_MESSAGE(cpu_plan.find("evaluated on their allowed elements only") != std::string::npos, cpu_plan);
  const auto [on_naive, naive_plan] = run("naive");
  CHECK_MESSAGE(naive_plan.find("dense and masked") != std::string::npos, naive_plan);
  CHECK_MESSAGE(naive_plan.find("storage kinds: dense") != std::string::npos, naive_plan);
  REQUIRE(on_cpu.size() == on_naive.size());
  for (std::size_t e = 0; e < on_cpu.size(); ++e) CHECK(on_naive[e] == doctest::Approx(on_cpu[e]).epsilon(1e-12));
  // Against loops: c(i,j) = sum over allowed k of a(i,k) b(k,j), at the allowed (i, j) only.
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      const bool allowed = j == (i + 1) % n || j == (i + 5) % n;
      const double want = allowed ? a.at(i, i) * b.at(i, j) + a.at(i, (i + 3) % n) * b.at((i + 3) % n, j) : 0.0;
      CHECK(on_cpu[i * n + j] == doctest::Approx(want).epsilon(1e-12));
    }
  }
}
