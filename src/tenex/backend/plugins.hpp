// Backend plugins: libtenex_cuda.so and libtenex_dist.so, loaded with dlopen by the registry
// when a set asks for their backend (or automatic choice finds a CUDA device), so a program
// that never asks maps neither CUDA nor MPI (ggml's dynamic backends are the model).
//
// A plugin exports one C function, TENEX_PLUGIN_SYMBOL, that returns its registry entry when
// the version it is given is its own (nullptr otherwise); the registry registers the entry as
// it registers the CPU backend's. Plugins are looked for beside libtenex.so first, then in
// TENEX_PLUGIN_PATH (a folder), then by the dynamic loader's search path.
#pragma once

#include <string>

#include "tenex/backend/backend.hpp"

namespace tenex::detail {

struct BackendEntry;

/// The function every plugin exports, extern "C":
///   const tenex::detail::BackendEntry* tenex_backend_plugin(const char* tenex_version);
#define TENEX_PLUGIN_SYMBOL "tenex_backend_plugin"
using PluginFunction = const BackendEntry* (*)(const char* tenex_version);

/// The file name of the plugin of `kind` ("libtenex_cuda.so.0.3"), empty for the built-in CPU.
std::string plugin_file_name(BackendKind kind);

/// Loads the plugin of `kind` once per process and registers its entry. Returns an empty
/// string when its entry is registered (now or before), else why not (no such file, the
/// loader's message, a version mismatch). Never throws; thread-safe.
std::string load_plugin(BackendKind kind);

/// Whether the CUDA driver (libcuda.so.1) is installed and reports at least one device: asked
/// before the CUDA plugin is loaded for automatic choice, so a machine without a GPU never
/// maps the CUDA libraries. The driver is unloaded again when it has no device.
bool cuda_driver_has_device();

}  // namespace tenex::detail
