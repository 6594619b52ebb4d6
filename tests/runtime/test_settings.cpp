// The settings module (src/tenex/settings.hpp, src/tenex/runtime/settings.cpp): every TENEX_*
// variable, read at each call, unset as null, an empty value as "", the test hooks read in this
// (test) build; the set's one-pass read agrees with getenv.
#include <doctest/doctest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "tenex/settings.hpp"

namespace {

using tenex::detail::Setting;
using tenex::detail::setting;

/// Sets (or, for null, unsets) a variable for one scope and restores what it was.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedVariable() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace

TEST_CASE("settings: one entry per setting, in the enum's order, each name TENEX_ and unique") {
  const auto table = tenex::detail::settings_table();
  REQUIRE(table.size() == static_cast<std::size_t>(Setting::dist_force_syevr) + 1);
  std::set<std::string_view> names;
  for (std::size_t k = 0; k < table.size(); ++k) {
    CHECK(static_cast<std::size_t>(table[k].setting) == k);
    CHECK(table[k].name.substr(0, 6) == "TENEX_");
    CHECK(!table[k].meaning.empty());
    CHECK(names.insert(table[k].name).second);
    CHECK(&tenex::detail::setting_info(table[k].setting) == &table[k]);
  }
  CHECK(tenex::detail::setting_info(Setting::dist_force_syevr).test_hook);
  CHECK_FALSE(tenex::detail::setting_info(Setting::simd).test_hook);
}

TEST_CASE("settings: read at each call; unset is null, an empty value is empty") {
  {
    ScopedVariable unset("TENEX_ORDER", nullptr);
    CHECK(setting(Setting::order) == nullptr);
  }
  {
    ScopedVariable empty("TENEX_ORDER", "");
    REQUIRE(setting(Setting::order) != nullptr);
    CHECK(std::string(setting(Setting::order)).empty());
  }
  ScopedVariable greedy("TENEX_ORDER", "greedy");
  CHECK(std::string(setting(Setting::order)) == "greedy");
  setenv("TENEX_ORDER", "dp", 1);
  CHECK(std::string(setting(Setting::order)) == "dp");
}

TEST_CASE("settings: the test hooks are read in a test build") {
  // This suite is built with TENEX_TEST_HOOKS (tests/dist/CMakeLists.txt requires it).
  REQUIRE(tenex::detail::test_hooks_enabled());
  ScopedVariable hook("TENEX_DIST_FORCE_SYEVR", "1");
  REQUIRE(setting(Setting::dist_force_syevr) != nullptr);
  CHECK(std::string(setting(Setting::dist_force_syevr)) == "1");
}

TEST_CASE("settings: a set's one-pass read agrees with getenv, unset passes as null") {
  ScopedVariable passes("TENEX_PASSES", nullptr), cache("TENEX_PLAN_CACHE", "0"), order("TENEX_ORDER", "hyper"),
      budget("TENEX_ORDER_BUDGET", "0.5"), limit("TENEX_MEMORY_LIMIT", "2M"), backend("TENEX_BACKEND", "cpu"),
      dump("TENEX_DUMP_GRAPH", nullptr);
  tenex::detail::SetSettings read = tenex::detail::set_settings();
  CHECK(read.passes == nullptr);
  CHECK_FALSE(read.plan_cache);
  CHECK(read.order == "hyper");
  CHECK(read.order_budget == "0.5");
  REQUIRE(read.memory_limit != nullptr);
  CHECK(std::string(read.memory_limit) == "2M");
  REQUIRE(read.backend != nullptr);
  CHECK(std::string(read.backend) == "cpu");
  CHECK(read.dump_graph.empty());
  {
    ScopedVariable none("TENEX_PASSES", "");
    read = tenex::detail::set_settings();
    REQUIRE(read.passes != nullptr);  // set, and empty: not the same as unset
    CHECK(std::string(read.passes).empty());
  }
  // A name that only starts like a setting is not that setting.
  ScopedVariable unset_cache("TENEX_PLAN_CACHE", nullptr), longer("TENEX_PLAN_CACHE_X", "0");
  CHECK(tenex::detail::set_settings().plan_cache);
}
