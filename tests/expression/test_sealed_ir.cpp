// A plain #include <tenex/tenex.hpp> and nothing else: the graph is an opaque builder there
// (tenex/graph/graph_builder.hpp), the IR (OpNode, the op and function tables) is not
// included, and what API.md shows with the graph still compiles and runs: build a graph
// from an expression, print it, and a user class that overrides add_to_graph.
#include <doctest/doctest.h>

#include <cmath>
#include <complex>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include <tenex/tenex.hpp>

#ifdef TENEX_FOR_EACH_OP
#error "tenex/tenex.hpp includes the op table (tenex/graph/op_kind.hpp): the IR is not sealed"
#endif
#ifdef TENEX_FOR_EACH_FUNCTION
#error "tenex/tenex.hpp includes the function table (tenex/graph/functions.hpp): the IR is not sealed"
#endif

namespace {

template <class T>
concept Complete = requires {
  sizeof(T);
};

// Asked once in this file, before anything could complete them.
static_assert(!Complete<tenex::OpNode>, "tenex.hpp defines OpNode: the IR is not sealed");
static_assert(!Complete<tenex::SparseMapUse>, "tenex.hpp defines SparseMapUse: the IR is not sealed");
static_assert(std::is_same_v<tenex::GraphBuilder, tenex::OpGraph>);

template <class T>
class Thrice : public tenex::Nary<1, T> {
 public:
  explicit Thrice(const tenex::Expression<T>& x) : tenex::Nary<1, T>(x) {}
  std::string_view name() const override { return "Thrice"; }
  tenex::NodeId add_to_graph(tenex::GraphBuilder& graph) const override {
    return (3.0 * this->child(0)).add_to_graph(graph);
  }
};

}  // namespace

TEST_CASE("sealed IR: tenex.hpp alone builds a graph and prints it") {
  tenex::Tensor<double> a({2, 3}), b({3, 4});
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  tenex::OpGraph g;
  const tenex::NodeId id = (a("i,k") * b("k,j")).add_to_graph(g);
  CHECK(id < g.size());
  CHECK(g.size() >= 3);  // two inputs and the contraction
  const std::string dot = g.to_dot();
  CHECK(dot.find("digraph") != std::string::npos);
  CHECK(dot.find("contract") != std::string::npos);
  CHECK_NOTHROW(g.validate());
  // The inputs' tensors are bound in the graph's table, not in its nodes.
  const tenex::NodeId in = g.add_input(a, "i,k");
  CHECK(g.binding(in) != nullptr);
}

TEST_CASE("sealed IR: a user class overriding add_to_graph with tenex.hpp alone") {
  tenex::Tensor<double> x({5}), y, z;
  tenex::fill_random(x, 3);
  y("i") = Thrice<tenex::Tensor<double>>(x("i"));
  z("i") = tenex::exp(x("i")) + tenex::max(x("i"), 0.0 * x("i")) - 1.0;
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(y.at(i) == doctest::Approx(3.0 * x.at(i)));
    const double v = x.at(i);
    CHECK(z.at(i) == doctest::Approx(std::exp(v) + (v > 0 ? v : 0.0) - 1.0));
  }
  tenex::Tensor<std::complex<double>> c({2});
  c.at(0) = {3, 4};
  c.at(1) = {0, -2};
  tenex::Tensor<double> m;
  m("i") = tenex::abs(c("i"));
  CHECK(m.at(0) == doctest::Approx(5.0));
  CHECK(m.at(1) == doctest::Approx(2.0));
  tenex::Tensor<double> r;
  r("") = tenex::sum(tenex::map(x("i"), "twice", [](double v) { return 2 * v; }), "i");
  double total = 0;
  for (std::size_t i = 0; i < 5; ++i) total += 2 * x.at(i);
  CHECK(r.at() == doctest::Approx(total));
}
