#include "tenex/backend/cuda/device.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>
#include <nvrtc.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>

#include "tenex/backend/cuda/check.hpp"
#include "tenex/error.hpp"
#include "tenex/settings.hpp"

namespace tenex::detail::cuda {

namespace {

struct Availability {
  bool available = false;
  std::string reason;
};

const Availability& availability() noexcept {
  static const Availability a = []() noexcept {
    Availability result;
    try {
      int count = 0;
      const cudaError_t status = cudaGetDeviceCount(&count);
      if (status != cudaSuccess) {
        result.reason = "no CUDA device: " + failure_message(Library::runtime, status, "cudaGetDeviceCount(&count)");
        cudaGetLastError();  // clear the sticky-free error state of the runtime
      } else if (count == 0) {
        result.reason = "no CUDA device: cudaGetDeviceCount found none";
      } else {
        result.available = true;
      }
    } catch (...) {
      result.available = false;
    }
    return result;
  }();
  return a;
}

// ---- every stream ever lent: a fence covers them all -----------------------------------

struct StreamRegistry {
  std::mutex mutex;
  std::vector<cudaStream_t> streams;
  std::vector<std::unique_ptr<Lanes>> free_lanes;
  std::vector<std::vector<cudaEvent_t>*> free_fences;
};
StreamRegistry& streams() {
  static StreamRegistry* r = new StreamRegistry;  // never destroyed
  return *r;
}

void* make_fence() noexcept {
  StreamRegistry& r = streams();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.streams.empty()) return nullptr;
  std::vector<cudaEvent_t>* fence = nullptr;
  try {
    if (!r.free_fences.empty()) {
      fence = r.free_fences.back();
      r.free_fences.pop_back();
    } else {
      fence = new std::vector<cudaEvent_t>;
    }
    while (fence->size() < r.streams.size()) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) throw std::bad_alloc();
      fence->push_back(e);
    }
  } catch (...) {
    delete fence;
    cudaDeviceSynchronize();  // no fence: wait instead
    return nullptr;
  }
  for (std::size_t i = 0; i < r.streams.size(); ++i) cudaEventRecord((*fence)[i], r.streams[i]);
  return fence;
}

bool fence_passed(void* fence) noexcept {
  for (cudaEvent_t e : *static_cast<std::vector<cudaEvent_t>*>(fence)) {
    if (cudaEventQuery(e) == cudaErrorNotReady) return false;
  }
  return true;
}

void drop_fence(void* fence) noexcept {
  auto* f = static_cast<std::vector<cudaEvent_t>*>(fence);
  StreamRegistry& r = streams();
  std::lock_guard<std::mutex> lock(r.mutex);
  try {
    r.free_fences.push_back(f);
  } catch (...) {
    for (cudaEvent_t e : *f) cudaEventDestroy(e);
    delete f;
  }
}

void* device_allocate(std::size_t bytes) {
  void* data = nullptr;
  const cudaError_t status = cudaMalloc(&data, bytes);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  check(Library::runtime, status, "cudaMalloc(&data, " + std::to_string(bytes) + ")");
  return data;
}

void device_free(void* data) noexcept { cudaFree(data); }
void wait_all() noexcept { cudaDeviceSynchronize(); }

// ---- NVRTC programs -----------------------------------------------------------------------

struct Program {
  cudaLibrary_t library = nullptr;
  std::map<std::string, cudaKernel_t, std::less<>> kernels;
};
struct Programs {
  std::mutex mutex;
  std::map<std::string, Program, std::less<>> by_source;
  std::string arch;  // "sm_90"
};
Programs& programs() {
  static Programs* p = new Programs;  // never destroyed: programs live as long as the process
  return *p;
}

std::atomic<std::size_t> bytes_to_device{0}, bytes_to_host{0};

}  // namespace

bool device_available() noexcept { return availability().available; }

std::string unavailable_reason() { return availability().available ? std::string() : availability().reason; }

std::vector<std::string> nvrtc_options(std::string_view arch) {
  return {"--gpu-architecture=" + std::string(arch), "--std=c++17", "-default-device"};
}

