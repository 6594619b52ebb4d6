// The public surface: no member a user calls names a detail:: type (handles, storage, target
// records, the distributed context stay the library's, reached through detail::Access), and
// the documented way to extend the DSL (API.md, "Extending the DSL") still compiles and runs.
#include <doctest/doctest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <tenex/detail/access.hpp>
#include <tenex/dist/context.hpp>
#include <tenex/ir.hpp>  // the IR: OpNode, the op and function tables
#include <tenex/tenex.hpp>

#include "support/user_classes.hpp"

namespace {

using tenex::Shape;
using tenex::Tensor;
using X = Tensor<double>;
using tenex::detail::Access;

// What user code may call, asked as a requires-expression: an inaccessible member is not
// satisfied, so each concept below says whether a user can write that call.
template <class E>
concept CallsHandle = requires(const E& e) {
  e.handle();
};
template <class E>
concept CallsLabels = requires(const E& e) {
  e.labels();
};
template <class U>
concept CallsStorage = requires(const U& t) {
  t.storage();
};
template <class U>
concept CallsSetStorage = requires(U& t, std::shared_ptr<tenex::detail::Storage<typename U::value_type>> s) {
  t.set_storage(s);
};
template <class U>
concept CallsShape = requires(const U& t) {
  t.shape();
};
template <class I>
concept CallsTargetRecord = requires(const I& i) {
  i.target_record();
};
template <class I>
concept CallsWrittenLabels = requires(const I& i) {
  i.written_labels();
};
template <class C>
concept CallsImpl = requires(const C& c) {
  c.impl();
};
template <class C>
concept CallsDescribe = requires(const C& c) {
  c.describe();
};

// Every library class whose constructor takes a handle: user code cannot call it.
template <class C>
constexpr bool made_from_handle = std::is_constructible_v<C, tenex::detail::Handle>;

X filled(Shape shape, std::uint64_t seed) {
  X t(std::move(shape));
  tenex::fill_random(t, seed);
  return t;
}

}  // namespace

TEST_CASE("public surface: an expression's handle is not callable from user code") {
  CHECK_FALSE(CallsHandle<tenex::Expression<X>>);
  CHECK_FALSE(CallsHandle<tenex::Indexed<X>>);
  CHECK_FALSE(CallsHandle<tenex::Addition<X>>);
  CHECK_FALSE(CallsHandle<tenex::Chip<X>>);
  CHECK_FALSE(CallsHandle<tenex::Operand<X>>);
  CHECK_FALSE(CallsHandle<Twice<X>>);
  // The same requires-expression is satisfied by a public member: the check can fail.
  CHECK(CallsLabels<tenex::Expression<X>>);
  CHECK(CallsLabels<tenex::Chip<X>>);
}

TEST_CASE("public surface: a tensor's storage is not callable from user code") {
  CHECK_FALSE(CallsStorage<X>);
  CHECK_FALSE(CallsStorage<Tensor<float>>);
  CHECK_FALSE(CallsSetStorage<X>);
  CHECK_FALSE(CallsSetStorage<Tensor<float>>);
  CHECK(CallsShape<X>);
}

TEST_CASE("public surface: an Indexed's target record and a Context's state are not callable") {
  CHECK_FALSE(CallsTargetRecord<tenex::Indexed<X>>);
  CHECK_FALSE(CallsTargetRecord<tenex::Indexed<Shape>>);
  CHECK(CallsWrittenLabels<tenex::Indexed<X>>);
  CHECK_FALSE(CallsImpl<tenex::dist::Context>);
  CHECK(CallsDescribe<tenex::dist::Context>);
}

TEST_CASE("public surface: the library's classes are not constructible from a handle") {
  CHECK_FALSE(made_from_handle<tenex::Operand<X>>);
  CHECK_FALSE(made_from_handle<tenex::Chip<X>>);
  CHECK_FALSE(made_from_handle<tenex::Slice<X>>);
  CHECK_FALSE(made_from_handle<tenex::Pow<X>>);
  CHECK_FALSE(made_from_handle<tenex::Inverse<X>>);
  CHECK_FALSE(made_from_handle<tenex::Solve<X>>);
  CHECK_FALSE(made_from_handle<tenex::CholeskyVectors<X>>);
  CHECK_FALSE(made_from_handle<tenex::EigenVectors<X>>);
  CHECK_FALSE(made_from_handle<tenex::EigenValues<X>>);
  CHECK_FALSE(made_from_handle<tenex::QRFactor<X>>);
  CHECK_FALSE(made_from_handle<tenex::SVDFactor<X>>);
  CHECK_FALSE(made_from_handle<tenex::Unary<X>>);
  CHECK_FALSE(made_from_handle<tenex::Chip<Tensor<float>>>);
  // They stay copyable values, as the functions return them.
  CHECK(std::is_copy_constructible_v<tenex::Chip<X>>);
  CHECK(std::is_copy_constructible_v<tenex::EigenValues<X>>);
}

TEST_CASE("public surface: the library reaches the internals through detail::Access") {
  X a = filled(Shape{4, 3}, 11);
  const auto row = tenex::chip(a("i,j"), "i", 2);
  const tenex::detail::Handle& handle = Access::handle(row);
  REQUIRE(handle.node != nullptr);
  // A copy of an expression is the same node; a class made over the handle is that node too.
  const auto copy = row;
  CHECK(Access::handle(copy).node == handle.node);
  const auto remade = Access::make<tenex::Chip<X>>(handle);
  CHECK(Access::handle(remade).node == handle.node);
  CHECK(remade.labels() == std::vector<std::string>{"j"});
  X r;
  r("j") = remade;
  for (std::size_t j = 0; j < 3; ++j) CHECK(r.at(j) == a.at(2, j));

  // The storage is the tensor's value: an input node of a graph holds it.
  tenex::OpGraph g;
  const tenex::NodeId in = g.add_input(a, "i,j");
  CHECK(g.binding(in) == Access::storage(a));
  CHECK(g.node(in).extents == std::vector<std::size_t>{4, 3});
}

TEST_CASE("public surface: the documented extension (API.md's Twice) compiles and runs") {
  X x = filled(Shape{5}, 3);
  X z;
  z("i") = Twice<X>(x("i"));
  REQUIRE(z.shape() == Shape{5});
  for (std::size_t i = 0; i < 5; ++i) CHECK(z.at(i) == 2.0 * x.at(i));

  // Inside a larger statement, reading a permuted operand.
  X a = filled(Shape{3, 4}, 5), w;
  w("j,i") = Twice<X>(a("i,j")) + a("i,j");
  REQUIRE(w.shape() == Shape{4, 3});
  for (std::size_t i = 0; i < 3; ++i) {
    for (std::size_t j = 0; j < 4; ++j) CHECK(w.at(j, i) == doctest::Approx(3.0 * a.at(i, j)).epsilon(1e-14));
  }

  // child(0) is the operand, an expression of the same linked set.
  const Twice<X> t(x("i"));
  CHECK(t.child(0).labels() == std::vector<std::string>{"i"});
  CHECK(t.name() == "Twice");
}
