// tenex/backend_kind.hpp — which backend runs the sets made from now on.
//
//   tenex::set_default_backend(tenex::BackendKind::cpu);   // or TENEX_BACKEND=cpu
//   c("i,j") = a("i,k") * b("k,j");                        // runs on the CPU
//
// A top-level header: a set records its backend when it is made, so the expression layer
// needs this choice and nothing else of the backend layer. tenex/backend/backend.hpp
// includes it; the functions are defined in src/tenex/backend/backend.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tenex/export.hpp"

namespace tenex {

/// The backends a set can run on.
enum class BackendKind {
  automatic,   ///< TENEX_BACKEND decides; unset: CUDA where a device exists, else the CPU
  cpu,         ///< OpenBLAS and LAPACKE on the host
  cuda,        ///< cuBLAS, cuSOLVER and NVRTC kernels (TENEX_HAS_CUDA and a device)
  distributed  ///< ScaLAPACK over MPI (TENEX_HAS_DIST; needs a live tenex::dist::Context,
               ///< see tenex/dist/context.hpp); never chosen by automatic
};

/// Backend of sets created from now on (all threads). Throws tenex::BackendError for
/// BackendKind::cuda when this build has no CUDA backend or no device exists.
/// BackendKind::distributed throws it when this build has no distributed backend or no
/// tenex::dist::Context is alive. BackendKind::automatic undoes an earlier choice: TENEX_BACKEND decides again
/// (unset: CUDA where a device exists, else the CPU).
TENEX_API void set_default_backend(BackendKind kind);
/// The default: set_default_backend's, else TENEX_BACKEND=cpu|cuda|distributed|auto, else automatic
/// (also where a backend without a kind, a plugin's, is chosen by name: default_backend_name()).
TENEX_API BackendKind default_backend();

/// Backend of sets created from now on, by name: "cpu", "cuda", "distributed", "auto", or a
/// backend plugin's name, its plugin (libtenex_backend_NAME.so) loaded from a folder of
/// TENEX_PLUGIN_PATH or the install's plugin folder (docs/extending.md, "Writing a backend").
/// TENEX_BACKEND=NAME does the same for programs that choose nothing. Throws
/// tenex::BackendError, naming the places looked in, when no backend has that name, and when
/// the plugin was built for another version of tenex.
TENEX_API void set_default_backend(std::string_view name);
/// The name of the default backend: set_default_backend's, else TENEX_BACKEND's, else "auto".
TENEX_API std::string default_backend_name();
/// The backends this build and process can name: the built-in ones ("cpu", and "cuda" and
/// "distributed" where this build has them), the plugins in TENEX_PLUGIN_PATH's folders and
/// the install's plugin folder (found by file name, not loaded), and those loaded so far.
TENEX_API std::vector<std::string> backend_names();

}  // namespace tenex
