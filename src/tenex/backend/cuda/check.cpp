#include "tenex/backend/cuda/check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <nvrtc.h>

#include "tenex/error.hpp"

namespace tenex::detail::cuda {

namespace {

// cuSOLVER has no status-to-text function. (A table, not a switch: the enum has many more
// values than a user can meet here.)
std::string cusolver_text(int status) {
  struct Known {
    cusolverStatus_t status;
    const char* text;
  };
  static const Known known[] = {
      {CUSOLVER_STATUS_SUCCESS, "CUSOLVER_STATUS_SUCCESS"},
      {CUSOLVER_STATUS_NOT_INITIALIZED, "CUSOLVER_STATUS_NOT_INITIALIZED: the library was not initialized"},
      {CUSOLVER_STATUS_ALLOC_FAILED, "CUSOLVER_STATUS_ALLOC_FAILED: out of memory"},
      {CUSOLVER_STATUS_INVALID_VALUE, "CUSOLVER_STATUS_INVALID_VALUE: an unsupported value or parameter"},
      {CUSOLVER_STATUS_ARCH_MISMATCH, "CUSOLVER_STATUS_ARCH_MISMATCH: the device lacks a needed feature"},
      {CUSOLVER_STATUS_EXECUTION_FAILED, "CUSOLVER_STATUS_EXECUTION_FAILED: a kernel failed to launch"},
      {CUSOLVER_STATUS_INTERNAL_ERROR, "CUSOLVER_STATUS_INTERNAL_ERROR: an internal operation failed"},
      {CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED,
       "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: the matrix type is not supported"},
      {CUSOLVER_STATUS_NOT_SUPPORTED, "CUSOLVER_STATUS_NOT_SUPPORTED: not supported"},
      {CUSOLVER_STATUS_INVALID_WORKSPACE, "CUSOLVER_STATUS_INVALID_WORKSPACE: the workspace is too small"},
  };
  for (const Known& k : known) {
    if (static_cast<int>(k.status) == status) return k.text;
  }
  return "cuSOLVER status " + std::to_string(status);
}

const char* library_name(Library library) {
  switch (library) {
    case Library::runtime: return "CUDA";
    case Library::cublas: return "cuBLAS";
    case Library::cusolver: return "cuSOLVER";
    case Library::nvrtc: return "NVRTC";
  }
  return "CUDA";
}

}  // namespace

std::string status_text(Library library, int status) {
  switch (library) {
    case Library::runtime: {
      const auto error = static_cast<cudaError_t>(status);
      return std::string(cudaGetErrorName(error)) + ": " + cudaGetErrorString(error);
    }
    case Library::cublas: {
      const auto s = static_cast<cublasStatus_t>(status);
      return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s);
    }
    case Library::cusolver: return cusolver_text(status);
    case Library::nvrtc: return nvrtcGetErrorString(static_cast<nvrtcResult>(status));
  }
  return "status " + std::to_string(status);
}

bool out_of_memory(Library library, int status) {
  switch (library) {
    case Library::runtime: return status == static_cast<int>(cudaErrorMemoryAllocation);
    case Library::cublas: return status == static_cast<int>(CUBLAS_STATUS_ALLOC_FAILED);
    case Library::cusolver: return status == static_cast<int>(CUSOLVER_STATUS_ALLOC_FAILED);
    case Library::nvrtc: return status == static_cast<int>(NVRTC_ERROR_OUT_OF_MEMORY);
  }
  return false;
}

std::string failure_message(Library library, int status, std::string_view call) {
  std::string message = std::string("tenex: ") + library_name(library) + ": " + std::string(call) + " failed with " +
                        status_text(library, status);
  if (out_of_memory(library, status)) {
    message +=
        "; the device is out of memory: free tensors, evaluate smaller sets (set_memory_limit) or use "
        "TENEX_BACKEND=cpu";
  } else if (library == Library::runtime && (status == static_cast<int>(cudaErrorNoDevice) ||
                                             status == static_cast<int>(cudaErrorInsufficientDriver))) {
    message += "; no usable CUDA device: use TENEX_BACKEND=cpu or auto";
  }
  return message;
}

void check(Library library, int status, std::string_view call) {
  if (status != 0) throw BackendError(failure_message(library, status, call));
}

}  // namespace tenex::detail::cuda
