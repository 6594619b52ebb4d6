#include "tenex/backend/backend.hpp"

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

// -1: not chosen by set_default_backend; the environment decides.
std::atomic<int> chosen_backend{-1};

/// The kind a TENEX_BACKEND value `text` (null: unset) names; `valid` is false for a value
/// that names no backend.
BackendKind from_value(const char* text, bool& valid, std::string& value) {
  valid = true;
  if (!text || !*text) return BackendKind::automatic;
  value = text;
  if (value == "cpu") return BackendKind::cpu;
  if (value == "cuda") return BackendKind::cuda;
  if (value == "distributed") return BackendKind::distributed;
  if (value == "auto") return BackendKind::automatic;
  valid = false;
  return BackendKind::automatic;
}

/// TENEX_BACKEND's kind; `valid` is false for a value that names no backend.
BackendKind from_environment(bool& valid, std::string& value) {
  return from_value(detail::setting(detail::Setting::backend), valid, value);
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

Registry& registry() {
  static Registry* instance = new Registry;  // never destroyed: sets may run at exit
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
    if (!entry || !entry->available || !entry->available()) {
      throw BackendError("tenex: set_default_backend(distributed): " + detail::why_unavailable(kind) +
                         "; or use BackendKind::cpu");
    }
  }
  // automatic hands the choice back to TENEX_BACKEND (unset: automatic).
  chosen_backend.store(kind == BackendKind::automatic ? -1 : static_cast<int>(kind));
}

BackendKind default_backend() {
  int chosen = chosen_backend.load();
  if (chosen >= 0) return static_cast<BackendKind>(chosen);
  bool valid = true;
  std::string value;
  return from_environment(valid, value);
}

bool cuda_available() {
  // The driver is asked first: without a device the CUDA plugin (and CUDA's libraries) is
  // never loaded.
  const detail::BackendEntry* entry = detail::find_backend(BackendKind::cuda);
  if (!entry && detail::cuda_driver_has_device()) entry = detail::find_or_load_backend(BackendKind::cuda);
  return entry && entry->available && entry->available();
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

std::optional<BackendKind> chosen_default_backend() {
  const int chosen = chosen_backend.load();
  if (chosen < 0) return std::nullopt;
  return static_cast<BackendKind>(chosen);
}

BackendKind environment_backend(const char* value_of_variable) {
  bool valid = true;
  std::string value;
  return from_value(value_of_variable, valid, value);
}

void register_backend(const BackendEntry& entry) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (BackendEntry& e : r.entries) {
    if (e.kind == entry.kind) {
      e = entry;
      return;
    }
  }
  r.entries.push_back(entry);
}

const BackendEntry* find_backend(BackendKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const BackendEntry& e : r.entries) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

void check_backend_environment() { check_backend_environment(setting(Setting::backend)); }

void check_backend_environment(const char* value_of_variable) {
  if (chosen_backend.load() >= 0) return;
  bool valid = true;
  std::string value;
  from_value(value_of_variable, valid, value);
  if (!valid) {
    throw BackendError("tenex: TENEX_BACKEND=" + value +
                       " names no backend; use TENEX_BACKEND=cpu, TENEX_BACKEND=cuda or TENEX_BACKEND=auto "
                       "(or leave it unset)");
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
    std::unique_ptr<Backend<T>> (*make)();  // the factory that made it (an entry can be replaced)
    std::unique_ptr<Backend<T>> backend;
  };
  std::vector<Made> made;
  ~ThreadBackends() { thread_backends_gone = true; }
};

}  // namespace

template <class T>
Backend<T>& thread_backend(const BackendEntry& entry, std::unique_ptr<Backend<T>>& made) {
  const auto factory = factory_of<T>(entry);
  if (thread_backends_gone) {
    made = factory();
    return *made;
  }
  thread_local ThreadBackends<T> backends;
  for (auto& m : backends.made) {
    if (m.entry == &entry && m.make == factory) return *m.backend;
  }
  std::unique_ptr<Backend<T>> backend = factory();
  Backend<T>& result = *backend;
  backends.made.push_back({&entry, factory, std::move(backend)});
  return result;
}

#define TENEX_INSTANTIATE_THREAD_BACKEND(T) \
  template Backend<T>& thread_backend<T>(const BackendEntry&, std::unique_ptr<Backend<T>>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_THREAD_BACKEND)
#undef TENEX_INSTANTIATE_THREAD_BACKEND

const BackendEntry* find_or_load_backend(BackendKind kind) {
  if (const BackendEntry* entry = find_backend(kind)) return entry;
  if (!load_plugin(kind).empty()) return nullptr;
  return find_backend(kind);
}

std::string why_unavailable(BackendKind kind) {
  const BackendEntry* entry = find_backend(kind);
  if (kind == BackendKind::cuda) {
    if (!TENEX_HAS_CUDA) return "this build has no CUDA backend (TENEX_HAS_CUDA=0)";
    if (!entry) return load_plugin(kind);
    return "no usable CUDA device was found (the CUDA plugin is loaded)";
  }
  if (kind == BackendKind::distributed) {
    if (!TENEX_HAS_DIST) {
      return "this build has no distributed backend (TENEX_HAS_DIST=0; configure with -DTENEX_DIST=ON and install "
             "ScaLAPACK and MPI)";
    }
    if (!entry) return load_plugin(kind);
    return "no tenex::dist::Context is alive; make one (on every rank) first";
  }
  return entry ? "it is available" : "no backend of this kind is registered";
}

const BackendEntry& choose_backend(BackendKind kind) {
  if (kind == BackendKind::automatic) {
    if (cuda_available()) return *find_backend(BackendKind::cuda);
    kind = BackendKind::cpu;
  }
  const BackendEntry* entry = find_or_load_backend(kind);
  if (kind == BackendKind::cuda && (!entry || !entry->available || !entry->available())) {
    throw BackendError("tenex: this set asks for the CUDA backend, but " + why_unavailable(kind) +
                       "; use TENEX_BACKEND=cpu or auto");
  }
  if (kind == BackendKind::distributed && (!entry || !entry->available || !entry->available())) {
    throw BackendError("tenex: this set asks for the distributed backend, but " + why_unavailable(kind) +
                       "; use TENEX_BACKEND=cpu or auto");
  }
  if (!entry) throw InternalError("tenex: no backend is registered for this set");
  return *entry;
}

}  // namespace detail

}  // namespace tenex
