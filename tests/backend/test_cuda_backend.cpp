// The CUDA backend through the public API. Without a device (or without the backend) the
// selection rules are checked and the device tests skip with a message saying why; with one,
// every case runs on the CPU and on the GPU and the results must agree (float: 1e-4
// relative, double: 1e-10), results stay on the device until read, a set on resident data
// copies nothing, a tenex::map callable runs on the CPU with the reason in explain(), and
// running out of device memory is an error in the results. tests/backend/test_conformance.cpp
// runs every op kind on the GPU as well; scripts/gpu-run runs the whole einsum suite there.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <tenex/config.hpp>
#include <tenex/tenex.hpp>

#include "support/scalars.hpp"

namespace {

using tenex::BackendKind;
using tenex::Shape;
using tenex::Tensor;
using tenex_test::Scalars;

class BackendScope {
 public:
  explicit BackendScope(BackendKind kind) { tenex::set_default_backend(kind); }
  ~BackendScope() { tenex::set_default_backend(BackendKind::automatic); }
  BackendScope(const BackendScope&) = delete;
  BackendScope& operator=(const BackendScope&) = delete;
};

/// Why the device tests skip here ("" when they run).
std::string skip_reason() {
  if (!TENEX_HAS_CUDA) return "the CUDA backend is not built (TENEX_HAS_CUDA=0)";
  if (!tenex::cuda_available()) return "the CUDA backend is built but this machine has no CUDA device";
  return "";
}

template <class T>
Tensor<T> random(const Shape& shape, std::uint64_t seed) {
  Tensor<T> t(shape);
  tenex::fill_random(t, seed);
  return t;
}

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-10;
}

/// Largest |got - expected| relative to the largest |expected| (1 when shapes differ).
template <class T>
double difference(const Tensor<T>& got, const Tensor<T>& expected) {
  if (got.shape() != expected.shape()) return 1.0;
  const auto g = got.to_vector(), e = expected.to_vector();
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    scale = std::max(scale, std::abs(static_cast<double>(e[i])));
    worst = std::max(worst, std::abs(static_cast<double>(g[i]) - static_cast<double>(e[i])));
  }
  return worst / std::max(scale, 1e-30);
}

/// Runs `compute` (which assigns its result) on the CPU and on CUDA; both results agree.
template <class T>
void same_on_both(const std::string& what, const std::function<Tensor<T>()>& compute) {
  INFO(what);
  Tensor<T> on_cpu, on_gpu;
  {
    const BackendScope scope(BackendKind::cpu);
    on_cpu = compute();
    on_cpu.wait();
  }
  {
    const BackendScope scope(BackendKind::cuda);
    on_gpu = compute();
    on_gpu.wait();
  }
  const double d = difference(on_gpu, on_cpu);
  INFO("relative difference ", d);
  CHECK(d <= tolerance<T>());
}

}  // namespace

TEST_CASE("cuda backend: selection without a device") {
  if (tenex::cuda_available()) {
    MESSAGE("a CUDA device exists: automatic picks it");
    CHECK(TENEX_HAS_CUDA == 1);
    return;
  }
  MESSAGE("no CUDA device (", skip_reason(), "): automatic picks the CPU, cuda is an error");
  CHECK_THROWS_WITH_AS(tenex::set_default_backend(BackendKind::cuda), doctest::Contains("no CUDA backend is available"),
                       tenex::BackendError);
  CHECK(tenex::default_backend() == BackendKind::automatic);
  // Automatic runs the set on the CPU.
  auto a = random<double>(Shape{3, 4}, 1);
  Tensor<double> b;
  b("j,i") = 2.0 * a("i,j");
  CHECK(b.at(1, 2) == 2.0 * a.at(2, 1));
  CHECK(tenex::last_run_stats().host_to_device_bytes == 0);
  CHECK(tenex::last_run_stats().device_peak_bytes == 0);
}

