// The backend registry: backends by name ("cpu", "cuda", "distributed", a plugin's), each entry
// the plugin entry it was registered from (tenex/backend/plugin.hpp), asked by the pipeline for
// each set. BackendKind is shorthand for the built-in names.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tenex/backend/backend.hpp"
#include "tenex/backend/backend_interface.hpp"
#include "tenex/backend/plugin.hpp"
#include "tenex/backend_choice.hpp"

namespace tenex::detail {

struct BackendEntry {
  std::string name;                           // the key
  BackendKind kind = BackendKind::automatic;  // cpu, cuda, distributed; automatic: a plugin's own name
  TenexBackendPlugin plugin{};                // name points into `name`
};

/// The name of a built-in kind ("cpu", "cuda", "distributed"; "auto" for automatic).
std::string_view backend_kind_name(BackendKind kind);
/// The built-in kind `name` names, or nullopt ("auto" names automatic).
std::optional<BackendKind> backend_kind_of(std::string_view name);

/// The plugin entry of the built-in CPU backend (backend/cpu/cpu_backend.cpp), in the registry
/// from its start.
const TenexBackendPlugin& cpu_backend_plugin();

/// Whether `entry` has a backend for element type T.
template <class T>
bool has_element_type(const BackendEntry& entry) {
  return (entry.plugin.element_types & plugin::element_bit<T>()) != 0 && entry.plugin.create;
}
/// A new backend of `entry` for T; throws BackendError when the plugin makes none.
template <class T>
std::unique_ptr<Backend<T>> make_backend(const BackendEntry& entry);
/// Whether the backend of `entry` can run here now.
bool entry_available(const BackendEntry& entry);

/// Adds (or replaces) the entry of plugin.name (a built-in kind's name gives the entry its kind).
/// Throws BackendError when the entry is malformed (check_plugin_entry).
void register_backend(const TenexBackendPlugin& plugin);
/// Why `plugin` cannot be registered (ABI version, op table, tenex version, name), or empty.
std::string check_plugin_entry(const TenexBackendPlugin& plugin, std::string_view file);
/// The entry of `name` (or of a built-in kind) registered so far, or nullptr.
const BackendEntry* find_backend(std::string_view name);
const BackendEntry* find_backend(BackendKind kind);
/// The entry of `name`, its plugin loaded first when it is one (plugins.hpp); nullptr when
/// this build or this machine has none.
const BackendEntry* find_or_load_backend(std::string_view name);
const BackendEntry* find_or_load_backend(BackendKind kind);
/// Why `kind` cannot run a set now, for error messages ("this build has no CUDA backend",
/// the plugin loader's message, "no tenex::dist::Context is alive", ...).
std::string why_unavailable(BackendKind kind);

/// The backend of `entry` that sets on this thread use: made on first use and kept, so a
/// set does not make one (a backend keeps no state between sets). Once the thread's
/// backends are destroyed (at thread exit) it makes one in `made` each time.
template <class T>
Backend<T>& thread_backend(const BackendEntry& entry, std::unique_ptr<Backend<T>>& made);

/// Throws BackendError naming the accepted values when TENEX_BACKEND holds a value that names
/// no built-in backend and no plugin (and set_default_backend did not decide): the first set
/// reports it.
void check_backend_environment();
/// The same, given TENEX_BACKEND's value (null when unset) read by the caller.
void check_backend_environment(const char* value_of_variable);
/// The backend a TENEX_BACKEND value (null: unset) names; automatic for one that names none
/// (check_backend_environment reports it).
BackendChoice environment_backend(const char* value_of_variable);
/// The backend that runs a set that asked for `choice` (automatic: CUDA where a device
/// exists, else the CPU). Throws BackendError when it is not available.
const BackendEntry& choose_backend(BackendChoice choice);
const BackendEntry& choose_backend(BackendKind kind);

}  // namespace tenex::detail
