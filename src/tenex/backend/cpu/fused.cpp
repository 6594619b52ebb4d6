// The fused element-wise kernel of the CPU backend: one pass over the iteration space of
// a fused node (its result's labels, then the labels it reduces), evaluating the node's
// program on strips of the innermost mode, in cache-sized tiles, on the OpenMP threads.
//
// Each instruction runs as a tight loop over a strip of up to kStrip points, so the
// interpretation costs one switch per instruction and strip; arithmetic that feeds one other
// arithmetic instruction runs inside that instruction's loop (a compound, see compounds()),
// so a chain such as a + 2 b - c / d reads its operands in one loop, as by hand. A result
// that is only written and larger than kStreamStoreBytes is stored past the caches. The
// functions of the table that have a vector form (add, subtract, multiply, divide, max, min,
// negate, abs, sqrt, square, reciprocal, clamp, sign) and the sums of a reduction run on
// Google Highway's vectors; the others (exp, log, pow, ..., tenex::map callables) call their
// scalar definition per point.
// This file compiles itself once per SIMD target (hwy/foreach_target.h) and fused() runs the
// target simd.hpp picks. An operand read with stride 1 along the strip is used in place; a
// transposed operand (one whose stride-1 mode is another mode of the space, the "block" mode)
// is read (gathered, from AVX2 on) in tiles of kBlockRows values of the block mode times a
// strip, which keeps its cache lines near between the rows that share them. Nothing is
// allocated but a per-thread strip buffer.
#ifndef TENEX_FUSED_CPP_ONCE
#define TENEX_FUSED_CPP_ONCE
#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <hwy/cache_control.h>

