// tenex/backend_kind.hpp — which backend runs the sets made from now on.
//
//   tenex::set_default_backend(tenex::BackendKind::cpu);   // or TENEX_BACKEND=cpu
//   c("i,j") = a("i,k") * b("k,j");                        // runs on the CPU
//
// A top-level header: a set records its backend when it is made, so the expression layer
// needs this choice and nothing else of the backend layer. tenex/backend/backend.hpp
// includes it; the functions are defined in src/tenex/backend/backend.cpp.
#pragma once

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
/// The default: set_default_backend's, else TENEX_BACKEND=cpu|cuda|distributed|auto, else automatic.
TENEX_API BackendKind default_backend();

}  // namespace tenex
