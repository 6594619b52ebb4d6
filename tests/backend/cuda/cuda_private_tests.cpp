// The CUDA backend's parts that need no device (tenex_cuda_tests, compiled from their
// sources): the checking wrapper's messages, the caching allocator's bookkeeping on a fake
// device, the GEMM layout planner, and the generated kernel sources, every one of which is
// compiled to PTX by NVRTC (which runs without a device) for compute_90.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <random>
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
  // The cheaper of the result's orders and the operands': permuting the small result beats
  // permuting the large operand.
  p = plan({"i", "j", "m"}, {"m", "b"}, {"j", "i", "b"});
  CHECK(p.c.permute);
  CHECK_FALSE(p.a.permute);
  p = plan({"i", "j", "b"}, {"b", "m"}, {"j", "i", "m"});
  CHECK(p.a.permute);
  CHECK_FALSE(p.c.permute);
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

// The plan executed on the host the way the backend hands it to cuBLAS (column-major
// gemm with ops, leading dimensions and batch strides, permutations by label), against a
// naive einsum: random contractions of every layout class.

/// Row-major `in` (labels, extents by label) rearranged to `to` labels.
std::vector<double> permute(const std::vector<double>& in, const Labels& from, const Labels& to,
                            const std::map<std::string, std::size_t>& extent) {
  std::size_t n = 1;
  for (const auto& x : to) n *= extent.at(x);
  std::vector<double> out(n);
  std::vector<std::size_t> idx(to.size(), 0);
  for (std::size_t flat = 0; flat < n; ++flat) {
    std::size_t src = 0;
    for (const auto& x : from) {
      const std::size_t d = static_cast<std::size_t>(std::find(to.begin(), to.end(), x) - to.begin());
      src = src * extent.at(x) + idx[d];
    }
    out[flat] = in[src];
    for (std::size_t d = to.size(); d-- > 0;) {
      if (++idx[d] < extent.at(to[d])) break;
      idx[d] = 0;
    }
  }
  return out;
}

/// cuBLAS's gemm, column-major: C (rows x cols) = op(A) op(B), batched with strides.
void gemm(bool ta, bool tb, long long rows, long long cols, long long k, const double* a, long long lda, long long sa,
          const double* b, long long ldb, long long sb, double* c, long long ldc, long long sc, long long batch) {
  // cuBLAS's rules for the leading dimensions.
  CHECK(lda >= std::max(1LL, ta ? k : rows));
  CHECK(ldb >= std::max(1LL, tb ? cols : k));
  CHECK(ldc >= std::max(1LL, rows));
  for (long long p = 0; p < batch; ++p) {
    for (long long i = 0; i < rows; ++i) {
      for (long long j = 0; j < cols; ++j) {
        double sum = 0;
        for (long long l = 0; l < k; ++l) {
          const double x = ta ? a[p * sa + i * lda + l] : a[p * sa + l * lda + i];
          const double y = tb ? b[p * sb + l * ldb + j] : b[p * sb + j * ldb + l];
          sum += x * y;
        }
        c[p * sc + j * ldc + i] = sum;
      }
    }
  }
}