#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/simd.hpp"
#include "tenex/backend/cpu/tuning.hpp"
#include "tenex/graph/functions.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu {
namespace {

constexpr std::size_t kStrip = 256;                              // points per instruction loop
constexpr std::size_t kBlockRows = 16;                           // rows of a tile when an operand is transposed
constexpr std::size_t kParallelMin = tuning::kFusedParallelMin;  // tuning.hpp
constexpr std::size_t kPrivateMax = tuning::kFusedPrivateMax;    // results this small may be reduced per thread

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

// max and min reduce as the table's maximum and minimum compute: a NaN is never skipped.
template <class T>
T combine(ReduceOp op, T acc, T v) {
  if (op == ReduceOp::max) return Function<FusedOp::maximum>::apply(acc, v, T(0), T(0));
  if (op == ReduceOp::min) return Function<FusedOp::minimum>::apply(acc, v, T(0), T(0));
  return acc + v;
}

// Compound instructions. Arithmetic (add, subtract, multiply, divide) that only one other
// arithmetic instruction reads runs inside that instruction's loop: outer(l, r) with each side
// a value, or an arithmetic instruction of two values evaluated in the same vector registers
// (a + 2 b, x - y / z, a b + c d); a value of such an inner instruction may itself be a
// scaled one, v * constant, as the fusion pass writes a scale. The strip then takes one loop
// where it took up to five, and the memory streams those loops read overlap as in a
// hand-written loop. Every operation keeps its operands, their order and its rounding (no
// FMA): the same values as the instructions one by one.
constexpr int kOwn = -1;       // the instruction runs on its own
constexpr int kAbsorbed = -2;  // the instruction runs inside the compound that reads it
constexpr int kTake = 4;       // a side of a compound that is a value, not an instruction
constexpr int kArithmetic = 4;
constexpr int kCompounds = kArithmetic * (kTake + 1) * (kTake + 1);

/// How one instruction runs: on its own, absorbed, or as the compound loop `loop`
/// ((outer * 5 + left) * 5 + right, a side kTake where it is a value) of four values (a
/// kTake side's value twice), each times `scale` where `scaled`.
struct Compound {
  int loop = kOwn;
  std::uint32_t leaf[4] = {0, 0, 0, 0};
  double scale[4] = {1, 1, 1, 1};
  bool scaled = false;
};

/// The arithmetic index of `op` (0 add, 1 subtract, 2 multiply, 3 divide), or -1.
int arithmetic_index(FusedOp op) {
  if (op == FusedOp::add) return 0;
  if (op == FusedOp::subtract) return 1;
  if (op == FusedOp::multiply) return 2;
  if (op == FusedOp::divide) return 3;
  return -1;
}

/// How each instruction of `program` runs. From the last instruction back, so the
/// instructions nearest the result take in their operands first.
std::vector<Compound> compounds(const std::vector<FusedInstr>& program) {
  const std::size_t n = program.size();
  std::vector<int> uses(n, 0);
  std::vector<Compound> role(n);
  for (const FusedInstr& in : program) {
    if (in.op == FusedOp::load || in.op == FusedOp::constant) continue;
    ++uses[in.a];
    if (in.op != FusedOp::call && function_info(in.op).values == 2) ++uses[in.b];
  }
  if (n > 0) ++uses[n - 1];  // the result reads the last value
  auto only_use = [&](std::uint32_t v) { return uses[v] == 1 && role[v].loop == kOwn; };
  for (std::size_t i = n; i-- > 0;) {
    const int outer = arithmetic_index(program[i].op);
    if (role[i].loop == kAbsorbed || outer < 0) continue;
    Compound& c = role[i];
    // A value of an absorbed instruction: v * constant (the pass's scale) is taken in too.
    auto leaf = [&](std::size_t k, std::uint32_t v) {
      const FusedInstr& m = program[v];
      if (m.op == FusedOp::multiply && program[m.b].op == FusedOp::constant && only_use(v)) {
        role[v].loop = kAbsorbed;
        c.leaf[k] = m.a;
        c.scale[k] = program[m.b].x;
        c.scaled = true;
      } else {
        c.leaf[k] = v;
      }
    };
    auto side = [&](std::size_t k, std::uint32_t v) {
      const int op = arithmetic_index(program[v].op);
      if (op < 0 || !only_use(v)) {
        c.leaf[k] = c.leaf[k + 1] = v;
        return kTake;
      }
      role[v].loop = kAbsorbed;
      leaf(k, program[v].a);
      leaf(k + 1, program[v].b);
      return op;
    };
    const int left = side(0, program[i].a), right = side(2, program[i].b);
    if (left != kTake || right != kTake) {
      c.loop = (outer * (kTake + 1) + left) * (kTake + 1) + right;
    } else {
      c = Compound{};
    }
  }
  return role;
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
  std::size_t grain = 1;           // ranges of rows aligned to this never write the same result element
  bool stream = false;             // the result is only written, whole, and past kStreamStoreBytes
  std::vector<Compound> compound;  // per instruction (compounds())
};


Strides row_major(const Extents& extents) {
  Strides s(extents.size(), 1);
  for (std::size_t d = extents.size(); d-- > 1;) s[d - 1] = s[d] * static_cast<std::ptrdiff_t>(extents[d]);
  return s;
}

}  // namespace
}  // namespace tenex::detail::cpu
#endif  // TENEX_FUSED_CPP_ONCE

// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tenex/backend/cpu/fused.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace tenex::detail::cpu::HWY_NAMESPACE {
namespace {
namespace hn = hwy::HWY_NAMESPACE;

// The vector form of a function of the table, where it has one: the same value as its
// scalar definition (tenex/graph/functions.hpp) in every lane, NaN, Inf and signed zero
// included. VectorForm<op>::apply(d, a, b, x, y) with x, y the parameters broadcast.
template <FusedOp op>
struct VectorForm {
  static constexpr bool exists = false;
};
#define TENEX_VECTOR_FORM(op_, expression)                                                                            \
  template <>                                                                                                         \
  struct VectorForm<FusedOp::op_> {                                                                                   \
    static constexpr bool exists = true;                                                                              \
    template <class D, class V>                                                                                       \
    static HWY_INLINE V apply([[maybe_unused]] D d, [[maybe_unused]] V a, [[maybe_unused]] V b, [[maybe_unused]] V x, \
                              [[maybe_unused]] V y) {                                                                 \
      return expression;                                                                                              \
    }                                                                                                                 \
  };
TENEX_VECTOR_FORM(add, hn::Add(a, b))
TENEX_VECTOR_FORM(subtract, hn::Sub(a, b))
TENEX_VECTOR_FORM(multiply, hn::Mul(a, b))
TENEX_VECTOR_FORM(divide, hn::Div(a, b))
// (a < b || b != b) ? b : a, and (b < a || b != b) ? b : a: a NaN on either side is the result.
TENEX_VECTOR_FORM(maximum, hn::IfThenElse(hn::Or(hn::Lt(a, b), hn::IsNaN(b)), b, a))
TENEX_VECTOR_FORM(minimum, hn::IfThenElse(hn::Or(hn::Lt(b, a), hn::IsNaN(b)), b, a))
TENEX_VECTOR_FORM(negate, hn::Neg(a))
TENEX_VECTOR_FORM(sqrt, hn::Sqrt(a))
TENEX_VECTOR_FORM(abs, hn::Abs(a))
TENEX_VECTOR_FORM(square, hn::Mul(a, a))
TENEX_VECTOR_FORM(reciprocal, hn::Div(hn::Set(d, hn::TFromD<D>(1)), a))
TENEX_VECTOR_FORM(clamp, hn::IfThenElse(hn::Lt(a, x), x, hn::IfThenElse(hn::Lt(y, a), y, a)))
// NaN stays; +1 above zero, -1 below, +0 for either zero.
TENEX_VECTOR_FORM(sign, hn::IfThenElse(hn::IsNaN(a), a,
                                       hn::IfThenElse(hn::Lt(hn::Zero(d), a), hn::Set(d, hn::TFromD<D>(1)),
                                                      hn::IfThenElseZero(hn::Lt(a, hn::Zero(d)),
                                                                         hn::Set(d, hn::TFromD<D>(-1))))))
#undef TENEX_VECTOR_FORM

template <class T>
class Evaluator {
 public:
  explicit Evaluator(const Plan<T>& plan)
      : plan_(plan), program_(plan.params->program), scratch_(program_.size() * kStrip), values_(program_.size()),
        offsets_(plan.in.size(), 0), splat_(4 * hn::Lanes(D())) {}

