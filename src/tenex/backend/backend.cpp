#include "tenex/backend/backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tenex/backend/plugins.hpp"
#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/backend_choice.hpp"
#include "tenex/config.hpp"
#include "tenex/error.hpp"
#include "tenex/settings.hpp"

namespace tenex {

namespace {

// -1: not chosen by set_default_backend; the environment decides. kNamed: chosen_named.
constexpr int kNamed = 1000;
std::atomic<int> chosen_backend{-1};
std::atomic<const detail::BackendEntry*> chosen_named{nullptr};

/// The backend a TENEX_BACKEND value `text` (null: unset) names: a built-in kind, or a plugin,
/// loaded if need be. `valid` is false for a value that names neither; `why` then says why.
detail::BackendChoice from_value(const char* text, bool& valid, std::string& why) {
  valid = true;
  if (!text || !*text) return {};
  if (const auto kind = detail::backend_kind_of(text)) return {*kind, nullptr};
  if (const detail::BackendEntry* entry = detail::find_or_load_backend(text)) return {BackendKind::automatic, entry};
  valid = false;
  why = detail::load_plugin(text);
  return {};
}

thread_local RunStats last_stats;

// 0: not set by set_memory_limit; TENEX_MEMORY_LIMIT decides.
std::atomic<std::size_t> chosen_memory_limit{0};

/// TENEX_MEMORY_LIMIT's value `text` (null: unset) in bytes: digits, then optionally K, M or
/// G (powers of 1024).
std::size_t memory_limit_from_value(const char* text) {
  if (!text || !*text) return 0;
  const std::string value = text;
  auto bad = [&](const std::string& why) {
    return BackendError("tenex: TENEX_MEMORY_LIMIT=" + value + " is not a number of bytes (" + why +
                        "); write it as bytes with an optional K, M or G suffix (TENEX_MEMORY_LIMIT=512M), "
                        "0 for no limit, or leave it unset");
  };
  std::size_t at = 0, bytes = 0;
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  while (at < value.size() && value[at] >= '0' && value[at] <= '9') {
    const auto digit = static_cast<std::size_t>(value[at] - '0');
    if (bytes > (max - digit) / 10) throw bad("too large");
    bytes = bytes * 10 + digit;
    ++at;
  }
  if (at == 0) throw bad("it does not start with a digit");
  std::size_t unit = 1;
  if (at + 1 == value.size()) {
    switch (value[at]) {
      case 'K':
      case 'k': unit = std::size_t{1} << 10; break;
      case 'M':
      case 'm': unit = std::size_t{1} << 20; break;
      case 'G':
      case 'g': unit = std::size_t{1} << 30; break;
      default: throw bad("unknown suffix \"" + value.substr(at) + "\"");
    }
  } else if (at != value.size()) {
    throw bad("unexpected \"" + value.substr(at) + "\" after the number");
  }
  if (bytes > max / unit) throw bad("too large");
  return bytes * unit;
}

struct Registry {
  std::mutex mutex;
  std::deque<detail::BackendEntry> entries;  // find_backend hands out pointers: never moved
};

/// An entry from `plugin`: its name the key, the kind of a built-in name, and the plugin
/// entry's name pointing at the entry's own copy.
void fill_entry(detail::BackendEntry& entry, const TenexBackendPlugin& plugin) {
  entry.name = plugin.name;
  entry.kind = detail::backend_kind_of(entry.name).value_or(BackendKind::automatic);
  entry.plugin = plugin;
  entry.plugin.name = entry.name.c_str();
}

/// The registry, made with the built-in CPU backend in it; the others are plugins, loaded
/// when a set asks for them (plugins.hpp).
Registry& registry() {
  static Registry* instance = [] {  // never destroyed: sets may run at exit
    auto* made = new Registry;
    fill_entry(made->entries.emplace_back(), detail::cpu_backend_plugin());
    return made;
  }();
  return *instance;
}

}  // namespace

void set_default_backend(BackendKind kind) {
  if (kind == BackendKind::cuda && !cuda_available()) {
    throw BackendError("tenex: set_default_backend(cuda): no CUDA backend is available (" +
                       detail::why_unavailable(BackendKind::cuda) +
                       "); use BackendKind::cpu or BackendKind::automatic");
  }
  if (kind == BackendKind::distributed) {
    const detail::BackendEntry* entry = detail::find_or_load_backend(kind);
    if (!entry || !detail::entry_available(*entry)) {
      throw BackendError("tenex: set_default_backend(distributed): " + detail::why_unavailable(kind) +
                         "; or use BackendKind::cpu");
    }
  }
  // automatic hands the choice back to TENEX_BACKEND (unset: automatic).
  chosen_backend.store(kind == BackendKind::automatic ? -1 : static_cast<int>(kind));
}

void set_default_backend(std::string_view name) {
  if (const auto kind = detail::backend_kind_of(name)) return set_default_backend(*kind);
  const detail::BackendEntry* entry = detail::find_or_load_backend(name);
  if (!entry) {
    throw BackendError("tenex: set_default_backend(\"" + std::string(name) +
                       "\") names no backend: " + detail::load_plugin(name));
  }
  if (!detail::entry_available(*entry)) {
    throw BackendError("tenex: set_default_backend(\"" + std::string(name) + "\"): the " + entry->name +
                       " backend's plugin is loaded, but it cannot run on this machine now");
  }
  chosen_named.store(entry);
  chosen_backend.store(kNamed);
}

BackendKind default_backend() {
  const int chosen = chosen_backend.load();
  if (chosen == kNamed) return BackendKind::automatic;
  if (chosen >= 0) return static_cast<BackendKind>(chosen);
  const char* text = detail::setting(detail::Setting::backend);
  if (!text) return BackendKind::automatic;
  return detail::backend_kind_of(text).value_or(BackendKind::automatic);
}

std::string default_backend_name() {
  const int chosen = chosen_backend.load();
  if (chosen == kNamed) return chosen_named.load()->name;
  if (chosen >= 0) return std::string(detail::backend_kind_name(static_cast<BackendKind>(chosen)));
  const char* text = detail::setting(detail::Setting::backend);
  return text && *text ? std::string(text) : std::string("auto");
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names = {"cpu"};
  if (TENEX_HAS_CUDA) names.emplace_back("cuda");
  if (TENEX_HAS_DIST) names.emplace_back("distributed");
  for (std::string& found : detail::plugin_names_found()) {
    if (std::find(names.begin(), names.end(), found) == names.end()) names.push_back(std::move(found));
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const detail::BackendEntry& e : r.entries) {
    if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
  }
  return names;
}

bool cuda_available() {
  // The driver is asked first: without a device the CUDA plugin (and CUDA's libraries) is
  // never loaded.
  const detail::BackendEntry* entry = detail::find_backend(BackendKind::cuda);
  if (!entry && detail::cuda_driver_has_device()) entry = detail::find_or_load_backend(BackendKind::cuda);
  return entry && detail::entry_available(*entry);
}

RunStats last_run_stats() { return last_stats; }

void set_memory_limit(std::size_t bytes) { chosen_memory_limit.store(bytes); }

namespace detail {

void set_last_run_stats(const RunStats& stats) { last_stats = stats; }

std::size_t memory_limit() { return memory_limit(setting(Setting::memory_limit)); }

std::size_t memory_limit(const char* value_of_variable) {
  const std::size_t chosen = chosen_memory_limit.load();
  return chosen != 0 ? chosen : memory_limit_from_value(value_of_variable);
}

std::optional<BackendChoice> chosen_default_backend() {
  const int chosen = chosen_backend.load();
  if (chosen < 0) return std::nullopt;
  if (chosen == kNamed) return BackendChoice{BackendKind::automatic, chosen_named.load()};
  return BackendChoice{static_cast<BackendKind>(chosen), nullptr};
}

BackendChoice environment_backend(const char* value_of_variable) {
  bool valid = true;
  std::string why;
  return from_value(value_of_variable, valid, why);
}

std::string_view backend_kind_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::automatic: return "auto";
    case BackendKind::cpu: return "cpu";
    case BackendKind::cuda: return "cuda";
    case BackendKind::distributed: return "distributed";
  }
  return "auto";
}

