// tenex/backend/plugin.hpp — writing a backend outside the library (docs/extending.md "Writing a
// backend"; examples/backend_plugin/ is a whole one).
//
// A backend plugin is a shared library named libtenex_backend_<name>.so, found in a folder of
// TENEX_PLUGIN_PATH (folders separated by ':') or in the install's plugin folder
// (<libdir>/tenex/plugins, beside libtenex.so), and loaded when a set first asks for it by name
// (TENEX_BACKEND=<name>, tenex::set_default_backend("<name>")). It exports one C function,
// tenex_backend_plugin_entry, returning its entry: a versioned C struct (the ABI version and op
// table it was built with, its name, its element types, a create function) that the library
// checks before it calls anything else in the plugin.
//
//   template <class T>
//   class Naive final : public tenex::plugin::HostBackend<T> {
//     std::string_view name() const override { return "naive"; }
//     bool supports(const tenex::OpNode& node, std::string& why) const override;   // the kinds it runs
//     tenex::plugin::KernelCount run_add(const tenex::AddParams&, const tenex::plugin::KernelArgs<T>&) override;
//   };
//   TENEX_BACKEND_PLUGIN("naive", Naive, TENEX_ELEMENT_ALL)
//
// The C++ interface it implements (tenex/backend/backend_interface.hpp) and the IR it reads
// (tenex/ir.hpp) may change between minor versions, so a plugin runs only with the libtenex of
// the version it was built against; the library refuses any other with a clear error.
#pragma once

#include <complex>
#include <cstdint>
#include <new>
#include <type_traits>

#include "tenex/backend/backend_interface.hpp"
#include "tenex/config.hpp"
#include "tenex/ir.hpp"
#include "tenex/scalar.hpp"

/// The layout of TenexBackendPlugin and the meaning of its fields; raised when either changes.
#define TENEX_BACKEND_ABI_VERSION 2u
/// The function a plugin exports, extern "C": const TenexBackendPlugin* tenex_backend_plugin_entry(void).
#define TENEX_BACKEND_PLUGIN_SYMBOL "tenex_backend_plugin_entry"

extern "C" {

/// The element types of TenexBackendPlugin::element_types and of create().
enum : std::uint32_t {
  TENEX_ELEMENT_F32 = 1u,
  TENEX_ELEMENT_F64 = 2u,
  TENEX_ELEMENT_C64 = 4u,   // std::complex<float>
  TENEX_ELEMENT_C128 = 8u,  // std::complex<double>
  TENEX_ELEMENT_REAL = 3u,
  TENEX_ELEMENT_ALL = 15u,
};

/// A backend plugin's entry. A set of an element type the backend lacks runs on the CPU backend.
struct TenexBackendPlugin {
  std::uint32_t abi_version;    // TENEX_BACKEND_ABI_VERSION of the headers it was built with
  std::uint32_t op_kinds;       // the op kinds of TENEX_FOR_EACH_OP it was built with
  const char* name;             // what TENEX_BACKEND and set_default_backend call it: [a-z0-9_]+
  const char* tenex_version;    // TENEX_VERSION_STRING of the headers it was built with
  std::uint32_t element_types;  // TENEX_ELEMENT_* bits
  int (*available)(void);       // non-zero where it can run now (a device exists); null: always
  /// A new tenex::detail::Backend<T> (made with new, deleted by the library through its virtual
  /// destructor) for one TENEX_ELEMENT_* bit, as void*; null when it cannot make one. Never throws.
  void* (*create)(std::uint32_t element_type);
};

using TenexBackendPluginFunction = const TenexBackendPlugin* (*)(void);

}  // extern "C"