  /// Evaluates rows [r0, r1) into `out` (the result or a private copy of it), each row's
  /// points [s0, s1) of the innermost mode (all of them by default).
  void rows(std::size_t r0, std::size_t r1, T* out, std::size_t s0 = 0, std::size_t s1 = ~std::size_t{0}) {
    s1 = std::min(s1, plan_.inner.extent);
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
      for (std::size_t s = s0; s < s1; s += kStrip) {
        const std::size_t w = std::min(kStrip, s1 - s);
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

  /// A value of the program on one strip: `w` elements at p, or one value s for the whole
  /// strip (a constant, an operand broadcast along the strip, or what is computed from them).
  struct Value {
    const T* p = nullptr;
    bool uniform = false;
    T s = T(0);
  };

  template <class F>
  static Value unary(F f, const Value& a, T* __restrict dst, std::size_t w) {
    if (a.uniform) return {nullptr, true, f(a.s)};
    const T* __restrict x = a.p;
    for (std::size_t i = 0; i < w; ++i) dst[i] = f(x[i]);
    return {dst, false, T(0)};
  }

  template <class F>
  static Value binary(F f, const Value& a, const Value& b, T* __restrict dst, std::size_t w) {
    if (a.uniform && b.uniform) return {nullptr, true, f(a.s, b.s)};
    if (a.uniform) {
      const T sa = a.s;
      const T* __restrict y = b.p;
      for (std::size_t i = 0; i < w; ++i) dst[i] = f(sa, y[i]);
    } else if (b.uniform) {
      const T sb = b.s;
      const T* __restrict x = a.p;
      for (std::size_t i = 0; i < w; ++i) dst[i] = f(x[i], sb);
    } else {
      const T* __restrict x = a.p;
      const T* __restrict y = b.p;
      for (std::size_t i = 0; i < w; ++i) dst[i] = f(x[i], y[i]);
    }
    return {dst, false, T(0)};
  }

  using D = hn::ScalableTag<T>;
  using V = hn::Vec<D>;

  /// Function `op` of the table (tenex/graph/functions.hpp) on a strip: whole vectors in its
  /// vector form where it has one, the rest of the strip (and every point of a function
  /// without one) in its scalar definition, which inlines.
  template <FusedOp op, int values>
  Value function(const FusedInstr& in, T* __restrict dst, std::size_t w) const {
    const T x = static_cast<T>(in.x), y = static_cast<T>(in.y);
    const Value& a = values_[in.a];
    const Value& b = values == 2 ? values_[in.b] : a;
    if constexpr (VectorForm<op>::exists) {
      if (!(a.uniform && b.uniform)) {
        const D d;
        const std::size_t n = hn::Lanes(d);
        const V vx = hn::Set(d, x), vy = hn::Set(d, y);
        std::size_t i = 0;
        // One loop per case, without a test in it: both vary, or one is uniform.
        if (values == 1 || (!a.uniform && !b.uniform)) {
          const T* __restrict pb = values == 1 ? a.p : b.p;
          for (; i + n <= w; i += n) {
            const V va = hn::LoadU(d, a.p + i);
            const V vb = values == 1 ? va : hn::LoadU(d, pb + i);
            hn::StoreU(VectorForm<op>::apply(d, va, vb, vx, vy), d, dst + i);
          }
        } else if (a.uniform) {
          const V sa = hn::Set(d, a.s);
          for (; i + n <= w; i += n)
            hn::StoreU(VectorForm<op>::apply(d, sa, hn::LoadU(d, b.p + i), vx, vy), d, dst + i);
        } else {
          const V sb = hn::Set(d, b.s);
          for (; i + n <= w; i += n)
            hn::StoreU(VectorForm<op>::apply(d, hn::LoadU(d, a.p + i), sb, vx, vy), d, dst + i);
        }
        for (; i < w; ++i) {
          const T ai = a.uniform ? a.s : a.p[i];
          const T bi = values == 1 ? T(0) : (b.uniform ? b.s : b.p[i]);
          dst[i] = Function<op>::apply(ai, bi, x, y);
        }
        return {dst, false, T(0)};
      }
    }
    if constexpr (values == 2) {
      return binary([x, y](T p, T q) { return Function<op>::apply(p, q, x, y); }, a, b, dst, w);
    } else {
      return unary([x, y](T p) { return Function<op>::apply(p, T(0), x, y); }, a, dst, w);
    }
  }

  /// A value read by a compound: p[i & mask] at point i (mask 0: a vector of one value),
  /// times s where the compound is scaled.
  struct Leaf {
    const T* p;
    std::size_t mask;
    T s;
  };

  // The arithmetic of a compound's op number: 0 add, 1 subtract, 2 multiply, 3 divide.
  static constexpr FusedOp arithmetic_op(int op) {
    return op == 0 ? FusedOp::add : op == 1 ? FusedOp::subtract : op == 2 ? FusedOp::multiply : FusedOp::divide;
  }
  template <int op>
  static HWY_INLINE V arithmetic(D d, V a, V b) {
    if constexpr (op == kTake) {
      return a;
    } else {
      return VectorForm<arithmetic_op(op)>::apply(d, a, b, a, b);
    }
  }
  template <int op>
  static HWY_INLINE T arithmetic(T a, T b) {
    if constexpr (op == kTake) {
      return a;
    } else {
      return Function<arithmetic_op(op)>::apply(a, b, T(0), T(0));
    }
  }
  template <bool scaled>
  static HWY_INLINE V load(D d, const Leaf& l, V s, std::size_t i) {
    const V v = hn::LoadU(d, l.p + (i & l.mask));
    if constexpr (scaled) {
      return hn::Mul(v, s);
    } else {
      return v;
    }
  }
  template <bool scaled>
  static HWY_INLINE T load(const Leaf& l, std::size_t i) {
    const T v = l.p[i & l.mask];
    if constexpr (scaled) {
      return Function<FusedOp::multiply>::apply(v, l.s, T(0), T(0));
    } else {
      return v;
    }
  }

  /// dst[i] = outer(left(leaf 0, leaf 1), right(leaf 2, leaf 3)) for i < w, a side kTake
  /// being its first leaf: the instructions of a compound in one loop.
  template <int outer, int left, int right, bool scaled>
  static void compound(const Leaf* leaf, T* __restrict dst, std::size_t w) {
    const D d;
    const std::size_t n = hn::Lanes(d);
    const Leaf l0 = leaf[0], l1 = leaf[1], l2 = leaf[2], l3 = leaf[3];
    const V s0 = hn::Set(d, l0.s), s1 = hn::Set(d, l1.s), s2 = hn::Set(d, l2.s), s3 = hn::Set(d, l3.s);
    std::size_t i = 0;
    for (; i + n <= w; i += n) {
      const V a = load<scaled>(d, l0, s0, i);
      const V l = left == kTake ? a : arithmetic<left>(d, a, load<scaled>(d, l1, s1, i));
      const V b = load<scaled>(d, l2, s2, i);
      const V r = right == kTake ? b : arithmetic<right>(d, b, load<scaled>(d, l3, s3, i));
      hn::StoreU(arithmetic<outer>(d, l, r), d, dst + i);
    }
    for (; i < w; ++i) {
      const T l = arithmetic<left>(load<scaled>(l0, i), load<scaled>(l1, i));
      const T r = arithmetic<right>(load<scaled>(l2, i), load<scaled>(l3, i));
      dst[i] = arithmetic<outer>(l, r);
    }
  }

  using CompoundLoop = void (*)(const Leaf*, T* __restrict, std::size_t);
  template <bool scaled, std::size_t... I>
  static constexpr std::array<CompoundLoop, kCompounds> compound_loops(std::index_sequence<I...>) {
    return {&compound<int(I / 25), int(I / 5 % 5), int(I % 5), scaled>...};
  }
  static constexpr std::array<CompoundLoop, kCompounds> kCompoundLoops =
      compound_loops<false>(std::make_index_sequence<kCompounds>());
  static constexpr std::array<CompoundLoop, kCompounds> kScaledCompoundLoops =
      compound_loops<true>(std::make_index_sequence<kCompounds>());

  /// Compound `c` on a strip.
  Value run_compound(const Compound& c, T* __restrict dst, std::size_t w) {
    const D d;
    const std::size_t lanes = hn::Lanes(d);
    Leaf leaf[4];
    bool uniform = true;
    for (std::size_t k = 0; k < 4; ++k) {
      const Value& v = values_[c.leaf[k]];
      const T s = static_cast<T>(c.scale[k]);
      if (v.uniform) {
        T* p = splat_.data() + k * lanes;
        hn::StoreU(hn::Set(d, v.s), d, p);
        leaf[k] = {p, 0, s};
      } else {
        leaf[k] = {v.p, ~std::size_t{0}, s};
        uniform = false;
      }
    }
    const CompoundLoop loop = (c.scaled ? kScaledCompoundLoops : kCompoundLoops)[static_cast<std::size_t>(c.loop)];
    if (uniform) {
      T one = T(0);
      loop(leaf, &one, 1);
      return {nullptr, true, one};
    }
    loop(leaf, dst, w);
    return {dst, false, T(0)};
  }

  /// dst[x] = src[x st] for x < w (st > 1): the hardware's gathers on x86 from AVX2 on, where
  /// the offsets fit the index lanes; element by element elsewhere.
  static void strided_load(const T* __restrict src, std::ptrdiff_t st, T* __restrict dst, std::size_t w) {
    std::size_t x = 0;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
    const D d;
    const hn::RebindToSigned<D> di;
    using I = hn::TFromD<decltype(di)>;
    const std::size_t n = hn::Lanes(d);
    if (st > 0 &&
        static_cast<double>(st) * static_cast<double>(w) < static_cast<double>(std::numeric_limits<I>::max())) {
      HWY_ALIGN I index[hn::MaxLanes(di)];
      for (std::size_t l = 0; l < n; ++l) index[l] = static_cast<I>(static_cast<std::ptrdiff_t>(l) * st);
      const auto vi = hn::Load(di, index);
      for (; x + n <= w; x += n)
        hn::StoreU(hn::GatherIndex(d, src + static_cast<std::ptrdiff_t>(x) * st, vi), d, dst + x);
    }
#endif
    for (; x < w; ++x) dst[x] = src[static_cast<std::ptrdiff_t>(x) * st];
  }

  /// The sum of p[0, w): in one vector of partial sums, then across its lanes, so that it
  /// depends on the target's lanes but not on the threads.
  static T sum(const T* __restrict p, std::size_t w) {
    const D d;
    const std::size_t n = hn::Lanes(d);
    std::size_t x = 0;
    T acc = T(0);
    if (w >= n) {
      V s = hn::LoadU(d, p);
      for (x = n; x + n <= w; x += n) s = hn::Add(s, hn::LoadU(d, p + x));
      acc = hn::GetLane(hn::SumOfLanes(d, s));
    }
    for (; x < w; ++x) acc += p[x];
    return acc;
  }

  /// dst[0, w) = src[0, w), whole vectors stored past the caches (the result is larger than
  /// they are and only written: no line of it is read for ownership first).
  static void stream_store(const T* __restrict src, T* __restrict dst, std::size_t w) {
    const D d;
    const std::size_t n = hn::Lanes(d);
    std::size_t x = 0;
    for (; x < w && reinterpret_cast<std::uintptr_t>(dst + x) % (n * sizeof(T)) != 0; ++x) dst[x] = src[x];
    for (; x + n <= w; x += n) hn::Stream(hn::LoadU(d, src + x), d, dst + x);
    for (; x < w; ++x) dst[x] = src[x];
  }

  /// The program on `w` points starting at offsets_, written (or reduced) into `out`.
  void strip(T* out, std::size_t w) {
    const std::size_t n = program_.size();
    const std::ptrdiff_t os = plan_.inner.out;
    for (std::size_t i = 0; i < n; ++i) {
      const FusedInstr& in = program_[i];
      // The last value goes straight to the result when it can.
      T* dst = (i + 1 == n && !plan_.reducing && os == 1 && !plan_.stream) ? out : buffer(i);
      Value& v = values_[i];
      const Compound& c = plan_.compound[i];
      if (c.loop == kAbsorbed) continue;
      if (c.loop >= 0) {
        v = run_compound(c, dst, w);
        continue;
      }
      switch (in.op) {
        case FusedOp::load: {
          const std::ptrdiff_t st = plan_.inner.in[in.a];
          const T* src = plan_.in[in.a] + offsets_[in.a];
          if (st == 0) {
            v = {nullptr, true, *src};
          } else if (st == 1) {
            // Used in place. No software prefetch of the next strip: a burst of one per line
            // holds the line fill buffers the hardware's streams need (0.61 of the hand loop
            // with it, 0.86 without, on 2 MB operands the caches hold).
            v = {src, false, T(0)};
          } else {
            strided_load(src, st, dst, w);
            v = {dst, false, T(0)};
          }
          break;
        }
        case FusedOp::constant: v = {nullptr, true, static_cast<T>(in.x)}; break;
#define TENEX_CPU_FUNCTION(op, name, values, parameters, keeps_zero, scalar, text, cuda) \
  case FusedOp::op: v = function<FusedOp::op, values>(in, dst, w); break;
          TENEX_FOR_EACH_FUNCTION(TENEX_CPU_FUNCTION)
#undef TENEX_CPU_FUNCTION
        case FusedOp::call: {
          const std::size_t f = in.b;
          v = unary([this, f](T x) { return call(f, x); }, values_[in.a], dst, w);
          break;
        }
      }
    }
    const Value& v = values_[n - 1];
    if (!plan_.reducing) {
      if (v.p == out) return;
      if (v.uniform) {
        for (std::size_t x = 0; x < w; ++x) out[static_cast<std::ptrdiff_t>(x) * os] = v.s;
      } else if (os == 1 && plan_.stream) {
        stream_store(v.p, out, w);
      } else if (os == 1) {
        std::memcpy(out, v.p, w * sizeof(T));
      } else {
        for (std::size_t x = 0; x < w; ++x) out[static_cast<std::ptrdiff_t>(x) * os] = v.p[x];
      }
      return;
    }
    const ReduceOp op = plan_.params->reduce;
    if (os == 0) {
      T acc = identity<T>(op);
      if (v.uniform) {
        acc = op == ReduceOp::sum ? v.s * static_cast<T>(w) : (w ? v.s : acc);
      } else if (op == ReduceOp::sum) {
        acc = sum(v.p, w);
      } else {
        for (std::size_t x = 0; x < w; ++x) acc = combine(op, acc, v.p[x]);
      }
      *out = combine(op, *out, acc);
    } else {
      for (std::size_t x = 0; x < w; ++x) {
        T& o = out[static_cast<std::ptrdiff_t>(x) * os];
        o = combine(op, o, v.uniform ? v.s : v.p[x]);
      }
    }
  }

  const Plan<T>& plan_;
  const std::vector<FusedInstr>& program_;
  std::vector<T> scratch_;
  std::vector<Value> values_;
  std::vector<std::ptrdiff_t> offsets_;
  std::vector<T> splat_;  // one vector per side of a compound that is uniform on the strip
};

/// Runs work(evaluator, thread, threads) on `threads` OpenMP threads, each with its own
/// evaluator. An exception (std::bad_alloc of a thread's scratch, a map callable's) must not
/// leave a parallel region: the first is kept and rethrown after it.
template <class T, class F>
void on_threads(const Plan<T>& plan, int threads, F work) {
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    try {
      Evaluator<T> eval(plan);
      work(eval, static_cast<std::size_t>(omp_get_thread_num()), static_cast<std::size_t>(omp_get_num_threads()));
      if (plan.stream) hwy::FlushStream();  // the streamed stores ordered before whatever reads the result
    } catch (...) {
#pragma omp critical(tenex_fused_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// Runs the plan of `points` points on the threads the call may use.
template <class T>
void execute(const Plan<T>& plan, std::size_t points) {
  const FusedParams& params = *plan.params;
  T* out = plan.out;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const std::size_t units = plan.row_count / plan.grain;
  bool parallel = threads > 1 && points >= kParallelMin;
  // Too few rows to share: a result without reduction shares each row's points instead (no
  // two threads write one element); a small reduced result is summed per thread and combined.
  // Never private copies without a reduction: `out` holds no identity to combine them onto.
  bool private_copies = false, split_rows = false;
  if (parallel && units < static_cast<std::size_t>(threads) * 2) {
    if (!plan.reducing && plan.inner.extent >= static_cast<std::size_t>(threads) * kStrip) {
      split_rows = true;
    } else if (plan.reducing && plan.out_size <= kPrivateMax) {
      private_copies = true;
    } else if (units < 2) {
      parallel = false;
    }
  }
  if (!parallel) {
    Evaluator<T>(plan).rows(0, plan.row_count, out);
    if (plan.stream) hwy::FlushStream();
  } else if (split_rows) {
    // Whole strips of every row per thread.
    const std::size_t strips = (plan.inner.extent + kStrip - 1) / kStrip;
    on_threads(plan, threads, [&](Evaluator<T>& eval, std::size_t t, std::size_t nt) {
      const std::size_t s0 = strips * t / nt * kStrip, s1 = strips * (t + 1) / nt * kStrip;
      if (s0 < s1) eval.rows(0, plan.row_count, out, s0, s1);
    });
  } else if (!private_copies) {
    on_threads(plan, threads, [&](Evaluator<T>& eval, std::size_t t, std::size_t nt) {
      const std::size_t u0 = units * t / nt, u1 = units * (t + 1) / nt;
      if (u0 < u1) eval.rows(u0 * plan.grain, u1 * plan.grain, out);
    });
  } else {
    std::vector<std::vector<T>> partial(static_cast<std::size_t>(threads));
    on_threads(plan, threads, [&](Evaluator<T>& eval, std::size_t t, std::size_t nt) {
      std::vector<T>& mine = partial[t];
      mine.assign(plan.out_size, identity<T>(params.reduce));
      const std::size_t r0 = plan.row_count * t / nt, r1 = plan.row_count * (t + 1) / nt;
      if (r0 < r1) eval.rows(r0, r1, mine.data());
    });
    // Combined in thread order: the same result on every run with this many threads.
    for (const std::vector<T>& mine : partial) {
      for (std::size_t x = 0; x < mine.size(); ++x) out[x] = combine(params.reduce, out[x], mine[x]);
    }
  }
}

}  // namespace

void execute_float(const Plan<float>& plan, std::size_t points) { execute(plan, points); }
void execute_double(const Plan<double>& plan, std::size_t points) { execute(plan, points); }

}  // namespace tenex::detail::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tenex::detail::cpu {

HWY_EXPORT(execute_float);
HWY_EXPORT(execute_double);

namespace {

// The iteration space of a fused region: the result's modes, then the reduced ones, largest
// operand first; `space` and `extents` come in holding the result's.
void iteration_space(const std::vector<Modes>& operand_modes, const std::vector<Extents>& operand_extents, Modes& space,
                     Extents& extents) {
  const std::size_t nin = operand_modes.size();
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
}

// Each mode of the space with its extent and its stride in the result and in every operand;
// throws where an operand's extent of a mode differs from the space's.
std::vector<Dim> space_dims(const Modes& space, const Extents& extents, const std::vector<Modes>& operand_modes,
                            const std::vector<Extents>& operand_extents, const Modes& out_modes,
                            const Extents& out_extents) {
  const std::size_t nin = operand_modes.size(), rank = space.size();
  std::vector<Dim> dims(rank);
  const Strides out_strides = row_major(out_extents);
  for (std::size_t d = 0; d < rank; ++d) {
    dims[d].extent = extents[d];
    dims[d].in.assign(nin, 0);
    dims[d].reduced = d >= out_modes.size();
    dims[d].out = dims[d].reduced ? 0 : out_strides[d];
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
  return dims;
}

// The dims without modes of extent 1, neighbours that are contiguous in every array merged
// (one dim of extent 1 where none is left).
std::vector<Dim> merged_dims(std::vector<Dim>& dims, std::size_t nin) {
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
  return merged;
}

// The plan's rows, the innermost dim being taken: a transposed operand (stride 1 along
// another mode than the innermost one) makes that mode the block mode, walked in tiles
// (moved last among the rows). Only an operand that varies along the innermost mode is read
// across rows (a broadcast one, stride 0 there, is one value per strip).
template <class T>
void choose_rows(Plan<T>& plan, std::vector<Dim>& merged, std::size_t nin) {
  for (std::size_t k = 0; k < nin && !plan.has_block; ++k) {
    if (plan.inner.in[k] == 1 || plan.inner.in[k] == 0) continue;
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
  Modes space = out_modes;
  Extents extents = out_extents;
  iteration_space(operand_modes, operand_extents, space, extents);
  const std::size_t rank = space.size();
  std::size_t points = 1;
  for (std::size_t d = 0; d < rank; ++d) points *= extents[d];
  std::vector<Dim> dims = space_dims(space, extents, operand_modes, operand_extents, out_modes, out_extents);
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

  std::vector<Dim> merged = merged_dims(dims, nin);
  plan.inner = merged.back();
  merged.pop_back();
  choose_rows(plan, merged, nin);
  plan.compound = compounds(params.program);
  plan.stream = !plan.reducing && plan.inner.out == 1 && plan.out_size * sizeof(T) > tuning::kStreamStoreBytes;
  // Rows that may write the same result element: from the first reduced row mode on.
  for (std::size_t d = 0; d < plan.rows.size(); ++d) {
    if (plan.rows[d].reduced) {
      for (std::size_t e = d; e < plan.rows.size(); ++e) plan.grain *= plan.rows[e].extent;
      break;
    }
  }

  if constexpr (std::is_same_v<T, double>) {
    TENEX_SIMD_DISPATCH(execute_double)(plan, points);
  } else {
    TENEX_SIMD_DISPATCH(execute_float)(plan, points);
  }
  return {ops * static_cast<double>(points), 1};
}

#define TENEX_INSTANTIATE_FUSED(T)                                                                           \
  template KernelCount fused<T>(const FusedParams&, const std::vector<const T*>&, const std::vector<Modes>&, \
                                const std::vector<Extents>&, T*, const Modes&, const Extents&);
TENEX_FOR_EACH_REAL_SCALAR(TENEX_INSTANTIATE_FUSED)
#undef TENEX_INSTANTIATE_FUSED

}  // namespace tenex::detail::cpu
#endif  // HWY_ONCE