std::string compile(std::string_view source, std::string_view arch, bool cubin) {
  nvrtcProgram program = nullptr;
  const std::string text(source);
  TENEX_CUDA_CALL(nvrtc, nvrtcCreateProgram(&program, text.c_str(), "tenex_kernel.cu", 0, nullptr, nullptr));
  struct Destroy {
    nvrtcProgram& p;
    ~Destroy() { nvrtcDestroyProgram(&p); }
  } destroy{program};
  const std::vector<std::string> options = nvrtc_options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  if (result != NVRTC_SUCCESS) {
    std::size_t size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(program, &size) == NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      nvrtcGetProgramLog(program, log.data());
      log.resize(size - 1);
    }
    throw BackendError(failure_message(Library::nvrtc, result, "nvrtcCompileProgram(program, ...)") +
                       " (a tenex bug: the generated kernel does not compile):\n" + log);
  }
  std::size_t size = 0;
  std::string code;
  if (cubin) {
    TENEX_CUDA_CALL(nvrtc, nvrtcGetCUBINSize(program, &size));
    code.resize(size);
    TENEX_CUDA_CALL(nvrtc, nvrtcGetCUBIN(program, code.data()));
  } else {
    TENEX_CUDA_CALL(nvrtc, nvrtcGetPTXSize(program, &size));
    code.resize(size);
    TENEX_CUDA_CALL(nvrtc, nvrtcGetPTX(program, code.data()));
  }
  return code;
}

KernelHandle kernel(const std::string& source, const char* entry) {
  Programs& p = programs();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto it = p.by_source.find(source);
  if (it == p.by_source.end()) {
    if (p.arch.empty()) {
      int device = 0, major = 0, minor = 0;
      TENEX_CUDA_CALL(runtime, cudaGetDevice(&device));
      TENEX_CUDA_CALL(runtime, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
      TENEX_CUDA_CALL(runtime, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
      p.arch = "sm_" + std::to_string(major * 10 + minor);
    }
    const std::string code = compile(source, p.arch, true);
    Program program;
    TENEX_CUDA_CALL(runtime,
                    cudaLibraryLoadData(&program.library, code.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    it = p.by_source.emplace(source, std::move(program)).first;
  }
  Program& program = it->second;
  auto k = program.kernels.find(entry);
  if (k == program.kernels.end()) {
    cudaKernel_t handle = nullptr;
    TENEX_CUDA_CALL(runtime, cudaLibraryGetKernel(&handle, program.library, entry));
    k = program.kernels.emplace(entry, handle).first;
  }
  return reinterpret_cast<KernelHandle>(k->second);
}

CachingAllocator& allocator() {
  static CachingAllocator* a = new CachingAllocator(
      DeviceMemory{&device_allocate, &device_free, &make_fence, &fence_passed, &drop_fence, &wait_all});
  return *a;  // never destroyed: results may be freed at exit
}

std::size_t streams_per_backend() {
  static const std::size_t n = [] {
    const char* text = setting(Setting::cuda_streams);
    if (!text || !*text) return std::size_t{4};
    const long value = std::strtol(text, nullptr, 10);
    return value < 1 ? std::size_t{1} : value > 16 ? std::size_t{16} : static_cast<std::size_t>(value);
  }();
  return n;
}

Lanes* borrow_lanes() {
  StreamRegistry& r = streams();
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.free_lanes.empty()) {
      Lanes* lanes = r.free_lanes.back().release();
      r.free_lanes.pop_back();
      return lanes;
    }
  }
  auto lanes = std::make_unique<Lanes>();
  const std::size_t n = streams_per_backend();
  for (std::size_t i = 0; i < n; ++i) {
    cudaStream_t stream = nullptr;
    TENEX_CUDA_CALL(runtime, cudaStreamCreate(&stream));  // blocking: cudaMemcpy on the legacy stream waits for it
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      r.streams.push_back(stream);
    }
    lanes->streams.push_back(stream);
    cublasHandle_t blas = nullptr;
    TENEX_CUDA_CALL(cublas, cublasCreate(&blas));
    TENEX_CUDA_CALL(cublas, cublasSetStream(blas, stream));
    lanes->blas.push_back(blas);
    cusolverDnHandle_t solver = nullptr;
    TENEX_CUDA_CALL(cusolver, cusolverDnCreate(&solver));
    TENEX_CUDA_CALL(cusolver, cusolverDnSetStream(solver, stream));
    lanes->solver.push_back(solver);
  }
  return lanes.release();
}

void return_lanes(Lanes* lanes) noexcept {
  if (!lanes) return;
  StreamRegistry& r = streams();
  std::lock_guard<std::mutex> lock(r.mutex);
  try {
    r.free_lanes.emplace_back(lanes);
  } catch (...) {
    // Kept alive on purpose (its streams are in the registry): a few handles leak rather than
    // a destructor throwing.
  }
}

Traffic traffic() { return {bytes_to_device.load(), bytes_to_host.load()}; }
void count_to_device(std::size_t bytes) { bytes_to_device.fetch_add(bytes); }
void count_to_host(std::size_t bytes) { bytes_to_host.fetch_add(bytes); }

}  // namespace tenex::detail::cuda
