// The TENEX_* environment variables, all of them: their names, what they take and what they do,
// read in one place (runtime/settings.cpp). A layer asks for a setting by its name in the enum;
// no other file calls getenv for a TENEX_* variable (scripts/check-settings checks it, and that
// docs/performance.md's table lists every user setting).
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "tenex/export.hpp"

namespace tenex::detail {

enum class Setting : unsigned char {
  backend,
  cuda_streams,
  dump_graph,
  memory_limit,
  order,
  order_budget,
  passes,
  plan_cache,
  plan_file,
  plan_search,
  plugin_path,
  probe,
  shared_machine,
  simd,
  // Test hooks: read only where the library was built with TENEX_TEST_HOOKS (the test builds).
  dist_remap_round_bytes,
  dist_fail_remap_on_rank,
  dist_force_syevr,
};

struct SettingInfo {
  Setting setting;
  std::string_view name;     // "TENEX_BACKEND"
  std::string_view values;   // what it takes, as docs/performance.md writes it
  std::string_view meaning;  // one line
  bool test_hook = false;    // read only in builds with TENEX_TEST_HOOKS
};

/// Every setting, in the enum's order.
TENEX_API std::span<const SettingInfo> settings_table() noexcept;
/// The entry of `setting`.
TENEX_API const SettingInfo& setting_info(Setting setting) noexcept;
/// The variable's value; null when it is unset (an empty value is returned as ""), and for a
/// test hook in a build without TENEX_TEST_HOOKS. Read at each call: a program that changes its
/// environment (setenv) changes what the next read sees.
TENEX_API const char* setting(Setting setting) noexcept;
/// Whether this build reads the test hooks.
TENEX_API bool test_hooks_enabled() noexcept;

/// The settings a set reads, taken in one pass over the environment (a tiny set pays for each
/// getenv); the strings point into the environment and are valid until it changes.
struct SetSettings {
  bool plan_cache = true;              // TENEX_PLAN_CACHE is not "0"
  const char* passes = nullptr;        // TENEX_PASSES; null when unset
  std::string_view dump_graph;         // TENEX_DUMP_GRAPH; empty when unset
  const char* backend = nullptr;       // TENEX_BACKEND; null when unset
  const char* memory_limit = nullptr;  // TENEX_MEMORY_LIMIT; null when unset
  std::string_view order;              // TENEX_ORDER and TENEX_ORDER_BUDGET (the order pass's
  std::string_view order_budget;       // search, docs/networks.md); empty when unset
};
TENEX_API SetSettings set_settings() noexcept;

}  // namespace tenex::detail
