// Every TENEX_* environment variable the library reads (tenex/settings.hpp). The table is what
// scripts/check-settings holds docs/performance.md's table against.
#include "tenex/settings.hpp"

#include <array>
#include <cstdlib>
#include <cstring>

#include <unistd.h>  // environ

namespace tenex::detail {

namespace {

constexpr std::array kSettings{
    SettingInfo{Setting::backend, "TENEX_BACKEND", "cpu|cuda|distributed|auto", "which backend runs new sets"},
    SettingInfo{Setting::cuda_streams, "TENEX_CUDA_STREAMS", "1 to 16 (default 4)", "CUDA streams per thread"},
    SettingInfo{Setting::dump_graph, "TENEX_DUMP_GRAPH", "DIR", "writes every set's graph; bypasses the plan cache"},
    SettingInfo{Setting::memory_limit, "TENEX_MEMORY_LIMIT", "bytes, 512M, 2G", "caps a set's intermediates"},
    SettingInfo{Setting::order, "TENEX_ORDER", "auto|greedy|dp|hyper", "the contraction-order method"},
    SettingInfo{Setting::order_budget, "TENEX_ORDER_BUDGET", "seconds", "the time the order search may take"},
    SettingInfo{Setting::passes, "TENEX_PASSES", "none|all|cse,order,...", "the graph passes that run"},
    SettingInfo{Setting::plan_cache, "TENEX_PLAN_CACHE", "0", "turns the plan cache off"},
    SettingInfo{Setting::plan_file, "TENEX_PLAN_FILE", "path", "plans kept from one run to the next"},
    SettingInfo{Setting::plan_search, "TENEX_PLAN_SEARCH", "amortized|estimate|measure", "how a kernel plan is chosen"},
    SettingInfo{Setting::plugin_path, "TENEX_PLUGIN_PATH", "folders",
                "where backend plugins are looked for (separated by :)"},
    SettingInfo{Setting::probe, "TENEX_PROBE", "0", "skips the machine probe"},
    SettingInfo{Setting::shared_machine, "TENEX_SHARED_MACHINE", "0", "keeps every thread on a busy machine"},
    SettingInfo{Setting::simd, "TENEX_SIMD", "avx512|avx2|sse4|neon|scalar", "caps the SIMD target of the kernels"},
    SettingInfo{Setting::dist_remap_round_bytes, "TENEX_DIST_REMAP_ROUND_BYTES", "bytes",
                "the distributed remap's round size", true},
    SettingInfo{Setting::dist_fail_remap_on_rank, "TENEX_DIST_FAIL_REMAP_ON_RANK", "rank",
                "that rank runs out of memory in a remap's last round", true},
    SettingInfo{Setting::dist_force_syevr, "TENEX_DIST_FORCE_SYEVR", "1",
                "eigen_solve takes p?syevr as if p?syevd's workspace query failed", true},
};

constexpr bool in_enum_order() {
  for (std::size_t k = 0; k < kSettings.size(); ++k) {
    if (static_cast<std::size_t>(kSettings[k].setting) != k) return false;
  }
  return true;
}
static_assert(in_enum_order(), "kSettings lists the settings in the enum's order");

#ifdef TENEX_TEST_HOOKS
constexpr bool kTestHooks = true;
#else
constexpr bool kTestHooks = false;
#endif

}  // namespace

std::span<const SettingInfo> settings_table() noexcept { return kSettings; }

const SettingInfo& setting_info(Setting setting) noexcept { return kSettings[static_cast<std::size_t>(setting)]; }

bool test_hooks_enabled() noexcept { return kTestHooks; }

const char* setting(Setting setting) noexcept {
  const SettingInfo& info = setting_info(setting);
  if (info.test_hook && !kTestHooks) return nullptr;
  return std::getenv(info.name.data());  // the names are literals: null-terminated
}

SetSettings set_settings() noexcept {
  SetSettings out;
  constexpr std::string_view prefix = "TENEX_";
  std::array<bool, 7> seen{};
  for (char** entry = environ; entry && *entry; ++entry) {
    const char* text = *entry;
    if (text[0] != 'T' || std::strncmp(text, prefix.data(), prefix.size()) != 0) continue;
    const std::string_view item(text + prefix.size());
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view name = item.substr(0, equals), value = item.substr(equals + 1);
    // The first entry of a name counts, as for getenv; the values run to the entry's end, so
    // the pointers are null-terminated.
    auto first = [&](std::size_t k) { return !seen[k] && (seen[k] = true); };
    if (name == "PLAN_CACHE" && first(0)) {
      out.plan_cache = value != "0";
    } else if (name == "PASSES" && first(1)) {
      out.passes = value.data();
    } else if (name == "DUMP_GRAPH" && first(2)) {
      out.dump_graph = value;
    } else if (name == "BACKEND" && first(3)) {
      out.backend = value.data();
    } else if (name == "MEMORY_LIMIT" && first(4)) {
      out.memory_limit = value.data();
    } else if (name == "ORDER" && first(5)) {
      out.order = value;
    } else if (name == "ORDER_BUDGET" && first(6)) {
      out.order_budget = value;
    }
  }
  return out;
}

}  // namespace tenex::detail