TEST_CASE_TEMPLATE_DEFINE("cuda backend: results agree with the CPU", T, cuda_agrees) {
  const std::string why = skip_reason();
  if (!why.empty()) {
    MESSAGE("skipped: ", why);
    return;
  }
  auto a = random<T>(Shape{37, 29}, 11), b = random<T>(Shape{29, 41}, 12), c = random<T>(Shape{5, 6, 7, 8}, 13);
  auto d = random<T>(Shape{8, 7, 9}, 14), v = random<T>(Shape{29}, 15), s = random<T>(Shape{40, 40}, 16);
  auto batch_a = random<T>(Shape{6, 17, 19}, 17), batch_b = random<T>(Shape{6, 19, 23}, 18);
  same_on_both<T>("gemm", [&] {
    Tensor<T> r;
    r("i,j") = a("i,k") * b("k,j");
    return r;
  });
  same_on_both<T>("gemm, transposed result", [&] {
    Tensor<T> r;
    r("j,i") = a("i,k") * b("k,j");
    return r;
  });
  same_on_both<T>("gemm, a transposed", [&] {
    Tensor<T> r;
    r("i,j") = a("k,i") * a("k,j");
    return r;
  });
  same_on_both<T>("two summed labels, permuted operand", [&] {
    Tensor<T> r;
    r("a,i") = c("a,b,k,l") * d("l,k,i");
    return r;
  });
  same_on_both<T>("batch", [&] {
    Tensor<T> r;
    r("b,i,j") = batch_a("b,i,k") * batch_b("b,k,j");
    return r;
  });
  same_on_both<T>("batch not leading", [&] {
    Tensor<T> r;
    r("i,b,j") = batch_a("b,i,k") * batch_b("b,k,j");
    return r;
  });
  same_on_both<T>("outer product", [&] {
    Tensor<T> r;
    r("i,j") = v("i") * v("j");
    return r;
  });
  same_on_both<T>("scaled with an addend", [&] {
    Tensor<T> r = random<T>(Shape{37, 41}, 19);
    r("i,j") += 0.5 * a("i,k") * b("k,j");
    return r;
  });
  same_on_both<T>("permutation (tiled)", [&] {
    Tensor<T> r;
    r("l,b,a,k") = c("a,b,k,l");
    return r;
  });
  same_on_both<T>("permutation (fastest mode stays)", [&] {
    Tensor<T> r;
    r("b,a,l") = c("a,b,k,l");
    return r;
  });
  same_on_both<T>("sum over modes", [&] {
    Tensor<T> r;
    r("b") = c("a,b,k,l");
    return r;
  });
  same_on_both<T>("trace", [&] {
    Tensor<T> r;
    r("") = s("i,i");
    return r;
  });
  same_on_both<T>("diagonal", [&] {
    Tensor<T> r;
    r("i") = s("i,i");
    return r;
  });
  same_on_both<T>("dot product", [&] {
    Tensor<T> r;
    r("") = a("i,j") * a("i,j");
    return r;
  });
  same_on_both<T>("broadcast add", [&] {
    Tensor<T> r;
    r("i,k") = a("i,k") + 2.0 * v("k");
    return r;
  });
  same_on_both<T>("divide", [&] {
    Tensor<T> r;
    r("i,k") = a("i,k") / (3.0 + v("k"));
    return r;
  });
  same_on_both<T>("fused chain", [&] {
    Tensor<T> r;
    r("i,k") = tenex::exp(a("i,k")) * 0.5 - tenex::sqrt(tenex::abs(a("i,k"))) + tenex::tanh(v("k"));
    return r;
  });
  same_on_both<T>("max over a mode", [&] {
    Tensor<T> r;
    r("i") = tenex::max_over(a("i,j"), "j");
    return r;
  });
  same_on_both<T>("slice", [&] {
    Tensor<T> r;
    r("i,j") = tenex::slice(a("i,j"), {3, 4}, {20, 17});
    return r;
  });
  same_on_both<T>("matrix power", [&] {
    Tensor<T> r;
    r("i,j") = tenex::pow(s("i,j"), 5);
    return r;
  });
  // Decompositions: both backends fix the signs the same way.
  auto spd = random<T>(Shape{40, 40}, 20);
  Tensor<T> sym;
  {
    const BackendScope cpu(BackendKind::cpu);
    sym("i,j") = spd("i,k") * spd("j,k");
  }
  for (std::size_t i = 0; i < 40; ++i) sym.data()[i * 40 + i] += T(40);
  same_on_both<T>("cholesky", [&] {
    Tensor<T> r;
    r("i,j") = tenex::cholesky(sym("i,j"));
    return r;
  });
  same_on_both<T>("eigenvalues", [&] {
    Tensor<T> vectors, values;
    std::make_pair(vectors("i,j"), values("j")) = tenex::eigen_solve(sym("i,j"));
    return values;
  });
  same_on_both<T>("qr", [&] {
    Tensor<T> q, r;
    tenex::tie(q("i,k"), r("k,j")) = tenex::qr(a("i,j"));
    return q;
  });
  same_on_both<T>("singular values", [&] {
    auto [u, sv, vt] = tenex::svd(a("i,j"));
    Tensor<T> r;
    r("k") = sv;
    return r;
  });
}
TEST_CASE_TEMPLATE_APPLY(cuda_agrees, Scalars);

TEST_CASE("cuda backend: results stay on the device; a set on resident data copies nothing") {
  const std::string why = skip_reason();
  if (!why.empty()) {
    MESSAGE("skipped: ", why);
    return;
  }
  const BackendScope scope(BackendKind::cuda);
  auto a = random<double>(Shape{64, 64}, 31), b = random<double>(Shape{64, 64}, 32);
  Tensor<double> c;
  c("i,j") = a("i,k") * b("k,j");
  c.wait();  // reads c: copied back once
  const auto first = tenex::last_run_stats();
  CHECK(first.host_to_device_bytes == 2 * 64 * 64 * sizeof(double));
  // Ten statements on resident data: nothing copied during the set.
  Tensor<double> r[10];
  for (int k = 0; k < 10; ++k) r[k]("i,j") = (k + 1.0) * a("i,k") * b("k,j") + c("i,j");
  r[9].wait();
  const auto resident = tenex::last_run_stats();
  CHECK(resident.host_to_device_bytes == 0);
  CHECK(resident.device_to_host_bytes == 0);
  CHECK(resident.device_peak_bytes > 0);
  CHECK(std::abs(r[9].at(3, 4) - (10.0 * (c.at(3, 4)) + c.at(3, 4))) < 1e-9);
}

