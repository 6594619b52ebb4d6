#include "tenex/backend/backend.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "tenex/config.hpp"
#include "tenex/error.hpp"
#include "tenex/backend/run_stats.hpp"

namespace tenex {

namespace {

// -1: not chosen by set_default_backend; the environment decides.
std::atomic<int> chosen_backend{-1};

BackendKind from_environment() {
  const char* value = std::getenv("TENEX_BACKEND");
  if (!value) return BackendKind::automatic;
  std::string v(value);
  if (v == "cpu") return BackendKind::cpu;
  if (v == "cuda") return BackendKind::cuda;
  return BackendKind::automatic;
}

thread_local RunStats last_stats;

}  // namespace

void set_default_backend(BackendKind kind) {
  if (kind == BackendKind::cuda && !cuda_available()) {
    throw BackendError(
        "tenex: set_default_backend(cuda): no CUDA backend is available (this build has "
        "TENEX_HAS_CUDA=" + std::to_string(TENEX_HAS_CUDA) + " and no device was found); use BackendKind::cpu or "
        "BackendKind::automatic");
  }
  chosen_backend.store(static_cast<int>(kind));
}

BackendKind default_backend() {
  int chosen = chosen_backend.load();
  if (chosen >= 0) return static_cast<BackendKind>(chosen);
  return from_environment();
}

bool cuda_available() { return false; }

RunStats last_run_stats() { return last_stats; }

namespace detail {
void set_last_run_stats(const RunStats& stats) { last_stats = stats; }
}  // namespace detail

}  // namespace tenex
