// The fused element-wise kernel of the CPU backend: one pass over the iteration space of
// a fused node (its result's labels, then the labels it reduces), evaluating the node's
// program on strips of the innermost mode, in cache-sized tiles, on the OpenMP threads.
//
// Each instruction runs as a tight loop over a strip of up to kStrip points, so the
// interpretation costs one switch per instruction and strip, and the loops vectorize. An
// operand read with stride 1 along the strip is used in place; a transposed operand (one
// whose stride-1 mode is another mode of the space, the "block" mode) is read in tiles of
// kBlockRows values of the block mode times a strip, which keeps its cache lines in L1
// between the rows that share them. Nothing is allocated but a per-thread strip buffer.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {
namespace {

constexpr std::size_t kStrip = 256;     // points per instruction loop
constexpr std::size_t kBlockRows = 16;  // rows of a tile when an operand is transposed
constexpr std::size_t kParallelMin = 32768;
constexpr std::size_t kPrivateMax = 65536;  // results this small may be reduced per thread

struct Dim {
  std::size_t extent = 1;
  std::ptrdiff_t out = 0;
  std::vector<std::ptrdiff_t> in;
  bool reduced = false;
};

template <class T>
T identity(ReduceOp op) {
  if (op == ReduceOp::max) return -std::numeric_limits<T>::infinity();
  if (op == ReduceOp::min) return std::numeric_limits<T>::infinity();
  return T(0);
}

template <class T>
T combine(ReduceOp op, T acc, T v) {
  if (op == ReduceOp::max) return v > acc ? v : acc;
  if (op == ReduceOp::min) return v < acc ? v : acc;
  return acc + v;
}

/// The loop structure of one fused node, fixed before any thread starts.
template <class T>
struct Plan {
  const FusedParams* params = nullptr;
  std::vector<const T*> in;
  T* out = nullptr;
  std::size_t out_size = 0;
  bool reducing = false;
  // Modes of the space after merging: `rows` are all but the innermost, block mode last.
  std::vector<Dim> rows;
  Dim inner;
  bool has_block = false;
  std::size_t row_count = 1;
  std::size_t grain = 1;  // ranges of rows aligned to this never write the same result element
};

template <class T>
class Evaluator {
 public:
  explicit Evaluator(const Plan<T>& plan)
      : plan_(plan), program_(plan.params->program), scratch_(program_.size() * kStrip),
        values_(program_.size(), nullptr), offsets_(plan.in.size(), 0) {
    for (std::size_t i = 0; i < program_.size(); ++i) {
      if (program_[i].op == FusedOp::constant) {
        std::fill_n(buffer(i), kStrip, static_cast<T>(program_[i].x));
      }
    }
  }

  /// Evaluates rows [r0, r1) into `out` (the result or a private copy of it).
  void rows(std::size_t r0, std::size_t r1, T* out) {
    const std::size_t nrows = plan_.rows.size();
    std::vector<std::size_t> idx(nrows, 0);
    std::size_t rest = r0;
    for (std::size_t d = nrows; d-- > 0;) {
      idx[d] = rest % plan_.rows[d].extent;
      rest /= plan_.rows[d].extent;
    }
    std::vector<std::ptrdiff_t> base(plan_.in.size());
    std::size_t r = r0;
    while (r < r1) {
      std::size_t group = 1;
      if (plan_.has_block) {
        const Dim& b = plan_.rows.back();
        group = std::min({kBlockRows, b.extent - idx.back(), r1 - r});
      }
      std::fill(base.begin(), base.end(), 0);
      std::ptrdiff_t out_base = 0;
      for (std::size_t d = 0; d < nrows; ++d) {
        const auto i = static_cast<std::ptrdiff_t>(idx[d]);
        for (std::size_t k = 0; k < base.size(); ++k) base[k] += i * plan_.rows[d].in[k];
        out_base += i * plan_.rows[d].out;
      }
      const Dim* block = plan_.has_block ? &plan_.rows.back() : nullptr;
      for (std::size_t s = 0; s < plan_.inner.extent; s += kStrip) {
        const std::size_t w = std::min(kStrip, plan_.inner.extent - s);
        const auto ss = static_cast<std::ptrdiff_t>(s);
        for (std::size_t t = 0; t < group; ++t) {
          const auto tt = static_cast<std::ptrdiff_t>(t);
          for (std::size_t k = 0; k < base.size(); ++k) {
            offsets_[k] = base[k] + ss * plan_.inner.in[k] + (block ? tt * block->in[k] : 0);
          }
          strip(out + out_base + ss * plan_.inner.out + (block ? tt * block->out : 0), w);
        }
      }
      r += group;
      // Advance the row index by `group` (only the block mode moves by more than one).
      std::size_t carry = group;
      for (std::size_t d = nrows; d-- > 0 && carry;) {
        idx[d] += carry;
        carry = idx[d] / plan_.rows[d].extent;
        idx[d] %= plan_.rows[d].extent;
      }
    }
  }

