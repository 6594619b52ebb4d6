#include "tenex/backend/plugins.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "tenex/backend/registry.hpp"
#include "tenex/config.hpp"
#include "tenex/settings.hpp"

namespace tenex::detail {

namespace {

/// The folder libtenex.so was loaded from (empty when the loader does not say).
std::filesystem::path library_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&plugin_file_name), &info) == 0 || !info.dli_fname) return {};
  std::error_code error;
  std::filesystem::path path = std::filesystem::canonical(info.dli_fname, error);
  if (error) path = info.dli_fname;
  return path.parent_path();
}

struct PluginState {
  bool tried = false;
  std::string error;  // why the last try failed; empty after a success
};

std::mutex plugins_mutex;
PluginState cuda_plugin, dist_plugin;

/// dlopen of `file`, the message of the loader appended to `errors` when it fails.
void* open_library(const std::string& file, std::string& errors) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* message = dlerror();
    errors += "\n  " + file + ": " + (message ? message : "cannot be loaded");
  }
  return handle;
}

std::string load_locked(BackendKind kind) {
  const std::string name = plugin_file_name(kind);
  if (name.empty()) return "the CPU backend is built in";
  // Beside libtenex.so, in TENEX_PLUGIN_PATH, then wherever the dynamic loader looks.
  std::string tried;
  void* handle = nullptr;
  std::error_code error;
  if (const std::filesystem::path folder = library_folder(); !folder.empty()) {
    if (std::filesystem::exists(folder / name, error)) handle = open_library((folder / name).string(), tried);
  }
  if (const char* path = setting(Setting::plugin_path); !handle && path && *path) {
    const std::filesystem::path file = std::filesystem::path(path) / name;
    if (std::filesystem::exists(file, error)) handle = open_library(file.string(), tried);
  }
  if (!handle) handle = open_library(name, tried);
  if (!handle) return "tenex: the " + name + " plugin could not be loaded:" + tried;
  auto entry_of = reinterpret_cast<PluginFunction>(dlsym(handle, TENEX_PLUGIN_SYMBOL));
  if (!entry_of) {
    dlclose(handle);
    return "tenex: " + name + " is not a tenex plugin (it exports no " TENEX_PLUGIN_SYMBOL ")";
  }
  const BackendEntry* entry = entry_of(TENEX_VERSION_STRING);
  if (!entry || entry->kind != kind) {
    dlclose(handle);
    return "tenex: " + name +
           " belongs to another version of tenex than " TENEX_VERSION_STRING
           "; install the plugin built with this libtenex";
  }
  register_backend(*entry);  // the handle stays open: the entry's functions live in it
  return {};
}

}  // namespace

// The SONAME's version, "0.1", as a literal (built by the preprocessor: no string arithmetic).
#define TENEX_PLUGIN_TEXT(x) #x
#define TENEX_PLUGIN_VERSION(major, minor) "." TENEX_PLUGIN_TEXT(major) "." TENEX_PLUGIN_TEXT(minor)

std::string plugin_file_name(BackendKind kind) {
  switch (kind) {
    case BackendKind::cuda: return "libtenex_cuda.so" TENEX_PLUGIN_VERSION(TENEX_VERSION_MAJOR, TENEX_VERSION_MINOR);
    case BackendKind::distributed:
      return "libtenex_dist.so" TENEX_PLUGIN_VERSION(TENEX_VERSION_MAJOR, TENEX_VERSION_MINOR);
    case BackendKind::automatic:
    case BackendKind::cpu: break;
  }
  return {};
}

#undef TENEX_PLUGIN_VERSION
#undef TENEX_PLUGIN_TEXT

std::string load_plugin(BackendKind kind) {
  try {
    if (find_backend(kind)) return {};
    PluginState* state = kind == BackendKind::cuda          ? &cuda_plugin
                         : kind == BackendKind::distributed ? &dist_plugin
                                                            : nullptr;
    if (!state) return "tenex: no plugin provides this backend";
    std::lock_guard<std::mutex> lock(plugins_mutex);
    if (find_backend(kind)) return {};
    if (!state->tried) {  // one try per process: a missing plugin stays missing
      state->tried = true;
      state->error = load_locked(kind);
    }
    return state->error;
  } catch (...) {
    return "tenex: out of memory while loading a backend plugin";
  }
}

bool cuda_driver_has_device() {
  static const bool has_device = [] {
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver) return false;
    using Init = int (*)(unsigned);
    using Count = int (*)(int*);
    auto init = reinterpret_cast<Init>(dlsym(driver, "cuInit"));
    auto count = reinterpret_cast<Count>(dlsym(driver, "cuDeviceGetCount"));
    int devices = 0;
    if (!init || !count) {  // not a CUDA driver
      dlclose(driver);
      return false;
    }
    // Once cuInit ran the driver stays loaded, found or not: it may keep state.
    return init(0) == 0 && count(&devices) == 0 && devices > 0;
  }();
  return has_device;
}

}  // namespace tenex::detail