TEST_CASE("cuda gemm planning: the planned cuBLAS calls compute the contraction (random cases)") {
  std::mt19937 rng(7);
  const Labels pool = {"a", "b", "c", "d", "e", "f", "g"};
  for (int trial = 0; trial < 300; ++trial) {
    // Each label: batch, m, n or k (or unused); random orders of each tensor's labels.
    Labels la, lb, lc;
    std::map<std::string, std::size_t> extent;
    for (const auto& x : pool) {
      const int role = static_cast<int>(rng() % 5);
      extent[x] = 1 + rng() % 3;
      if (role == 0 || role == 1) la.push_back(x);               // batch or m
      if (role == 0 || role == 2) lb.push_back(x);               // batch or n
      if (role == 0 || role == 1 || role == 2) lc.push_back(x);  // result
      if (role == 3) {                                           // k
        la.push_back(x);
        lb.push_back(x);
      }
    }
    std::shuffle(la.begin(), la.end(), rng);
    std::shuffle(lb.begin(), lb.end(), rng);
    std::shuffle(lc.begin(), lc.end(), rng);
    // Batch labels often lead everywhere (the in-place batched case).
    if (trial % 3 == 0) {
      auto lead = [&](Labels& l) {
        std::stable_partition(l.begin(), l.end(), [&](const std::string& x) {
          return std::count(la.begin(), la.end(), x) && std::count(lb.begin(), lb.end(), x) &&
                 std::count(lc.begin(), lc.end(), x);
        });
      };
      lead(la);
      lead(lb);
      lead(lc);
    }
    auto size_of = [&](const Labels& l) {
      std::size_t n = 1;
      for (const auto& x : l) n *= extent[x];
      return n;
    };
    std::vector<double> a(size_of(la)), b(size_of(lb));
    for (double& x : a) x = static_cast<double>(rng() % 7) - 3;
    for (double& x : b) x = static_cast<double>(rng() % 7) - 3;
    // Naive: c = sum over k of a b.
    Labels all = la;
    for (const auto& x : lb) {
      if (!std::count(all.begin(), all.end(), x)) all.push_back(x);
    }
    std::vector<double> expected(size_of(lc), 0.0);
    std::vector<std::size_t> idx(all.size(), 0);
    const std::size_t points = size_of(all);
    auto flat = [&](const Labels& l) {
      std::size_t f = 0;
      for (const auto& x : l) f = f * extent[x] + idx[std::find(all.begin(), all.end(), x) - all.begin()];
      return f;
    };
    for (std::size_t p = 0; p < points; ++p) {
      expected[flat(lc)] += a[flat(la)] * b[flat(lb)];
      for (std::size_t d = all.size(); d-- > 0;) {
        if (++idx[d] < extent[all[d]]) break;
        idx[d] = 0;
      }
    }
    // Planned.
    std::vector<std::size_t> extents;
    for (const auto& x : all) extents.push_back(extent[x]);
    const cuda::GemmPlan plan = cuda::plan_gemm(la, lb, lc, all, extents);
    INFO(cuda::describe(plan));
    const std::vector<double> pa = plan.a.permute ? permute(a, la, plan.a.labels, extent) : a;
    const std::vector<double> pb = plan.b.permute ? permute(b, lb, plan.b.labels, extent) : b;
    std::vector<double> c(static_cast<std::size_t>(plan.m * plan.n * plan.batch));
    const cuda::GemmOperand& first = plan.swap ? plan.a : plan.b;
    const cuda::GemmOperand& second = plan.swap ? plan.b : plan.a;
    gemm(first.transpose, second.transpose, plan.rows, plan.cols, plan.k, (plan.swap ? pa : pb).data(), first.ld,
         first.batch_stride, (plan.swap ? pb : pa).data(), second.ld, second.batch_stride, c.data(), plan.c.ld,
         plan.c.batch_stride, plan.batch);
    if (plan.c.permute) c = permute(c, plan.c.labels, lc, extent);
    CHECK(c == expected);
  }
}

// ---- the strided and tiled kernels' arguments, run by host emulators of the kernels ----------

