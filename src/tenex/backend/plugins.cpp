#include "tenex/backend/plugins.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "tenex/backend/plugin.hpp"
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
  std::string name;
  std::string error;  // why the try failed; empty after a success
};

std::mutex plugins_mutex;
std::deque<PluginState> tried_plugins;  // under plugins_mutex: one try per name per process

/// dlopen of `file`, the message of the loader appended to `errors` when it fails.
void* open_library(const std::string& file, std::string& errors) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* message = dlerror();
    errors += "\n  " + file + ": " + (message ? message : "cannot be loaded");
  }
  return handle;
}

bool builtin_plugin(std::string_view name) { return name == "cuda" || name == "distributed"; }

/// The plugin of `name` opened from the first place that has it, or null with `tried` saying
/// where it looked.
void* open_plugin(std::string_view name, const std::string& file, std::string& tried) {
  std::vector<std::filesystem::path> folders;
  if (builtin_plugin(name)) {
    if (std::filesystem::path folder = library_folder(); !folder.empty()) folders.push_back(std::move(folder));
  }
  for (std::filesystem::path& folder : plugin_folders()) folders.push_back(std::move(folder));
  std::error_code error;
  for (const std::filesystem::path& folder : folders) {
    const std::filesystem::path path = folder / file;
    if (std::filesystem::exists(path, error)) {
      if (void* handle = open_library(path.string(), tried)) return handle;
    } else {
      tried += "\n  " + path.string() + ": no such file";
    }
  }
  // The built-in plugins may also be wherever the dynamic loader looks.
  return builtin_plugin(name) ? open_library(file, tried) : nullptr;
}

std::string load_locked(std::string_view name) {
  const std::string file = plugin_file_name(name);
  if (file.empty()) return "tenex: \"" + std::string(name) + "\" is not a backend name ([a-z0-9_]+)";
  std::string tried;
  void* handle = open_plugin(name, file, tried);
  if (!handle) {
    return "tenex: no plugin provides the " + std::string(name) + " backend (" + file + "); looked in:" + tried +
           (builtin_plugin(name) ? "" : "\n  (set TENEX_PLUGIN_PATH to the folder that holds it)");
  }
  auto entry_of = reinterpret_cast<TenexBackendPluginFunction>(dlsym(handle, TENEX_BACKEND_PLUGIN_SYMBOL));
  if (!entry_of) {
    dlclose(handle);
    return "tenex: " + file + " is not a tenex backend plugin (it exports no " TENEX_BACKEND_PLUGIN_SYMBOL ")";
  }
  const TenexBackendPlugin* entry = entry_of();
  std::string why = entry ? check_plugin_entry(*entry, file) : "tenex: " + file + " returned no plugin entry";
  if (why.empty() && std::string_view(entry->name) != name) {
    why = "tenex: " + file + " holds the backend \"" + entry->name + "\", not \"" + std::string(name) + "\"";
  }
  if (!why.empty()) {
    dlclose(handle);
    return why;
  }
  register_backend(*entry);  // the handle stays open: the entry's functions live in it
  return {};
}

}  // namespace

// The SONAME's version, "0.1", as a literal (built by the preprocessor: no string arithmetic).
#define TENEX_PLUGIN_TEXT(x) #x
#define TENEX_PLUGIN_VERSION(major, minor) "." TENEX_PLUGIN_TEXT(major) "." TENEX_PLUGIN_TEXT(minor)

bool valid_backend_name(std::string_view name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string plugin_file_name(std::string_view name) {
  if (name == "cuda") return "libtenex_cuda.so" TENEX_PLUGIN_VERSION(TENEX_VERSION_MAJOR, TENEX_VERSION_MINOR);
  if (name == "distributed") return "libtenex_dist.so" TENEX_PLUGIN_VERSION(TENEX_VERSION_MAJOR, TENEX_VERSION_MINOR);
  const bool valid = valid_backend_name(name) && name != "cpu" && !backend_kind_of(name);
  return valid ? "libtenex_backend_" + std::string(name) + ".so" : std::string();
}

#undef TENEX_PLUGIN_VERSION
#undef TENEX_PLUGIN_TEXT

std::vector<std::filesystem::path> plugin_folders() {
  std::vector<std::filesystem::path> folders;
  if (const char* path = setting(Setting::plugin_path); path && *path) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string_view folder = rest.substr(0, colon);
      if (!folder.empty()) folders.emplace_back(std::string(folder));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  if (const std::filesystem::path folder = library_folder(); !folder.empty()) {
    folders.push_back(folder / "tenex" / "plugins");
  }
  return folders;
}

std::vector<std::string> plugin_names_found() {
  std::vector<std::string> names;
  try {
    constexpr std::string_view prefix = "libtenex_backend_", suffix = ".so";
    for (const std::filesystem::path& folder : plugin_folders()) {
      std::error_code error;
      for (const auto& item : std::filesystem::directory_iterator(folder, error)) {
        const std::string file = item.path().filename().string();
        if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
            file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
          continue;
        }
        std::string name = file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
        if (!plugin_file_name(name).empty() && std::find(names.begin(), names.end(), name) == names.end()) {
          names.push_back(std::move(name));
        }
      }
    }
  } catch (const std::exception&) {  // an unreadable folder lists nothing more
  }
  return names;
}

std::string load_plugin(std::string_view name) {
  try {
    if (find_backend(name)) return {};
    std::lock_guard<std::mutex> lock(plugins_mutex);
    if (find_backend(name)) return {};
    for (const PluginState& state : tried_plugins) {
      if (state.name == name) return state.error;  // one try per process: a missing plugin stays missing
    }
    PluginState& state = tried_plugins.emplace_back();
    state.name = name;
    state.error = load_locked(name);
    return state.error;
  } catch (const std::bad_alloc&) {
    return "tenex: out of memory while loading a backend plugin";
  } catch (const std::exception& e) {
    return std::string("tenex: loading the backend plugin failed: ") + e.what();
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