 private:
  T* buffer(std::size_t i) { return scratch_.data() + i * kStrip; }

  T call(std::size_t f, T v) const {
    const ScalarFunction& fn = *plan_.params->functions[f];
    if constexpr (std::is_same_v<T, double>) {
      return fn.f64(v);
    } else {
      return fn.f32(v);
    }
  }

  /// The program on `w` points starting at offsets_, written (or reduced) into `out`.
  void strip(T* out, std::size_t w) {
    const std::size_t n = program_.size();
    const std::ptrdiff_t os = plan_.inner.out;
    for (std::size_t i = 0; i < n; ++i) {
      const FusedInstr& in = program_[i];
      // The last value goes straight to the result when it can.
      T* __restrict dst = (i + 1 == n && !plan_.reducing && os == 1) ? out : buffer(i);
      const T* __restrict a = in.op == FusedOp::load || in.op == FusedOp::constant ? nullptr : values_[in.a];
      const T* __restrict b = nullptr;
      switch (in.op) {
        case FusedOp::load: {
          const std::ptrdiff_t st = plan_.inner.in[in.a];
          const T* src = plan_.in[in.a] + offsets_[in.a];
          if (st == 1 && dst != out) {
            values_[i] = src;
            continue;
          }
          if (st == 1) {
            std::memcpy(dst, src, w * sizeof(T));
          } else if (st == 0) {
            std::fill_n(dst, w, *src);
          } else {
            for (std::size_t x = 0; x < w; ++x) dst[x] = src[static_cast<std::ptrdiff_t>(x) * st];
          }
          break;
        }
        case FusedOp::constant:
          if (dst != out) {
            values_[i] = buffer(i);
            continue;
          }
          std::fill_n(dst, w, static_cast<T>(in.x));
          break;
        case FusedOp::add:
          b = values_[in.b];
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] + b[x];
          break;
        case FusedOp::subtract:
          b = values_[in.b];
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] - b[x];
          break;
        case FusedOp::multiply:
          b = values_[in.b];
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] * b[x];
          break;
        case FusedOp::divide:
          b = values_[in.b];
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] / b[x];
          break;
        case FusedOp::maximum:
          b = values_[in.b];
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] < b[x] ? b[x] : a[x];
          break;
        case FusedOp::minimum:
          b = values_[in.b];
          for (std::size_t x = 0; x < w; ++x) dst[x] = b[x] < a[x] ? b[x] : a[x];
          break;
        case FusedOp::negate:
          for (std::size_t x = 0; x < w; ++x) dst[x] = -a[x];
          break;
        case FusedOp::exp:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::exp(a[x]);
          break;
        case FusedOp::log:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::log(a[x]);
          break;
        case FusedOp::sqrt:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::sqrt(a[x]);
          break;
        case FusedOp::abs:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::abs(a[x]);
          break;
        case FusedOp::square:
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] * a[x];
          break;
        case FusedOp::sin:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::sin(a[x]);
          break;
        case FusedOp::cos:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::cos(a[x]);
          break;
        case FusedOp::tanh:
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::tanh(a[x]);
          break;
        case FusedOp::sign:
          for (std::size_t x = 0; x < w; ++x) dst[x] = static_cast<T>((T(0) < a[x]) - (a[x] < T(0)));
          break;
        case FusedOp::reciprocal:
          for (std::size_t x = 0; x < w; ++x) dst[x] = T(1) / a[x];
          break;
        case FusedOp::power: {
          const T p = static_cast<T>(in.x);
          for (std::size_t x = 0; x < w; ++x) dst[x] = std::pow(a[x], p);
          break;
        }
        case FusedOp::clamp: {
          const T lo = static_cast<T>(in.x), hi = static_cast<T>(in.y);
          for (std::size_t x = 0; x < w; ++x) dst[x] = a[x] < lo ? lo : (hi < a[x] ? hi : a[x]);
          break;
        }
        case FusedOp::call:
          for (std::size_t x = 0; x < w; ++x) dst[x] = call(in.b, a[x]);
          break;
      }
      values_[i] = dst;
    }
    const T* v = values_[n - 1];
    if (!plan_.reducing) {
      if (v == out) return;
      if (os == 1) {
        std::memcpy(out, v, w * sizeof(T));
      } else {
        for (std::size_t x = 0; x < w; ++x) out[static_cast<std::ptrdiff_t>(x) * os] = v[x];
      }
      return;
    }
    const ReduceOp op = plan_.params->reduce;
    if (os == 0) {
      T acc = identity<T>(op);
      if (op == ReduceOp::sum) {
        for (std::size_t x = 0; x < w; ++x) acc += v[x];
      } else {
        for (std::size_t x = 0; x < w; ++x) acc = combine(op, acc, v[x]);
      }
      *out = combine(op, *out, acc);
    } else {
      for (std::size_t x = 0; x < w; ++x) {
        T& o = out[static_cast<std::ptrdiff_t>(x) * os];
        o = combine(op, o, v[x]);
      }
    }
  }

  const Plan<T>& plan_;
  const std::vector<FusedInstr>& program_;
  std::vector<T> scratch_;
  std::vector<const T*> values_;
  std::vector<std::ptrdiff_t> offsets_;
};