/// What tenex_strided_thread computes (codegen.cpp), on the host: the program interpreted.
std::vector<double> run_strided(const cuda::StridedSpec& spec, const cuda::StridedArgs& a,
                                const std::vector<const std::vector<double>*>& in) {
  std::vector<double> out(static_cast<std::size_t>(a.out_total));
  const std::vector<double> constants = cuda::program_constants(spec.program);
  auto value = [&](const std::vector<long long>& off) {
    std::vector<double> v;
    std::size_t c = 0;
    for (const FusedInstr& i : spec.program) {
      switch (i.op) {
        case FusedOp::load: v.push_back((*in[i.a])[static_cast<std::size_t>(off[i.a])]); break;
        case FusedOp::constant: v.push_back(constants[c++]); break;
        case FusedOp::add: v.push_back(v[i.a] + v[i.b]); break;
        case FusedOp::multiply: v.push_back(v[i.a] * v[i.b]); break;
        case FusedOp::subtract: v.push_back(v[i.a] - v[i.b]); break;
        default: FAIL("the emulator lacks ", static_cast<int>(i.op));
      }
    }
    return v.back();
  };
  for (long long p = 0; p < a.out_total; ++p) {
    std::vector<long long> base(static_cast<std::size_t>(spec.operands));
    for (int k = 0; k < spec.operands; ++k) base[k] = a.offset[k];
    long long rem = p;
    for (int d = spec.out_rank - 1; d >= 0; --d) {
      const long long i = rem % a.out_extent[d];
      rem /= a.out_extent[d];
      for (int k = 0; k < spec.operands; ++k) base[k] += i * a.stride[k][d];
    }
    double acc = 0;
    if (spec.red_rank == 0) {
      acc = value(base);
    } else {
      for (long long r = 0; r < a.red_total; ++r) {
        std::vector<long long> off = base;
        long long rr = r;
        for (int d = spec.red_rank - 1; d >= 0; --d) {
          const long long i = rr % a.red_extent[d];
          rr /= a.red_extent[d];
          for (int k = 0; k < spec.operands; ++k) off[k] += i * a.red_stride[k][d];
        }
        acc += value(off);
      }
    }
    out[static_cast<std::size_t>(p)] = acc;
  }
  return out;
}

/// What tenex_transpose computes, on the host.
std::vector<double> run_transpose(const cuda::TransposeArgs& a, const std::vector<double>& in, std::size_t n) {
  std::vector<double> out(n, -1.0);
  for (long long rest = 0; rest < a.rest_total; ++rest) {
    long long in_base = 0, out_base = 0, r = rest;
    for (long long d = a.rest_rank - 1; d >= 0; --d) {
      const long long i = r % a.rest_extent[d];
      r /= a.rest_extent[d];
      in_base += i * a.rest_in[d];
      out_base += i * a.rest_out[d];
    }
    for (long long q = 0; q < a.extent_q; ++q) {
      for (long long l = 0; l < a.extent_l; ++l) {
        out[static_cast<std::size_t>(out_base + l + q * a.out_stride_q)] =
            in[static_cast<std::size_t>(in_base + q + l * a.in_stride_l)];
      }
    }
  }
  return out;
}

