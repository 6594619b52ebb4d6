// Backend plugins, loaded with dlopen by the registry when a set asks for their backend by name
// (or automatic choice finds a CUDA device), so a program that never asks maps neither CUDA nor
// MPI (ggml's dynamic backends are the model):
//   - the built-in plugins, libtenex_cuda.so.M.m and libtenex_dist.so.M.m, beside libtenex.so;
//   - any other backend <name>, libtenex_backend_<name>.so, in each folder of TENEX_PLUGIN_PATH
//     (separated by ':') and then in the install's plugin folder, <libtenex's folder>/tenex/plugins.
// A plugin exports one C function, tenex_backend_plugin_entry (TENEX_BACKEND_PLUGIN_SYMBOL),
// returning its entry (tenex/backend/plugin.hpp), which the registry checks (ABI version, op
// table, tenex version, name) and registers.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace tenex::detail {

/// Whether `name` can name a backend: 1 to 64 of [a-z0-9_] (reserved names aside).
bool valid_backend_name(std::string_view name);

/// The file name of the plugin of backend `name` ("libtenex_cuda.so.0.3",
/// "libtenex_backend_naive.so"); empty for the built-in CPU and a name no backend can have.
std::string plugin_file_name(std::string_view name);

/// The folders searched for plugins other than the built-in ones: TENEX_PLUGIN_PATH's, then
/// the install's plugin folder.
std::vector<std::filesystem::path> plugin_folders();

/// Loads the plugin of backend `name` once per process and registers its entry. Returns an
/// empty string when its entry is registered (now or before), else why not (no such file,
/// with the places tried, the loader's message, a version mismatch). Never throws; thread-safe.
std::string load_plugin(std::string_view name);

/// The names of the backend plugins in plugin_folders() (from their file names; not loaded).
std::vector<std::string> plugin_names_found();

/// Whether the CUDA driver (libcuda.so.1) is installed and reports at least one device: asked
/// before the CUDA plugin is loaded for automatic choice, so a machine without a GPU never
/// maps the CUDA libraries. The driver is unloaded again when it has no device.
bool cuda_driver_has_device();

}  // namespace tenex::detail