namespace tenex::plugin {

template <class T>
using Backend = detail::Backend<T>;
template <class T>
using KernelArgs = detail::KernelArgs<T>;
template <class T>
using View = detail::View<T>;
template <class T>
using Storage = detail::Storage<T>;
using detail::BackendCapabilities;
using detail::Buffer;
using detail::Device;
using detail::KernelCount;
using detail::RunNotes;

/// The op kinds of this build's table (TenexBackendPlugin::op_kinds).
#define TENEX_PLUGIN_COUNT_OP(kind, arity, Params) +1u
inline constexpr std::uint32_t kOpKinds = 0u TENEX_FOR_EACH_OP(TENEX_PLUGIN_COUNT_OP);
#undef TENEX_PLUGIN_COUNT_OP

/// The TENEX_ELEMENT_* bit of T.
template <class T>
constexpr std::uint32_t element_bit() {
  if constexpr (std::is_same_v<T, float>) return TENEX_ELEMENT_F32;
  if constexpr (std::is_same_v<T, double>) return TENEX_ELEMENT_F64;
  if constexpr (std::is_same_v<T, std::complex<float>>) return TENEX_ELEMENT_C64;
  if constexpr (std::is_same_v<T, std::complex<double>>) return TENEX_ELEMENT_C128;
  return 0u;
}

/// A tensor's value in host memory, and a buffer made a pending tensor's value: what a backend
/// whose buffers are host memory does in read() and write().
#define TENEX_PLUGIN_HOST_VALUE(T)                         \
  TENEX_API View<const T> host_value(Storage<T>& storage); \
  TENEX_API void adopt_host_value(Storage<T>& storage, Buffer&& buffer);
TENEX_FOR_EACH_SCALAR(TENEX_PLUGIN_HOST_VALUE)
#undef TENEX_PLUGIN_HOST_VALUE

/// A backend whose memory is the host's (the library's 64-byte aligned block cache): it
/// implements name(), supports() and the run functions of the kinds it runs.
template <class T>
class HostBackend : public Backend<T> {
 public:
  Device device() const override { return Device::host; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities c;
    c.host_memory = true;
    return c;
  }
  Buffer allocate(std::size_t bytes) override { return detail::allocate_host_buffer(bytes); }
  View<const T> read(Storage<T>& storage) override { return host_value(storage); }
  void write(Storage<T>& storage, Buffer&& buffer) override { adopt_host_value(storage, std::move(buffer)); }
};

/// TenexBackendPlugin::create for a backend class template B of the types in `Types`.
template <template <class> class B, std::uint32_t Types>
void* create_backend(std::uint32_t element_type) noexcept {
  try {
    auto made = [&](auto zero) -> void* {
      using T = decltype(zero);
      if constexpr ((Types & element_bit<T>()) != 0) {
        return static_cast<Backend<T>*>(new B<T>());
      } else {
        return nullptr;
      }
    };
    switch (element_type) {
      case TENEX_ELEMENT_F32: return made(float{});
      case TENEX_ELEMENT_F64: return made(double{});
      case TENEX_ELEMENT_C64: return made(std::complex<float>{});
      case TENEX_ELEMENT_C128: return made(std::complex<double>{});
      default: return nullptr;
    }
  } catch (...) {
    return nullptr;
  }
}

}  // namespace tenex::plugin

/// Defines a plugin's entry function: TENEX_BACKEND_PLUGIN("naive", Naive, TENEX_ELEMENT_ALL),
/// Naive a class template over the element type (a default-constructible tenex::plugin::Backend<T>).
#define TENEX_BACKEND_PLUGIN(name_literal, BackendTemplate, element_types)                                       \
  extern "C" __attribute__((visibility("default"))) const TenexBackendPlugin* tenex_backend_plugin_entry(void) { \
    static const TenexBackendPlugin entry{TENEX_BACKEND_ABI_VERSION,                                             \
                                          ::tenex::plugin::kOpKinds,                                             \
                                          name_literal,                                                          \
                                          TENEX_VERSION_STRING,                                                  \
                                          (element_types),                                                       \
                                          nullptr,                                                               \
                                          &::tenex::plugin::create_backend<BackendTemplate, (element_types)>};   \
    return &entry;                                                                                               \
  }