/// The naive value of out(out_labels) = sum over the other labels of prod(operands), with
/// operand k read at offset + its row-major index (its labels' extents from `extent_of`).
std::vector<double> naive(const std::vector<cuda::StridedOperand>& ops,
                          const std::vector<const std::vector<double>*>& in, const Labels& out_labels,
                          const std::vector<std::size_t>& out_extents, bool product) {
  Labels all = out_labels;
  std::vector<std::size_t> extents = out_extents;
  for (const auto& op : ops) {
    for (std::size_t p = 0; p < op.labels.size(); ++p) {
      if (!std::count(all.begin(), all.end(), op.labels[p])) {
        all.push_back(op.labels[p]);
        extents.push_back(op.extents[p]);
      }
    }
  }
  std::size_t out_n = 1, points = 1;
  for (std::size_t e : out_extents) out_n *= e;
  for (std::size_t e : extents) points *= e;
  std::vector<double> out(out_n, 0.0);
  std::vector<std::size_t> idx(all.size(), 0);
  for (std::size_t p = 0; p < points; ++p) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < out_labels.size(); ++d) o = o * out_extents[d] + idx[d];
    double v = product ? 1.0 : 0.0;
    for (std::size_t k = 0; k < ops.size(); ++k) {
      std::size_t f = 0;
      for (std::size_t q = 0; q < ops[k].labels.size(); ++q) {
        f = f * ops[k].extents[q] + idx[std::find(all.begin(), all.end(), ops[k].labels[q]) - all.begin()];
      }
      const double x = (*in[k])[static_cast<std::size_t>(ops[k].offset) + f];
      v = product ? v * x : v + x;
    }
    out[o] += v;
    for (std::size_t d = all.size(); d-- > 0;) {
      if (++idx[d] < extents[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

std::vector<double> iota(std::size_t n) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i % 97) - 40.0;
  return v;
}

TEST_CASE("cuda kernels: permutations, sums, diagonals and broadcasts laid out for the strided kernel") {
  struct Case {
    std::vector<cuda::StridedOperand> ops;
    Labels out;
    std::vector<std::size_t> extents;
    bool product;  // the program multiplies the operands (else adds them)
  };
  const std::vector<Case> cases = {
      {{{{"i", "j", "k"}, {2, 3, 4}, 0}}, {"j", "i", "k"}, {3, 2, 4}, true},                  // keeps the fastest mode
      {{{{"i", "j", "k"}, {2, 3, 4}, 0}}, {"k", "j", "i"}, {4, 3, 2}, true},                  // moves it
      {{{{"i", "i", "j"}, {3, 3, 2}, 0}}, {"i", "j"}, {3, 2}, true},                          // diagonal
      {{{{"i", "i"}, {5, 5}, 0}}, {}, {}, true},                                              // trace
      {{{{"i", "j", "k"}, {2, 3, 4}, 0}}, {"j"}, {3}, true},                                  // sum over modes
      {{{{"a", "b", "c", "d"}, {2, 2, 3, 2}, 0}}, {"a", "b", "c", "d"}, {2, 2, 3, 2}, true},  // merged to 1 mode
      {{{{"i", "j"}, {3, 4}, 0}, {{"j"}, {4}, 0}}, {"i", "j"}, {3, 4}, false},                // broadcast add
      {{{{"i", "j"}, {3, 4}, 0}, {{"j", "i"}, {4, 3}, 0}}, {"i"}, {3}, true},                 // a dot product per row
      {{{{"m0", "m1"}, {5, 6}, 8}}, {"m0", "m1"}, {2, 3}, true},                              // slice [1, 3) x [2, 5)
      {{{{"m0", "m1", "m2"}, {3, 4, 5}, 10}}, {"m0", "m1", "m2"}, {3, 1, 5}, true},           // chip of mode 1 at 2
      {{{{"i", "j"}, {200, 300}, 0}}, {}, {}, true},                                          // by block
  };
  for (const Case& c : cases) {
    std::vector<std::vector<double>> data;
    std::vector<const std::vector<double>*> in;
    for (const auto& op : c.ops) {
      std::size_t n = 1;
      for (std::size_t e : op.extents) n *= e;
      data.push_back(iota(n + 16));
    }
    for (const auto& d : data) in.push_back(&d);
    cuda::StridedSpec spec;
    cuda::StridedArgs args;
    cuda::plan_strided(c.ops, c.out, c.extents, spec, args);
    spec.program = {{FusedOp::load, 0}};
    if (c.ops.size() == 2) {
      spec.program = {{FusedOp::load, 0}, {FusedOp::load, 1}, {c.product ? FusedOp::multiply : FusedOp::add, 0, 1}};
    }
    const std::vector<double> expected = naive(c.ops, in, c.out, c.extents, c.product);
    CHECK(run_strided(spec, args, in) == expected);
    CHECK(spec.out_rank <= static_cast<int>(c.out.size()));
    cuda::TransposeArgs t;
    if (cuda::plan_transpose(c.ops[0], c.out, c.extents, t)) {
      CHECK(run_transpose(t, data[0], expected.size()) == expected);
    }
  }
  // The four-mode copy merges into one mode; a trace into one summed mode with stride n + 1.
  cuda::StridedSpec spec;
  cuda::StridedArgs args;
  cuda::plan_strided({{{"a", "b", "c", "d"}, {2, 2, 3, 2}, 0}}, {"a", "b", "c", "d"}, {2, 2, 3, 2}, spec, args);
  CHECK(spec.out_rank == 1);
  cuda::plan_strided({{{"i", "i"}, {5, 5}, 0}}, {}, {}, spec, args);
  CHECK(spec.red_rank == 1);
  CHECK(args.red_stride[0][0] == 6);
  CHECK(cuda::strided_by_block(args) == false);
  cuda::plan_strided({{{"i", "j"}, {200, 300}, 0}}, {}, {}, spec, args);
  CHECK(cuda::strided_by_block(args));
  CHECK(cuda::strided_splits(args) == 3);  // 60,000 points: 3 blocks of at least 64 points a thread
  cuda::plan_strided({{{"i", "j"}, {100, 100}, 0}}, {}, {}, spec, args);
  CHECK(cuda::strided_splits(args) == 1);  // 10,000 points: one block does them
  // A dot product of 2^26 points: split over many blocks (not one block of 256 threads).
  cuda::plan_strided({{{"i"}, {std::size_t{1} << 26}, 0}, {{"i"}, {std::size_t{1} << 26}, 0}}, {}, {}, spec, args);
  CHECK(cuda::strided_splits(args) >= 1024);
  CHECK(cuda::strided_splits(args) <= 4096);
  // Into 3 values: each split about a third as often; into 20,000 values: none.
  cuda::plan_strided({{{"j", "i"}, {3, std::size_t{1} << 24}, 0}}, {"j"}, {3}, spec, args);
  CHECK(cuda::strided_splits(args) > 100);
  CHECK(cuda::strided_splits(args) * 3 <= 2048 + 3);
  cuda::plan_strided({{{"j", "i"}, {20000, 4096}, 0}}, {"j"}, {20000}, spec, args);
  CHECK(cuda::strided_splits(args) == 1);
  // Batches of tiny products run on the strided kernel; a product worth a GEMM call on cuBLAS.
  CHECK(cuda::tiny_batched_product(1, 1, 1, 1 << 26));  // a Hadamard product
  CHECK(cuda::tiny_batched_product(2, 2, 2, 1000));
  CHECK_FALSE(cuda::tiny_batched_product(1, 1, 1, 1));  // no batch: one call anyway
  CHECK_FALSE(cuda::tiny_batched_product(16, 16, 16, 1000));
  CHECK_FALSE(cuda::tiny_batched_product(1, 1, 0, 1000));  // nothing summed: zeros, no kernel
}

TEST_CASE("cuda kernels: the tiled permutation moves every element (random permutations)") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t rank = 2 + rng() % 4;
    Labels in_labels;
    std::vector<std::size_t> in_extents;
    for (std::size_t d = 0; d < rank; ++d) {
      in_labels.push_back(std::string(1, static_cast<char>('a' + d)));
      in_extents.push_back(1 + rng() % 5);
    }
    Labels out_labels = in_labels;
    std::shuffle(out_labels.begin(), out_labels.end(), rng);
    std::vector<std::size_t> out_extents;
    for (const auto& x : out_labels) {
      out_extents.push_back(in_extents[std::find(in_labels.begin(), in_labels.end(), x) - in_labels.begin()]);
    }
    const cuda::StridedOperand op{in_labels, in_extents, 0};
    std::size_t n = 1;
    for (std::size_t e : in_extents) n *= e;
    const std::vector<double> data = iota(n);
    const std::vector<double> expected = naive({op}, {&data}, out_labels, out_extents, true);
    cuda::TransposeArgs t;
    const bool tiled = cuda::plan_transpose(op, out_labels, out_extents, t);
    CHECK(tiled == (in_labels.back() != out_labels.back() && in_extents.back() > 1 && out_extents.back() > 1));
    if (tiled) CHECK(run_transpose(t, data, n) == expected);
    cuda::StridedSpec spec;
    cuda::StridedArgs args;
    cuda::plan_strided({op}, out_labels, out_extents, spec, args);
    spec.program = {{FusedOp::load, 0}};
    CHECK(run_strided(spec, args, {&data}) == expected);
  }
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
  // Every instruction of the fused program language, in one program per type: every function
  // of the table (tenex/graph/functions.hpp), each on the value before it.
  std::vector<FusedInstr> all = {{FusedOp::load, 0}, {FusedOp::load, 1}, {FusedOp::constant, 0, 0, 0.5}};