TEST_CASE_TEMPLATE("cuda backend: long reductions into few values (split over many blocks) agree with the CPU", T,
                   float, double) {
  const std::string why = skip_reason();
  if (!why.empty()) {
    MESSAGE("skipped: ", why);
    return;
  }
  // 2^22 points: each output value's reduction is split over many blocks and combined.
  const std::size_t n = std::size_t{1} << 22;
  auto a = random<T>(Shape{n}, 41), b = random<T>(Shape{n}, 42), m = random<T>(Shape{3, n / 4}, 43);
  same_on_both<T>("sum into a scalar", [&] {
    Tensor<T> r;
    r("") = tenex::sum(a("i"), "i");
    return r;
  });
  same_on_both<T>("a fused chain summed into a scalar", [&] {
    Tensor<T> r;
    r("") = tenex::exp(a("i")) - b("i");
    return r;
  });
  same_on_both<T>("a dot product", [&] {
    Tensor<T> r;
    r("") = a("i") * b("i");
    return r;
  });
  same_on_both<T>("a Hadamard product (batch labels only), scaled and accumulated", [&] {
    Tensor<T> r = random<T>(Shape{n}, 45);
    r("i") += T(0.5) * a("i") * b("i");
    return r;
  });
  auto v = random<T>(Shape{n / 4}, 46);
  same_on_both<T>("a batch-only product of three factors, one broadcast", [&] {
    Tensor<T> q;
    q("j,i") = m("j,i") * v("i") * tenex::exp(v("i"));
    return q;
  });
  same_on_both<T>("a Hadamard product of operands in different orders (read in place)", [&] {
    auto x = random<T>(Shape{1024, 512}, 49), y = random<T>(Shape{512, 1024}, 50);
    Tensor<T> z;
    z("i,j") = x("i,j") * y("j,i");
    return z;
  });
  same_on_both<T>("a batch of 2 x 2 products", [&] {
    auto x = random<T>(Shape{n / 16, 2, 2}, 47), y = random<T>(Shape{n / 16, 2, 2}, 48);
    Tensor<T> z;
    z("b,i,j") = x("b,i,k") * y("b,k,j");
    return z;
  });
  same_on_both<T>("max and min into a scalar", [&] {
    Tensor<T> r;
    r("") = tenex::max_over(a("i") - b("i"), "i") - tenex::min_over(a("i"), "i");
    return r;
  });
  same_on_both<T>("min over into 3 values", [&] {
    Tensor<T> r;
    r("j") = tenex::min_over(m("j,i"), "i");
    return r;
  });
  same_on_both<T>("sum into 3 values, accumulated", [&] {
    Tensor<T> r = random<T>(Shape{3}, 44);
    r("j") += tenex::sum(m("j,i"), "i");
    return r;
  });
}

TEST_CASE("cuda backend: a tenex::map callable runs on the CPU, and explain() says why") {
  const std::string why = skip_reason();
  if (!why.empty()) {
    MESSAGE("skipped: ", why);
    return;
  }
  const BackendScope scope(BackendKind::cuda);
  auto a = random<double>(Shape{8, 9}, 41);
  Tensor<double> r;
  r("i,j") = 2.0 * tenex::map(a("i,j"), "cube", [](double v) { return v * v * v; });
  CHECK(std::abs(r.at(2, 3) - 2.0 * std::pow(a.at(2, 3), 3)) < 1e-12);
  CHECK(tenex::last_run_stats().host_nodes >= 1);
  const std::string plan = tenex::explain();
  INFO(plan);
  CHECK(plan.find("ran on the cpu backend, not cuda") != std::string::npos);
  CHECK(plan.find("tenex::map") != std::string::npos);
}

TEST_CASE("cuda backend: out of device memory is an error in the results") {
  const std::string why = skip_reason();
  if (!why.empty()) {
    MESSAGE("skipped: ", why);
    return;
  }
  const BackendScope scope(BackendKind::cuda);
  // An outer product of 2 * 10^11 doubles (1.6 TB): no device has room for it.
  Tensor<double> a(Shape{400000}), b(Shape{500000});
  Tensor<double> c;
  CHECK_NOTHROW(c("i,j") = a("i") * b("j"));
  CHECK_THROWS_WITH_AS(c.wait(), doctest::Contains("out of memory"), tenex::BackendError);
  // The device is usable afterwards.
  Tensor<double> d;
  d("i") = 2.0 * a("i");
  CHECK_NOTHROW(d.wait());
}