Strides row_major(const Extents& extents) {
  Strides s(extents.size(), 1);
  for (std::size_t d = extents.size(); d-- > 1;) s[d - 1] = s[d] * static_cast<std::ptrdiff_t>(extents[d]);
  return s;
}

}  // namespace

template <class T>
KernelCount fused(const FusedParams& params, const std::vector<const T*>& operands,
                  const std::vector<Modes>& operand_modes, const std::vector<Extents>& operand_extents, T* out,
                  const Modes& out_modes, const Extents& out_extents) {
  const std::size_t nin = operands.size();
  if (operand_modes.size() != nin || operand_extents.size() != nin) {
    throw std::invalid_argument("fused: operand modes and extents do not match the operands");
  }
  // The iteration space: the result's modes, then the reduced ones, largest operand first.
  Modes space = out_modes;
  Extents extents = out_extents;
  std::vector<std::size_t> by_size(nin);
  for (std::size_t k = 0; k < nin; ++k) by_size[k] = k;
  auto size_of = [&](std::size_t k) {
    std::size_t s = 1;
    for (std::size_t e : operand_extents[k]) s *= e;
    return s;
  };
  std::stable_sort(by_size.begin(), by_size.end(),
                   [&](std::size_t x, std::size_t y) { return size_of(x) > size_of(y); });
  for (std::size_t k : by_size) {
    for (std::size_t d = 0; d < operand_modes[k].size(); ++d) {
      if (std::find(space.begin(), space.end(), operand_modes[k][d]) == space.end()) {
        space.push_back(operand_modes[k][d]);
        extents.push_back(operand_extents[k][d]);
      }
    }
  }
  const std::size_t rank = space.size();
  std::vector<Dim> dims(rank);
  const Strides out_strides = row_major(out_extents);
  std::size_t points = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    dims[d].extent = extents[d];
    dims[d].in.assign(nin, 0);
    dims[d].reduced = d >= out_modes.size();
    dims[d].out = dims[d].reduced ? 0 : out_strides[d];
    points *= extents[d];
  }
  for (std::size_t k = 0; k < nin; ++k) {
    const Strides s = row_major(operand_extents[k]);
    for (std::size_t d = 0; d < operand_modes[k].size(); ++d) {
      const auto at =
          static_cast<std::size_t>(std::find(space.begin(), space.end(), operand_modes[k][d]) - space.begin());
      if (dims[at].extent != operand_extents[k][d]) {
        throw std::invalid_argument("fused: mode " + std::to_string(operand_modes[k][d]) + " has extents " +
                                    std::to_string(dims[at].extent) + " and " + std::to_string(operand_extents[k][d]));
      }
      dims[at].in[k] = s[d];
    }
  }
  Plan<T> plan;
  plan.params = &params;
  plan.in = operands;
  plan.out = out;
  plan.out_size = 1;
  for (std::size_t e : out_extents) plan.out_size *= e;
  plan.reducing = rank > out_modes.size();
  double ops = 0;
  for (const FusedInstr& in : params.program) {
    if (in.op != FusedOp::load && in.op != FusedOp::constant) ops += 1;
  }
  if (plan.reducing) ops += 1;
  if (plan.out_size == 0) return {0, 1};
  if (plan.reducing) std::fill_n(out, plan.out_size, identity<T>(params.reduce));
  if (points == 0) return {0, 1};

  // Drop modes of extent 1, then merge neighbours that are contiguous in every array.
  std::erase_if(dims, [](const Dim& d) { return d.extent == 1; });
  std::vector<Dim> merged;
  for (Dim& d : dims) {
    if (!merged.empty()) {
      Dim& o = merged.back();
      const auto e = static_cast<std::ptrdiff_t>(d.extent);
      bool ok = o.reduced == d.reduced && o.out == d.out * e;
      for (std::size_t k = 0; ok && k < nin; ++k) ok = o.in[k] == d.in[k] * e;
      if (ok) {
        o.extent *= d.extent;
        o.out = d.out;
        o.in = d.in;
        continue;
      }
    }
    merged.push_back(std::move(d));
  }
  if (merged.empty()) {
    Dim one;
    one.in.assign(nin, 0);
    merged.push_back(one);
  }
  plan.inner = merged.back();
  merged.pop_back();
  // A transposed operand: stride 1 along another mode than the innermost one. That mode
  // becomes the block mode, walked in tiles (moved last among the rows).
  for (std::size_t k = 0; k < nin && !plan.has_block; ++k) {
    if (plan.inner.in[k] == 1) continue;
    for (std::size_t d = 0; d < merged.size(); ++d) {
      if (merged[d].in[k] == 1 && merged[d].extent > 1) {
        Dim b = merged[d];
        merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(d));
        merged.push_back(std::move(b));
        plan.has_block = true;
        break;
      }
    }
  }
  plan.rows = std::move(merged);
  for (const Dim& d : plan.rows) plan.row_count *= d.extent;
  // Rows that may write the same result element: from the first reduced row mode on.
  for (std::size_t d = 0; d < plan.rows.size(); ++d) {
    if (plan.rows[d].reduced) {
      for (std::size_t e = d; e < plan.rows.size(); ++e) plan.grain *= plan.rows[e].extent;
      break;
    }
  }

  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const std::size_t units = plan.row_count / plan.grain;
  bool parallel = threads > 1 && points >= kParallelMin;
  bool private_copies = false;
  if (parallel && units < static_cast<std::size_t>(threads) * 2) {
    if (plan.out_size <= kPrivateMax) {
      private_copies = true;
    } else if (units < 2) {
      parallel = false;
    }
  }
  if (!parallel) {
    Evaluator<T>(plan).rows(0, plan.row_count, out);
  } else if (!private_copies) {
#pragma omp parallel num_threads(threads)
    {
      Evaluator<T> eval(plan);
      const auto nt = static_cast<std::size_t>(omp_get_num_threads());
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
      if (u0 < u1) eval.rows(u0 * plan.grain, u1 * plan.grain, out);
    }
  } else {
    std::vector<std::vector<T>> partial(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
      Evaluator<T> eval(plan);
      const auto nt = static_cast<std::size_t>(omp_get_num_threads());
      const auto t = static_cast<std::size_t>(omp_get_thread_num());
      std::vector<T>& mine = partial[t];
      mine.assign(plan.out_size, identity<T>(params.reduce));
      const std::size_t r0 = plan.row_count * t / nt, r1 = plan.row_count * (t + 1) / nt;
      if (r0 < r1) eval.rows(r0, r1, mine.data());
    }
    for (const std::vector<T>& mine : partial) {
      for (std::size_t x = 0; x < mine.size(); ++x) out[x] = combine(params.reduce, out[x], mine[x]);
    }
  }
  return {ops * static_cast<double>(points), 1};
}

#define TENEX_INSTANTIATE_FUSED(T)                                                                           \
  template KernelCount fused<T>(const FusedParams&, const std::vector<const T*>&, const std::vector<Modes>&, \
                                const std::vector<Extents>&, T*, const Modes&, const Extents&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_FUSED)
#undef TENEX_INSTANTIATE_FUSED

}  // namespace tenex::detail::cpu