#define TENEX_TEST_EVERY_FUNCTION(op, name, values, parameters, keeps_zero, scalar, text, cuda_) \
  all.push_back({FusedOp::op, static_cast<std::uint32_t>(all.size() - 1), values == 2 ? 1u : 0u, -2.0, 2.0});
  TENEX_FOR_EACH_FUNCTION(TENEX_TEST_EVERY_FUNCTION)
#undef TENEX_TEST_EVERY_FUNCTION
  // imag of a real value is 0, whatever came before: the last value adds every value since the
  // loads, so that no function is dead code for the compiler.
  const auto functions_end = static_cast<std::uint32_t>(all.size());
  for (std::uint32_t v = 4; v < functions_end; ++v) {
    all.push_back({FusedOp::add, static_cast<std::uint32_t>(all.size() - 1), v});
  }
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
      // The split reduction's two kernels exist where something is reduced.
      CHECK((ptx.find(".entry tenex_strided_split") != std::string::npos) == (spec.red_rank > 0));
      CHECK((ptx.find(".entry tenex_strided_combine") != std::string::npos) == (spec.red_rank > 0));
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

TEST_CASE("cuda codegen: each function of the table is written from its line, and called") {
  int functions = 0;
#define TENEX_TEST_FUNCTION_SOURCE(op, name, values, parameters, keeps_zero, scalar, text, cuda_)                     \
  {                                                                                                                   \
    INFO("function " #op);                                                                                            \
    ++functions;                                                                                                      \
    const std::string definition = cuda::device_function(FusedOp::op);                                                \
    CHECK(definition ==                                                                                               \
          std::string("__device__ __forceinline__ T tenex_" #op "(T a, T b, T x, T y) { return ") + cuda_ + "; }\n"); \
    cuda::StridedSpec spec;                                                                                           \
    spec.program = {{FusedOp::load, 0}, {FusedOp::load, 1}, {FusedOp::op, 0, 1, 0.25, 0.75}};                         \
    spec.operands = 2;                                                                                                \
    spec.out_rank = 1;                                                                                                \
    const std::string source = cuda::strided_source(spec);                                                            \
    CHECK(source.find(definition) != std::string::npos);                                                              \
    /* called on the values it reads and the constants it takes, in StridedArgs::constant order */                    \
    const std::string call = std::string("tenex_" #op "(v0, ") + (values == 2 ? "v1" : "T(0)") + ", " +               \
                             (parameters >= 1 ? "T(a.constant[0])" : "T(0)") + ", " +                                 \
                             (parameters >= 2 ? "T(a.constant[1])" : "T(0)") + ")";                                   \
    CHECK_MESSAGE(source.find(call) != std::string::npos, call, " in\n", source);                                     \
    CHECK(cuda::program_constants(spec.program).size() == static_cast<std::size_t>(parameters));                      \
    /* only the functions the program uses are written */                                                             \
    CHECK(source.find("(T a, T b, T x, T y)") == source.find(definition) + definition.find("(T a"));                  \
    CHECK(source.find("(T a, T b, T x, T y)", source.find(definition) + definition.size()) == std::string::npos);     \
  }
  TENEX_FOR_EACH_FUNCTION(TENEX_TEST_FUNCTION_SOURCE)
#undef TENEX_TEST_FUNCTION_SOURCE
  CHECK(functions >= 20);  // the 19 functions before erf, and erf
  // max and min reductions combine with the table's maximum and minimum (NaN is kept).
  for (ReduceOp reduce : {ReduceOp::max, ReduceOp::min}) {
    const FusedOp op = reduce == ReduceOp::max ? FusedOp::maximum : FusedOp::minimum;
    cuda::StridedSpec spec;
    spec.program = {{FusedOp::load, 0}};
    spec.reduce = reduce;
    spec.operands = 1;
    spec.out_rank = 1;
    spec.red_rank = 1;
    const std::string source = cuda::strided_source(spec);
    CHECK(source.find(cuda::device_function(op)) != std::string::npos);
    CHECK(source.find("{ return " + cuda::device_function_name(op) + "(acc, v, T(0), T(0)); }") != std::string::npos);
  }
  CHECK_THROWS_AS(cuda::device_function(FusedOp::call), tenex::InternalError);
  CHECK_THROWS_AS(cuda::device_function(FusedOp::load), tenex::InternalError);
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
