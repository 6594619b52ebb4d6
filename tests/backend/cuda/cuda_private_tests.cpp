// The CUDA backend's parts that need no device (tenex_cuda_tests, compiled from their
// sources): the checking wrapper's messages, the caching allocator's bookkeeping on a fake
// device, the GEMM layout planner, and the generated kernel sources, every one of which is
// compiled to PTX by NVRTC (which runs without a device) for compute_90.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "tenex/backend/cuda/allocator.hpp"
#include "tenex/backend/cuda/check.hpp"
#include "tenex/backend/cuda/codegen.hpp"
#include "tenex/backend/cuda/contraction_layout.hpp"
#include "tenex/backend/cuda/device.hpp"
#include "tenex/error.hpp"

namespace cuda = tenex::detail::cuda;
using tenex::FusedInstr;
using tenex::FusedOp;
using tenex::ReduceOp;

namespace {

// ---- the checking wrapper ---------------------------------------------------------------

TEST_CASE("cuda check: a failed call is a BackendError naming the call and the status") {
  // 2 is cudaErrorMemoryAllocation, CUBLAS_STATUS_NOT_INITIALIZED is 1, CUSOLVER_STATUS_INVALID_VALUE 3,
  // NVRTC_ERROR_COMPILATION 6.
  CHECK_NOTHROW(cuda::check(cuda::Library::runtime, 0, "cudaFree(p)"));
  CHECK_THROWS_WITH_AS(TENEX_CUDA_CALL(runtime, 2),
                       "tenex: CUDA: 2 failed with cudaErrorMemoryAllocation: out of memory; the device is out of "
                       "memory: free tensors, evaluate smaller sets (set_memory_limit) or use TENEX_BACKEND=cpu",
                       tenex::BackendError);
  const std::string malloc_text = cuda::failure_message(cuda::Library::runtime, 2, "cudaMalloc(&data, 64)");
  CHECK(malloc_text.find("cudaMalloc(&data, 64) failed with cudaErrorMemoryAllocation") != std::string::npos);
  CHECK(cuda::out_of_memory(cuda::Library::runtime, 2));
  CHECK_FALSE(cuda::out_of_memory(cuda::Library::runtime, 1));
  const std::string blas = cuda::failure_message(cuda::Library::cublas, 1, "cublasCreate(&handle)");
  CHECK(blas.find("tenex: cuBLAS: cublasCreate(&handle) failed with CUBLAS_STATUS_NOT_INITIALIZED") == 0);
  const std::string solver = cuda::failure_message(cuda::Library::cusolver, 3, "cusolverDnDpotrf(...)");
  CHECK(solver ==
        "tenex: cuSOLVER: cusolverDnDpotrf(...) failed with CUSOLVER_STATUS_INVALID_VALUE: an "
        "unsupported value or parameter");
  CHECK(cuda::failure_message(cuda::Library::cusolver, 999, "x") ==
        "tenex: cuSOLVER: x failed with cuSOLVER status 999");
  CHECK(cuda::out_of_memory(cuda::Library::cusolver, 2));  // CUSOLVER_STATUS_ALLOC_FAILED
  const std::string nvrtc = cuda::failure_message(cuda::Library::nvrtc, 6, "nvrtcCompileProgram(p, 3, o)");
  CHECK(nvrtc.find("tenex: NVRTC: nvrtcCompileProgram(p, 3, o) failed with NVRTC_ERROR_COMPILATION") == 0);
  // No device: the message says what to do.
  const std::string none = cuda::failure_message(cuda::Library::runtime, 100, "cudaGetDeviceCount(&n)");
  CHECK(none.find("cudaErrorNoDevice") != std::string::npos);
  CHECK(none.find("use TENEX_BACKEND=cpu or auto") != std::string::npos);
}

TEST_CASE("cuda device: availability is asked once and explained") {
  if (cuda::device_available()) {
    MESSAGE("a CUDA device exists: the no-device message is not checked");
    CHECK(cuda::unavailable_reason().empty());
  } else {
    MESSAGE("no CUDA device here: ", cuda::unavailable_reason());
    CHECK(cuda::unavailable_reason().find("no CUDA device") == 0);
  }
  CHECK(cuda::device_available() == cuda::device_available());
}

// ---- the caching allocator on a fake device -----------------------------------------------

struct FakeDevice {
  static inline std::size_t capacity = 0, used = 0, mallocs = 0, frees = 0, waits = 0;
  static inline std::map<void*, std::size_t> blocks;
  static inline std::set<void*> fences_pending;
  static inline int next_fence = 1;
  static void reset(std::size_t cap) {
    capacity = cap;
    used = mallocs = frees = waits = 0;
    blocks.clear();
    fences_pending.clear();
  }
  static void* allocate(std::size_t bytes) {
    if (used + bytes > capacity) return nullptr;
    void* p = std::malloc(bytes);
    used += bytes;
    ++mallocs;
    blocks[p] = bytes;
    return p;
  }
  static void free(void* p) noexcept {
    used -= blocks[p];
    blocks.erase(p);
    ++frees;
    std::free(p);
  }
  static void* fence() noexcept {
    void* f = reinterpret_cast<void*>(static_cast<std::uintptr_t>(next_fence++));
    fences_pending.insert(f);
    return f;
  }
  static bool passed(void* f) noexcept { return fences_pending.count(f) == 0; }
  static void drop(void*) noexcept {}
  static void wait_all() noexcept {
    ++waits;
    fences_pending.clear();
  }
  static cuda::DeviceMemory memory() {
    return {&FakeDevice::allocate, &FakeDevice::free, &FakeDevice::fence,
            &FakeDevice::passed,   &FakeDevice::drop, &FakeDevice::wait_all};
  }
};

TEST_CASE("cuda allocator: size classes") {
  CHECK(cuda::CachingAllocator::size_class(0) == 512);
  CHECK(cuda::CachingAllocator::size_class(1) == 512);
  CHECK(cuda::CachingAllocator::size_class(512) == 512);
  CHECK(cuda::CachingAllocator::size_class(513) == 1024);
  CHECK(cuda::CachingAllocator::size_class(1 << 20) == (1 << 20));
  // Beyond 1 MiB: steps of an eighth of the power of two below, so at most 1/8 more.
  CHECK(cuda::CachingAllocator::size_class((1 << 20) + 1) == (1 << 20) + (1 << 17));
  for (std::size_t bytes : {std::size_t{3} << 20, std::size_t{1000000007}, std::size_t{5} << 30}) {
    const std::size_t c = cuda::CachingAllocator::size_class(bytes);
    CHECK(c >= bytes);
    CHECK(c - bytes <= bytes / 8);
  }
  CHECK_THROWS_AS(cuda::CachingAllocator::size_class(~std::size_t{0}), std::bad_alloc);
}

TEST_CASE("cuda allocator: freed blocks wait for their fence, then are reused") {
  FakeDevice::reset(1 << 30);
  {
    cuda::CachingAllocator a(FakeDevice::memory());
    void* p = a.allocate(1000);
    CHECK(a.stats().in_use == 1024);
    CHECK(a.stats().peak == 1024);
    a.free(p, 1000);
    CHECK(a.stats().in_use == 0);
    CHECK(a.stats().cached == 1024);
    // The fence has not passed: a new block.
    void* q = a.allocate(1000);
    CHECK(q != p);
    CHECK(FakeDevice::mallocs == 2);
    FakeDevice::fences_pending.clear();  // the device caught up
    void* r = a.allocate(700);           // same class: the cached block
    CHECK(r == p);
    CHECK(a.stats().reuses == 1);
    CHECK(a.stats().peak == 2048);
    a.reset_peak();
    CHECK(a.stats().peak == 2048);
    a.free(q, 1000);
    a.free(r, 700);
    CHECK(a.stats().in_use == 0);
    a.reset_peak();
    CHECK(a.stats().peak == 0);
    a.release_cached();
    CHECK(a.stats().cached == 0);
    CHECK(FakeDevice::used == 0);
  }
  CHECK(FakeDevice::blocks.empty());
}

TEST_CASE("cuda allocator: out of memory returns the cache, then throws bad_alloc") {
  FakeDevice::reset(4096);
  cuda::CachingAllocator a(FakeDevice::memory());
  void* p = a.allocate(2048);
  a.free(p, 2048);  // cached behind a fence that has not passed
  // 3000 bytes (class 3072) do not fit beside the cached 2048: the cache goes back first.
  void* q = a.allocate(3000);
  CHECK(q != nullptr);
  CHECK(FakeDevice::waits == 1);
  CHECK(a.stats().cached == 0);
  CHECK_THROWS_AS(a.allocate(2048), std::bad_alloc);
  CHECK(a.stats().in_use == 3072);
  a.free(q, 3000);
  a.release_cached();
  CHECK(FakeDevice::used == 0);
}

// ---- GEMM layout planning -------------------------------------------------------------------

using Labels = std::vector<std::string>;

cuda::GemmPlan plan(const Labels& a, const Labels& b, const Labels& c) {
  const Labels all = {"b", "i", "j", "k", "l", "m"};
  const std::vector<std::size_t> extents = {2, 3, 4, 5, 6, 7};
  return cuda::plan_gemm(a, b, c, all, extents);
}

TEST_CASE("cuda gemm planning: transposes and leading dimensions before any permutation") {
  // c(i,j) = a(i,k) b(k,j): column-major c^T (j x i) = b^T a^T, no transposes.
  auto p = plan({"i", "k"}, {"k", "j"}, {"i", "j"});
  CHECK(cuda::describe(p) == "gemm(N,N) rows=4 cols=3 k=5 ld=4,5,4");
  // a read transposed: c(i,j) = a(k,i) b(k,j).
  p = plan({"k", "i"}, {"k", "j"}, {"i", "j"});
  CHECK(cuda::describe(p) == "gemm(N,T) rows=4 cols=3 k=5 ld=4,3,4");
  // The result transposed: c(j,i) = a(i,k) b(k,j) is computed as c = a b column-major.
  p = plan({"i", "k"}, {"k", "j"}, {"j", "i"});
  CHECK(p.swap);
  CHECK(cuda::describe(p) == "gemm(T,T) rows=3 cols=4 k=5 ld=5,4,3");
  // Two summed labels, in a's order in b too: no permutation.
  p = plan({"i", "k", "l"}, {"k", "l", "j"}, {"i", "j"});
  CHECK(cuda::describe(p) == "gemm(N,N) rows=4 cols=3 k=30 ld=4,30,4");
  // Summed labels in another order in b: b permuted, a read in place.
  p = plan({"i", "k", "l"}, {"l", "k", "j"}, {"i", "j"});
  CHECK(p.b.permute);
  CHECK_FALSE(p.a.permute);
  CHECK(p.b.labels == Labels{"k", "l", "j"});
  // Batch label first everywhere: strided batched GEMM.
  p = plan({"b", "i", "k"}, {"b", "k", "j"}, {"b", "i", "j"});
  CHECK(cuda::describe(p) == "gemm_strided_batched(N,N) rows=4 cols=3 k=5 ld=4,5,4 batch=2");
  CHECK(p.a.batch_stride == 15);
  CHECK(p.b.batch_stride == 20);
  CHECK(p.c.batch_stride == 12);
  // Batch label not leading in the result: c is written to a temporary, then permuted.
  p = plan({"b", "i", "k"}, {"b", "k", "j"}, {"i", "b", "j"});
  CHECK(p.c.permute);
  CHECK(p.c.labels == Labels{"b", "i", "j"});
  // Interleaved result labels: permuted from batch m n.
  p = plan({"i", "l", "k"}, {"k", "j", "m"}, {"i", "j", "l", "m"});
  CHECK(p.c.permute);
  CHECK_FALSE(p.a.permute);
  CHECK_FALSE(p.b.permute);
  CHECK(p.m == 18);
  CHECK(p.n == 28);
  // An outer product: k = 1.
  p = plan({"i"}, {"j"}, {"i", "j"});
  CHECK(p.k == 1);
  CHECK(cuda::describe(p) == "gemm(N,N) rows=4 cols=3 k=1 ld=4,1,4");
  // A dot product into a scalar.
  p = plan({"i", "k"}, {"i", "k"}, {});
  CHECK(p.m == 1);
  CHECK(p.n == 1);
  CHECK(p.k == 15);
}

// ---- kernel sources, compiled by NVRTC ------------------------------------------------------

/// Compiles `source` to PTX for compute_90 (no device needed); returns the PTX.
std::string ptx_of(const std::string& source) {
  std::string ptx;
  INFO(source);
  REQUIRE_NOTHROW(ptx = cuda::compile(source, "compute_90", false));
  return ptx;
}

TEST_CASE("cuda codegen: program constants and what cannot run on the device") {
  const std::vector<FusedInstr> program = {{FusedOp::load, 0},
                                           {FusedOp::constant, 0, 0, 2.5},
                                           {FusedOp::multiply, 0, 1},
                                           {FusedOp::power, 2, 0, 3.0},
                                           {FusedOp::clamp, 3, 0, -1, 1}};
  CHECK(cuda::program_constants(program) == std::vector<double>{2.5, 3.0, -1.0, 1.0});
  CHECK(cuda::unsupported_program(program, 1).empty());
  std::vector<FusedInstr> with_call = program;
  with_call.push_back({FusedOp::call, 4, 0});
  CHECK(cuda::unsupported_program(with_call, 1) ==
        "it calls a C++ function of tenex::map, which runs on the host only");
  std::vector<FusedInstr> many(40, FusedInstr{FusedOp::constant, 0, 0, 1.0});
  CHECK(cuda::unsupported_program(many, 0).find("40 constants") != std::string::npos);
  CHECK(cuda::unsupported_program(program, 9).find("reads 9 operands") != std::string::npos);
  CHECK(cuda::exact_literal(0.1) == "0x1.999999999999ap-4");
}

TEST_CASE("cuda codegen: every generated source compiles with NVRTC (compute_90 PTX)") {
  const auto options = cuda::nvrtc_options("compute_90");
  CHECK(options.front() == "--gpu-architecture=compute_90");
  // Every instruction of the fused program language, in one program per type.
  std::vector<FusedInstr> all = {{FusedOp::load, 0}, {FusedOp::load, 1}, {FusedOp::constant, 0, 0, 0.5}};
  const FusedOp binary[] = {FusedOp::add,    FusedOp::subtract, FusedOp::multiply,
                            FusedOp::divide, FusedOp::maximum,  FusedOp::minimum};
  for (FusedOp op : binary) all.push_back({op, static_cast<std::uint32_t>(all.size() - 1), 1});
  const FusedOp unary[] = {FusedOp::negate, FusedOp::exp,    FusedOp::log,       FusedOp::sqrt,
                           FusedOp::abs,    FusedOp::square, FusedOp::sin,       FusedOp::cos,
                           FusedOp::tanh,   FusedOp::sign,   FusedOp::reciprocal};
  for (FusedOp op : unary) all.push_back({op, static_cast<std::uint32_t>(all.size() - 1)});
  all.push_back({FusedOp::power, static_cast<std::uint32_t>(all.size() - 1), 0, 1.5});
  all.push_back({FusedOp::clamp, static_cast<std::uint32_t>(all.size() - 1), 0, -2.0, 2.0});
  for (bool is_double : {false, true}) {
    CAPTURE(is_double);
    // Each reduction, with and without summed modes, accumulating or not.
    for (ReduceOp reduce : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
      cuda::StridedSpec spec;
      spec.program = all;
      spec.reduce = reduce;
      spec.operands = 2;
      spec.out_rank = 2;
      spec.red_rank = reduce == ReduceOp::sum ? 0 : 1;
      spec.accumulate = reduce == ReduceOp::sum;
      spec.is_double = is_double;
      const std::string ptx = ptx_of(cuda::strided_source(spec));
      CHECK(ptx.find(".entry tenex_strided_thread") != std::string::npos);
      CHECK(ptx.find(".entry tenex_strided_block") != std::string::npos);
      // The program's division, in the type of the set (IEEE division: no fast math).
      CHECK(ptx.find(is_double ? "div.rn.f64" : "div.rn.f32") != std::string::npos);
    }
    // The ranks the backend generates: a copy at every output rank, a sum at every summed rank.
    for (int rank : {0, 1, cuda::max_rank}) {
      cuda::StridedSpec spec;
      spec.program = {{FusedOp::load, 0}};
      spec.operands = 1;
      spec.out_rank = rank;
      spec.red_rank = cuda::max_rank - rank;
      spec.is_double = is_double;
      ptx_of(cuda::strided_source(spec));
    }
    CHECK(ptx_of(cuda::transpose_source(is_double)).find(".entry tenex_transpose") != std::string::npos);
    const std::string utility = ptx_of(cuda::utility_source(is_double));
    for (const char* entry :
         {"tenex_set_identity", "tenex_apply_mask", "tenex_zero_triangle", "tenex_fix_signs", "tenex_fix_qr"}) {
      CHECK_MESSAGE(utility.find(std::string(".entry ") + entry) != std::string::npos, entry);
    }
  }
}

TEST_CASE("cuda codegen: the source depends on the structure, not on constants") {
  cuda::StridedSpec a;
  a.program = {{FusedOp::load, 0}, {FusedOp::constant, 0, 0, 2.0}, {FusedOp::multiply, 0, 1}};
  a.operands = 1;
  a.out_rank = 2;
  cuda::StridedSpec b = a;
  b.program[1].x = 3.0;
  CHECK(cuda::strided_source(a) == cuda::strided_source(b));
  b.out_rank = 3;
  CHECK(cuda::strided_source(a) != cuda::strided_source(b));
  // The argument layout is the one the source declares.
  const std::string source = cuda::strided_source(a);
  CHECK(source.find("double constant[MAX_CONSTANTS];") != std::string::npos);
  CHECK(sizeof(cuda::StridedArgs) <= 4096);  // cudaLaunchKernel's parameter space
  CHECK(sizeof(cuda::TransposeArgs) <= 4096);
}

TEST_CASE("cuda codegen: a source that does not compile is a BackendError with NVRTC's log") {
  CHECK_THROWS_AS(cuda::compile("extern \"C\" __global__ void k() { undefined_thing(); }", "compute_90", false),
                  tenex::BackendError);
  try {
    cuda::compile("extern \"C\" __global__ void k() { undefined_thing(); }", "compute_90", false);
  } catch (const tenex::BackendError& e) {
    const std::string what = e.what();
    CHECK(what.find("NVRTC_ERROR_COMPILATION") != std::string::npos);
    CHECK(what.find("undefined_thing") != std::string::npos);
  }
}

}  // namespace
