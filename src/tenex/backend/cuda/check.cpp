#include "tenex/backend/cuda/check.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <nvrtc.h>

#include "tenex/error.hpp"

namespace tenex::detail::cuda {

namespace {

// cuSOLVER has no status-to-text function.
std::string cusolver_text(int status) {
  switch (static_cast<cusolverStatus_t>(status)) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED: the library was not initialized";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED: out of memory";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE: an unsupported value or parameter";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH: the device lacks a needed feature";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED: a kernel failed to launch";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR: an internal operation failed";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED: the matrix type is not supported";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED: not supported";
    default: return "cuSOLVER status " + std::to_string(status);
  }
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
    case Library::runtime: return status == cudaErrorMemoryAllocation;
    case Library::cublas: return status == CUBLAS_STATUS_ALLOC_FAILED;
    case Library::cusolver: return status == CUSOLVER_STATUS_ALLOC_FAILED;
    case Library::nvrtc: return status == NVRTC_ERROR_OUT_OF_MEMORY;
  }
  return false;
}

std::string failure_message(Library library, int status, std::string_view call) {
  std::string message = std::string("tenex: ") + library_name(library) + ": " + std::string(call) + " failed with " +
                        status_text(library, status);
  if (out_of_memory(library, status)) {
    message += "; the device is out of memory: free tensors, evaluate smaller sets (set_memory_limit) or use "
               "TENEX_BACKEND=cpu";
  } else if (library == Library::runtime &&
             (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver)) {
    message += "; no usable CUDA device: use TENEX_BACKEND=cpu or auto";
  }
  return message;
}

void check(Library library, int status, std::string_view call) {
  if (status != 0) throw BackendError(failure_message(library, status, call));
}

}  // namespace tenex::detail::cuda
