#include "tenex/backend/backend.hpp"

#include <atomic>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "tenex/backend/registry.hpp"
#include "tenex/backend/run_stats.hpp"
#include "tenex/config.hpp"
#include "tenex/error.hpp"

namespace tenex {

namespace {

// -1: not chosen by set_default_backend; the environment decides.
std::atomic<int> chosen_backend{-1};

/// TENEX_BACKEND's kind; `valid` is false for a value that names no backend.
BackendKind from_environment(bool& valid, std::string& value) {
  valid = true;
  const char* text = std::getenv("TENEX_BACKEND");
  if (!text || !*text) return BackendKind::automatic;
  value = text;
  if (value == "cpu") return BackendKind::cpu;
  if (value == "cuda") return BackendKind::cuda;
  if (value == "auto") return BackendKind::automatic;
  valid = false;
  return BackendKind::automatic;
}

thread_local RunStats last_stats;

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
    throw BackendError(
        "tenex: set_default_backend(cuda): no CUDA backend is available (this build has "
        "TENEX_HAS_CUDA=" +
        std::to_string(TENEX_HAS_CUDA) +
        " and no device was found); use BackendKind::cpu or "
        "BackendKind::automatic");
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
  const detail::BackendEntry* entry = detail::find_backend(BackendKind::cuda);
  return entry && entry->available && entry->available();
}

RunStats last_run_stats() { return last_stats; }

namespace detail {

void set_last_run_stats(const RunStats& stats) { last_stats = stats; }

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

void check_backend_environment() {
  if (chosen_backend.load() >= 0) return;
  bool valid = true;
  std::string value;
  from_environment(valid, value);
  if (!valid) {
    throw BackendError("tenex: TENEX_BACKEND=" + value +
                       " names no backend; use TENEX_BACKEND=cpu, TENEX_BACKEND=cuda or TENEX_BACKEND=auto "
                       "(or leave it unset)");
  }
}

const BackendEntry& choose_backend(BackendKind kind) {
  if (kind == BackendKind::automatic) {
    if (const BackendEntry* cuda = find_backend(BackendKind::cuda); cuda && cuda->available && cuda->available()) {
      return *cuda;
    }
    kind = BackendKind::cpu;
  }
  const BackendEntry* entry = find_backend(kind);
  if (kind == BackendKind::cuda && (!entry || !entry->available || !entry->available())) {
    throw BackendError(
        "tenex: this set asks for the CUDA backend, which this build does not have or which found no device; "
        "use TENEX_BACKEND=cpu or auto");
  }
  if (!entry) throw InternalError("tenex: no backend is registered for this set");
  return *entry;
}

}  // namespace detail

}  // namespace tenex
