// Element-wise kernels of the CPU backend: broadcasting binary operations and scaling.
//
// The result is walked in its own (row-major) order; an operand lacking a mode of the
// result reads it with stride 0 (broadcast). Modes contiguous in all three arrays are
// merged first, so identical layouts become one flat loop the compiler vectorises.
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {
namespace {

// Below this many elements a kernel runs on one thread: a parallel region costs microseconds.
constexpr std::size_t kParallelMin = std::size_t{1} << 15;

struct Dim {
  std::size_t extent;
  std::ptrdiff_t a, b, c;  // element strides; 0 where an operand is broadcast
};

bool run_parallel(std::size_t work) { return work >= kParallelMin && omp_get_max_threads() > 1 && !omp_in_parallel(); }

// Element strides in `c_modes` order of an operand whose modes are `modes` (a subset of
// c_modes): the operand is row-major over its own modes, with extents taken from c.
Strides operand_strides(const char* name, const Modes& modes, const Modes& c_modes, const Extents& c_extents) {
  Strides strides(c_modes.size(), 0);
  std::ptrdiff_t s = 1;
  for (std::size_t p = modes.size(); p-- > 0;) {
    auto it = std::find(c_modes.begin(), c_modes.end(), modes[p]);
    if (it == c_modes.end()) {
      throw std::invalid_argument(std::string("elementwise: mode ") + std::to_string(modes[p]) + " of " + name +
                                  " is not a mode of the result");
    }
    const auto d = static_cast<std::size_t>(it - c_modes.begin());
    if (strides[d] != 0) {
      throw std::invalid_argument(std::string("elementwise: mode ") + std::to_string(modes[p]) + " repeats in " + name);
    }
    strides[d] = s;
    s *= static_cast<std::ptrdiff_t>(c_extents[d]);
  }
  return strides;
}

template <class T, class F>
void apply_row(F f, T alpha_a, const T* a, std::ptrdiff_t sa, T alpha_b, const T* b, std::ptrdiff_t sb, T* c,
               std::ptrdiff_t sc, std::size_t n) {
  if (sa == 1 && sb == 1 && sc == 1) {
    for (std::size_t x = 0; x < n; ++x) c[x] = f(alpha_a * a[x], alpha_b * b[x]);
  } else if (sa == 0 && sb == 1 && sc == 1) {
    const T va = alpha_a * a[0];
    for (std::size_t x = 0; x < n; ++x) c[x] = f(va, alpha_b * b[x]);
  } else if (sa == 1 && sb == 0 && sc == 1) {
    const T vb = alpha_b * b[0];
    for (std::size_t x = 0; x < n; ++x) c[x] = f(alpha_a * a[x], vb);
  } else {
    for (std::size_t x = 0; x < n; ++x) {
      const auto i = static_cast<std::ptrdiff_t>(x);
      c[i * sc] = f(alpha_a * a[i * sa], alpha_b * b[i * sb]);
    }
  }
}

template <class T, class F>
void apply(F f, T alpha_a, const T* a, T alpha_b, const T* b, T* c, std::vector<Dim> dims) {
  std::erase_if(dims, [](const Dim& d) { return d.extent == 1; });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    const auto e = static_cast<std::ptrdiff_t>(d.extent);
    Dim* outer = merged.empty() ? nullptr : &merged.back();
    if (outer && outer->a == d.a * e && outer->b == d.b * e && outer->c == d.c * e) {
      *outer = {outer->extent * d.extent, d.a, d.b, d.c};
    } else {
      merged.push_back(d);
    }
  }
  if (merged.empty()) {
    c[0] = f(alpha_a * a[0], alpha_b * b[0]);
    return;
  }
  const Dim inner = merged.back();
  merged.pop_back();
  std::size_t rows = 1;
  for (const Dim& d : merged) rows *= d.extent;
  // One long row (identical layouts): cut it into pieces so that every thread gets work.
  const std::size_t piece = rows == 1 ? std::max<std::size_t>(kParallelMin / 4, inner.extent / 64 + 1) : inner.extent;
  const std::size_t pieces = (inner.extent + piece - 1) / piece;
  const std::size_t units = rows * pieces;
  auto unit = [&](std::size_t u) {
    std::size_t row = u / pieces;
    const std::size_t x0 = (u % pieces) * piece;
    std::ptrdiff_t oa = static_cast<std::ptrdiff_t>(x0) * inner.a, ob = static_cast<std::ptrdiff_t>(x0) * inner.b,
                   oc = static_cast<std::ptrdiff_t>(x0) * inner.c;
    for (std::size_t d = merged.size(); d-- > 0;) {
      const auto i = static_cast<std::ptrdiff_t>(row % merged[d].extent);
      row /= merged[d].extent;
      oa += i * merged[d].a;
      ob += i * merged[d].b;
      oc += i * merged[d].c;
    }
    apply_row(f, alpha_a, a + oa, inner.a, alpha_b, b + ob, inner.b, c + oc, inner.c,
              std::min(piece, inner.extent - x0));
  };
  // A small array never enters OpenMP: a parallel region on one thread costs more than it.
  if (run_parallel(rows * inner.extent)) {
#pragma omp parallel for schedule(static)
    for (std::size_t u = 0; u < units; ++u) unit(u);
  } else {
    for (std::size_t u = 0; u < units; ++u) unit(u);
  }
}

}  // namespace

