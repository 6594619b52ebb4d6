// Backend plugins by name (tenex/backend/plugin.hpp): the reference backend of
// examples/backend_plugin and the entries the registry must refuse (tests/plugins/bad_entry.cpp),
// all in TENEX_TEST_PLUGIN_DIR, put on TENEX_PLUGIN_PATH. Each name is tried once per process,
// so each case uses its own names.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <tenex/tenex.hpp>

#include "support/environment_scope.hpp"

namespace {

using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;

bool listed(const std::string& name) {
  const std::vector<std::string> names = tenex::backend_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

struct AutomaticAfter {
  ~AutomaticAfter() { tenex::set_default_backend(BackendKind::automatic); }
};

}  // namespace

TEST_CASE("backend plugins: a plugin chosen by name runs the kinds it supports, the CPU the rest") {
  const EnvironmentScope path("TENEX_PLUGIN_PATH", "/nonexistent-folder:" TENEX_TEST_PLUGIN_DIR);
  const AutomaticAfter after;
  CHECK(listed("cpu"));
  CHECK(listed("naive"));  // found by its file name before it is loaded
  Tensor<double> a(Shape{3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  Tensor<double> b(Shape{4, 2}, {1, -1, 2, 0, 0, 3, -2, 1});
  Tensor<double> want;
  want("i,j") = -1.0 * a("i,k") * b("k,j");  // on the CPU
  tenex::set_default_backend("naive");
  CHECK(tenex::default_backend_name() == "naive");
  CHECK(tenex::default_backend() == BackendKind::automatic);  // no kind names a plugin
  Tensor<double> c, s;
  c("i,j") = a("i,k") * b("k,j") - 2.0 * a("i,k") * b("k,j");
  CHECK(c.to_vector() == want.to_vector());
  for (std::size_t i = 0; i < 3; ++i) {  // against loops
    for (std::size_t j = 0; j < 2; ++j) {
      double sum = 0;
      for (std::size_t k = 0; k < 4; ++k) sum -= a.at(i, k) * b.at(k, j);
      CHECK(c.at(i, j) == sum);
    }
  }
  const std::string ran = tenex::explain();
  CHECK_MESSAGE(ran.find("naive loops") != std::string::npos, ran);
  // A kind it declines runs on the CPU backend, and explain says so.
  s("i,j") = tenex::cholesky(b("k,i") * b("k,j"));
  s.wait();
  const std::string declined = tenex::explain();
  CHECK_MESSAGE(declined.find("ran on the cpu backend, not naive") != std::string::npos, declined);
  // explain(e) asks the backend that would run e.
  CHECK(tenex::explain(a("i,k") * b("k,j")).find("naive loops") != std::string::npos);
}

TEST_CASE("backend plugins: TENEX_BACKEND names a plugin too") {
  const EnvironmentScope path("TENEX_PLUGIN_PATH", TENEX_TEST_PLUGIN_DIR);
  Tensor<float> a(Shape{2, 2}, {1, 2, 3, 4}), c;
  {
    const EnvironmentScope backend("TENEX_BACKEND", "naive");
    CHECK(tenex::default_backend_name() == "naive");
    c("j,i") = a("i,j") + a("j,i");
  }
  CHECK(c.to_vector() == std::vector<float>{2, 5, 5, 8});
  CHECK(tenex::explain().find("naive loops") != std::string::npos);
}

TEST_CASE("backend plugins: a plugin the library cannot use is a clear error, and changes nothing") {
  const EnvironmentScope path("TENEX_PLUGIN_PATH", TENEX_TEST_PLUGIN_DIR);
  const AutomaticAfter after;
  tenex::set_default_backend(BackendKind::cpu);
  auto refused = [](const char* name, const char* why) {
    CAPTURE(name);
    CHECK_THROWS_WITH_AS(tenex::set_default_backend(name), doctest::Contains(why), tenex::BackendError);
    CHECK(tenex::default_backend_name() == "cpu");  // as it was
  };
  refused("bad1", "was built for backend ABI version 999");
  refused("bad2", "was built against tenex 0.0.1");
  refused("bad3", "op table of");
  refused("bad4", "holds the backend \"other\", not \"bad4\"");
  refused("bad5", "exports no tenex_backend_plugin_entry");
  refused("nosuch", "no plugin provides the nosuch backend (libtenex_backend_nosuch.so)");
  refused("nosuch", TENEX_TEST_PLUGIN_DIR "/libtenex_backend_nosuch.so: no such file");  // where it looked
  refused("Not-A-Name", "is not a backend name");
  // A set asking for one through TENEX_BACKEND fails with the same reason, its target untouched.
  tenex::set_default_backend(BackendKind::automatic);
  Tensor<double> a(Shape{2}, {1, 2}), c(Shape{2}, {7, 7});
  {
    const EnvironmentScope backend("TENEX_BACKEND", "bad1");
    c("i") = 2.0 * a("i");
  }
  CHECK_THROWS_WITH_AS(c.wait(), doctest::Contains("backend ABI version 999"), tenex::BackendError);
}
