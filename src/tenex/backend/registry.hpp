// The backend registry: BackendKind -> a factory, asked by the pipeline for each set.
#pragma once

#include <complex>
#include <memory>
#include <string>
#include <string_view>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/backend_interface.hpp"

namespace tenex::detail {

struct BackendEntry {
  BackendKind kind = BackendKind::cpu;
  std::string_view name;
  /// Whether the backend can run here (a device exists).
  bool (*available)() = nullptr;
  std::unique_ptr<Backend<float>> (*make_f32)() = nullptr;
  std::unique_ptr<Backend<double>> (*make_f64)() = nullptr;
  /// Complex sets; a backend without them (null) leaves complex sets to the CPU backend.
  std::unique_ptr<Backend<std::complex<float>>> (*make_c64)() = nullptr;
  std::unique_ptr<Backend<std::complex<double>>> (*make_c128)() = nullptr;
};

/// The factory of `entry` for element type T (null where the backend has none).
template <class T>
auto factory_of(const BackendEntry& entry) {
  if constexpr (std::is_same_v<T, float>) {
    return entry.make_f32;
  } else if constexpr (std::is_same_v<T, double>) {
    return entry.make_f64;
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    return entry.make_c64;
  } else {
    return entry.make_c128;
  }
}

/// Adds (or replaces) the entry of entry.kind.
void register_backend(const BackendEntry& entry);
/// The entry of `kind` registered so far, or nullptr.
const BackendEntry* find_backend(BackendKind kind);
/// The entry of `kind`, its plugin loaded first when it is one (plugins.hpp); nullptr when
/// this build or this machine has none.
const BackendEntry* find_or_load_backend(BackendKind kind);
/// Why `kind` cannot run a set now, for error messages ("this build has no CUDA backend",
/// the plugin loader's message, "no tenex::dist::Context is alive", ...).
std::string why_unavailable(BackendKind kind);

/// The backend of `entry` that sets on this thread use: made on first use and kept, so a
/// set does not make one (a backend keeps no state between sets). Once the thread's
/// backends are destroyed (at thread exit) it makes one in `made` each time.
template <class T>
Backend<T>& thread_backend(const BackendEntry& entry, std::unique_ptr<Backend<T>>& made);

/// Throws BackendError naming the accepted values when TENEX_BACKEND holds another one
/// (and set_default_backend did not decide): the first set reports it.
void check_backend_environment();
/// The same, given TENEX_BACKEND's value (null when unset) read by the caller.
void check_backend_environment(const char* value_of_variable);
/// The kind a TENEX_BACKEND value (null: unset) names; automatic for one that names none
/// (check_backend_environment reports it).
BackendKind environment_backend(const char* value_of_variable);
/// The backend that runs a set that asked for `kind` (automatic: CUDA where a device
/// exists, else the CPU). Throws BackendError when `kind` is not available.
const BackendEntry& choose_backend(BackendKind kind);

}  // namespace tenex::detail