template <class T>
KernelCount elementwise(BinaryOp op, T alpha_a, const T* a, const Modes& a_modes, T alpha_b, const T* b,
                        const Modes& b_modes, T* c, const Extents& c_extents, const Modes& c_modes) {
  if (c_extents.size() != c_modes.size()) {
    throw std::invalid_argument("elementwise: " + std::to_string(c_modes.size()) + " result modes for " +
                                std::to_string(c_extents.size()) + " extents");
  }
  for (std::size_t d = 0; d < c_modes.size(); ++d) {
    if (std::count(c_modes.begin(), c_modes.end(), c_modes[d]) != 1) {
      throw std::invalid_argument("elementwise: result mode " + std::to_string(c_modes[d]) + " repeats");
    }
  }
  const Strides sa = operand_strides("a", a_modes, c_modes, c_extents);
  const Strides sb = operand_strides("b", b_modes, c_modes, c_extents);
  std::size_t n = 1;
  for (std::size_t e : c_extents) n *= e;
  if (n == 0) return {0, 0};
  std::vector<Dim> dims(c_modes.size());
  std::ptrdiff_t s = 1;
  for (std::size_t d = c_modes.size(); d-- > 0;) {
    dims[d] = {c_extents[d], sa[d], sb[d], s};
    s *= static_cast<std::ptrdiff_t>(c_extents[d]);
  }
  switch (op) {
    case BinaryOp::add: apply([](T x, T y) { return x + y; }, alpha_a, a, alpha_b, b, c, std::move(dims)); break;
    case BinaryOp::subtract: apply([](T x, T y) { return x - y; }, alpha_a, a, alpha_b, b, c, std::move(dims)); break;
    case BinaryOp::multiply: apply([](T x, T y) { return x * y; }, alpha_a, a, alpha_b, b, c, std::move(dims)); break;
    case BinaryOp::divide: apply([](T x, T y) { return x / y; }, alpha_a, a, alpha_b, b, c, std::move(dims)); break;
  }
  const double scalings = (alpha_a != T(1) ? 1.0 : 0.0) + (alpha_b != T(1) ? 1.0 : 0.0);
  return {static_cast<double>(n) * (1.0 + scalings), 1};
}

template <class T>
KernelCount scale(T alpha, const T* a, T* c, std::size_t n) {
  if (n == 0) return {0, 0};
  if (run_parallel(n)) {
#pragma omp parallel for schedule(static)
    for (std::size_t x = 0; x < n; ++x) c[x] = alpha * a[x];
  } else {
    for (std::size_t x = 0; x < n; ++x) c[x] = alpha * a[x];
  }
  return {static_cast<double>(n), 1};
}

#define TENEX_INSTANTIATE_ELEMENTWISE(T)                                                                  \
  template KernelCount elementwise<T>(BinaryOp, T, const T*, const Modes&, T, const T*, const Modes&, T*, \
                                      const Extents&, const Modes&);                                      \
  template KernelCount scale<T>(T, const T*, T*, std::size_t);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_ELEMENTWISE)
#undef TENEX_INSTANTIATE_ELEMENTWISE

}  // namespace tenex::detail::cpu