std::optional<BackendKind> backend_kind_of(std::string_view name) {
  if (name == "cpu") return BackendKind::cpu;
  if (name == "cuda") return BackendKind::cuda;
  if (name == "distributed") return BackendKind::distributed;
  if (name == "auto" || name == "automatic") return BackendKind::automatic;
  return std::nullopt;
}

std::string check_plugin_entry(const TenexBackendPlugin& plugin, std::string_view file) {
  const std::string who = "tenex: the backend plugin " + std::string(file);
  if (plugin.abi_version != TENEX_BACKEND_ABI_VERSION) {
    return who + " was built for backend ABI version " + std::to_string(plugin.abi_version) +
           ", and this libtenex " TENEX_VERSION_STRING " speaks version " + std::to_string(TENEX_BACKEND_ABI_VERSION) +
           "; rebuild the plugin against this tenex's headers";
  }
  const std::string version = plugin.tenex_version ? plugin.tenex_version : "(none)";
  if (version.substr(0, version.rfind('.')) !=
      std::string_view(TENEX_VERSION_STRING).substr(0, std::string_view(TENEX_VERSION_STRING).rfind('.'))) {
    return who + " was built against tenex " + version +
           ", and this libtenex is " TENEX_VERSION_STRING
           " (a plugin runs with the minor version it was built for); rebuild it against this tenex's headers";
  }
  if (plugin.op_kinds != plugin::kOpKinds) {
    return who + " was built for an op table of " + std::to_string(plugin.op_kinds) + " kinds, and this libtenex has " +
           std::to_string(plugin::kOpKinds) + "; rebuild it against this tenex's headers";
  }
  const std::string_view name = plugin.name ? plugin.name : "";
  if (!valid_backend_name(name))
    return who + " names itself \"" + std::string(name) + "\", which is not a backend name ([a-z0-9_]+)";
  if (name == "auto" || name == "automatic")
    return who + " names itself \"" + std::string(name) + "\", a reserved name";
  if (!plugin.create || (plugin.element_types & TENEX_ELEMENT_ALL) == 0) {
    return who + " (" + std::string(name) + ") has no create function or no element type";
  }
  return {};
}

void register_backend(const TenexBackendPlugin& plugin) {
  if (std::string why = check_plugin_entry(plugin, plugin.name ? plugin.name : "(unnamed)"); !why.empty()) {
    throw BackendError(why);
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (BackendEntry& e : r.entries) {
    if (e.name == plugin.name) {
      fill_entry(e, plugin);
      return;
    }
  }
  fill_entry(r.entries.emplace_back(), plugin);
}

const BackendEntry* find_backend(std::string_view name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const BackendEntry& e : r.entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

const BackendEntry* find_backend(BackendKind kind) {
  // Once found, a built-in kind's entry is kept: entries never move nor go (a registration
  // replaces an entry's contents in place), and every set asks for the CPU's.
  static std::atomic<const BackendEntry*> found[4] = {};
  const auto at = static_cast<std::size_t>(kind);
  if (at >= 4) return nullptr;
  if (const BackendEntry* known = found[at].load(std::memory_order_acquire)) return known;
  const BackendEntry* entry = find_backend(backend_kind_name(kind));
  if (entry) found[at].store(entry, std::memory_order_release);
  return entry;
}

bool entry_available(const BackendEntry& entry) { return !entry.plugin.available || entry.plugin.available() != 0; }

template <class T>
std::unique_ptr<Backend<T>> make_backend(const BackendEntry& entry) {
  void* made = has_element_type<T>(entry) ? entry.plugin.create(plugin::element_bit<T>()) : nullptr;
  if (!made) {
    throw BackendError("tenex: the " + entry.name +
                       " backend made no backend for this element type (its plugin's create "
                       "returned null)");
  }
  return std::unique_ptr<Backend<T>>(static_cast<Backend<T>*>(made));
}

void check_backend_environment() { check_backend_environment(setting(Setting::backend)); }

void check_backend_environment(const char* value_of_variable) {
  if (chosen_backend.load() >= 0) return;
  bool valid = true;
  std::string why;
  from_value(value_of_variable, valid, why);
  if (!valid) {
    throw BackendError(
        "tenex: TENEX_BACKEND=" + std::string(value_of_variable) +
        " names no backend; use TENEX_BACKEND=cpu, TENEX_BACKEND=cuda or TENEX_BACKEND=auto (or leave it "
        "unset), or the name of a backend plugin (" +
        why + ")");
  }
}

namespace {

// Set when the thread's backends are destroyed: a set run by a later thread_local
// destructor makes its own.
thread_local bool thread_backends_gone = false;

template <class T>
struct ThreadBackends {
  struct Made {
    const BackendEntry* entry;
    void* (*create)(std::uint32_t);  // the factory that made it (an entry can be replaced)
    std::unique_ptr<Backend<T>> backend;
  };
  std::vector<Made> made;
  ~ThreadBackends() { thread_backends_gone = true; }
};

}  // namespace

template <class T>
Backend<T>& thread_backend(const BackendEntry& entry, std::unique_ptr<Backend<T>>& made) {
  const auto factory = entry.plugin.create;
  if (thread_backends_gone) {
    made = make_backend<T>(entry);
    return *made;
  }
  thread_local ThreadBackends<T> backends;
  for (auto& m : backends.made) {
    if (m.entry == &entry && m.create == factory) return *m.backend;
  }
  std::unique_ptr<Backend<T>> backend = make_backend<T>(entry);
  Backend<T>& result = *backend;
  backends.made.push_back({&entry, factory, std::move(backend)});
  return result;
}

#define TENEX_INSTANTIATE_THREAD_BACKEND(T)                                                  \
  template Backend<T>& thread_backend<T>(const BackendEntry&, std::unique_ptr<Backend<T>>&); \
  template std::unique_ptr<Backend<T>> make_backend<T>(const BackendEntry&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_THREAD_BACKEND)
#undef TENEX_INSTANTIATE_THREAD_BACKEND

const BackendEntry* find_or_load_backend(std::string_view name) {
  if (const BackendEntry* entry = find_backend(name)) return entry;
  if (!load_plugin(name).empty()) return nullptr;
  return find_backend(name);
}

const BackendEntry* find_or_load_backend(BackendKind kind) {
  if (const BackendEntry* entry = find_backend(kind)) return entry;
  return find_or_load_backend(backend_kind_name(kind));
}

std::string why_unavailable(BackendKind kind) {
  const BackendEntry* entry = find_backend(kind);
  if (kind == BackendKind::cuda) {
    if (!TENEX_HAS_CUDA) return "this build has no CUDA backend (TENEX_HAS_CUDA=0)";
    if (!entry) return load_plugin(backend_kind_name(kind));
    return "no usable CUDA device was found (the CUDA plugin is loaded)";
  }
  if (kind == BackendKind::distributed) {
    if (!TENEX_HAS_DIST) {
      return "this build has no distributed backend (TENEX_HAS_DIST=0; configure with -DTENEX_DIST=ON and install "
             "ScaLAPACK and MPI)";
    }
    if (!entry) return load_plugin(backend_kind_name(kind));
    return "no tenex::dist::Context is alive; make one (on every rank) first";
  }
  return entry ? "it is available" : "no backend of this kind is registered";
}

const BackendEntry& choose_backend(BackendChoice choice) {
  if (!choice.named) return choose_backend(choice.kind);
  if (!entry_available(*choice.named)) {
    throw BackendError("tenex: this set asks for the " + choice.named->name +
                       " backend, but it cannot run on this machine now; use TENEX_BACKEND=cpu or auto");
  }
  return *choice.named;
}

const BackendEntry& choose_backend(BackendKind kind) {
  if (kind == BackendKind::automatic) {
    if (cuda_available()) return *find_backend(BackendKind::cuda);
    kind = BackendKind::cpu;
  }
  const BackendEntry* entry = find_or_load_backend(kind);
  if (kind == BackendKind::cuda && (!entry || !entry_available(*entry))) {
    throw BackendError("tenex: this set asks for the CUDA backend, but " + why_unavailable(kind) +
                       "; use TENEX_BACKEND=cpu or auto");
  }
  if (kind == BackendKind::distributed && (!entry || !entry_available(*entry))) {
    throw BackendError("tenex: this set asks for the distributed backend, but " + why_unavailable(kind) +
                       "; use TENEX_BACKEND=cpu or auto");
  }
  if (!entry) throw InternalError("tenex: no backend is registered for this set");
  return *entry;
}

}  // namespace detail

}  // namespace tenex
