// Compact buffers against the dense layout (compact_layout.hpp): every run of allowed elements
// of a key copied in one go, the keys shared among the threads.
#include "tenex/backend/cpu/compact_layout.hpp"

#if !defined(TENEX_OPENMP) || TENEX_OPENMP
#include <omp.h>
#else
#include "tenex/backend/cpu/serial_openmp.hpp"
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "tenex/backend/cpu/gather_kernel.hpp"
#include "tenex/scalar.hpp"

namespace tenex::detail::cpu::sparse {
namespace {

/// How a pattern's allowed elements lie in the dense layout: strides, and whether the free
/// modes are trailing (a row's free block is then contiguous).
struct RunLayout {
  std::vector<std::size_t> strides, free_extents;
  bool trailing = true;
  explicit RunLayout(const SparsePattern& p) : strides(dense_strides(p.extents)) {
    const std::size_t rank = p.extents.size();
    for (std::size_t i = 0; i < p.free_modes.size(); ++i) {
      trailing = trailing && p.free_modes[i] == rank - p.free_modes.size() + i;
    }
    for (std::size_t d : p.free_modes) free_extents.push_back(p.extents[d]);
  }
};

/// Calls f(dense offset, compact offset, count) for every run of allowed elements of one
/// key: `count` elements contiguous in both layouts. `pos` and `fidx` are scratch.
template <class F>
void for_each_run_of_key(const SparsePattern& p, const RunLayout& lay, const SparsePattern::Key& key,
                         std::vector<std::size_t>& pos, std::vector<std::size_t>& fidx, F&& f) {
  const std::vector<std::size_t>& st = lay.strides;
  for (const auto& dom : key.domains) {
    if (dom.empty()) return;
  }
  std::size_t base = 0;
  for (std::size_t d = 0; d < p.key_modes.size(); ++d) base += key.index[d] * st[p.key_modes[d]];
  std::size_t compact = key.offset;
  if (p.row_modes.size() == 1 && lay.trailing) {  // the common case: one restricted mode
    const std::size_t stride = st[p.row_modes[0]];
    for (std::size_t v : key.domains[0]) {
      f(base + v * stride, compact, p.free_size);
      compact += p.free_size;
    }
    return;
  }
  pos.assign(p.row_modes.size(), 0);
  while (true) {
    std::size_t off = base;
    for (std::size_t r = 0; r < p.row_modes.size(); ++r) off += key.domains[r][pos[r]] * st[p.row_modes[r]];
    if (lay.trailing) {
      f(off, compact, p.free_size);
      compact += p.free_size;
    } else {
      fidx.assign(p.free_modes.size(), 0);
      for (std::size_t e = 0; e < p.free_size; ++e) {
        std::size_t o = off;
        for (std::size_t i = 0; i < p.free_modes.size(); ++i) o += fidx[i] * st[p.free_modes[i]];
        f(o, compact++, std::size_t{1});
        for (std::size_t i = p.free_modes.size(); i-- > 0;) {
          if (++fidx[i] < lay.free_extents[i]) break;
          fidx[i] = 0;
        }
      }
    }
    if (!next_tuple(pos, key)) break;
  }
}

/// Whether a loop over `work` items is worth OpenMP threads.
bool parallel_worth(std::size_t items, std::size_t elements) {
  return items > 1 && elements >= (std::size_t{1} << 15) && !omp_in_parallel() && omp_get_max_threads() > 1;
}

template <class T>
void copy_run(T* to, const T* from, std::size_t n) {
  if (n == 1) {
    *to = *from;
  } else {
    std::memcpy(to, from, n * sizeof(T));
  }
}

}  // namespace

/// The dense tensor of a compact buffer, zeros where the pattern excludes. Every element is
/// written once, in parallel: when the key modes lead, each key owns a contiguous slab of
/// the dense layout, zeroed and filled by the thread that has the key (in cache).
template <class T>
void expand(const SparsePattern& p, const T* compact, T* dense) {
  const RunLayout lay(p);
  bool leading = true;
  for (std::size_t d = 0; d < p.key_modes.size(); ++d) leading = leading && p.key_modes[d] == d;
  const std::size_t keys = p.keys.size();
  [[maybe_unused]] const bool par = parallel_worth(keys, p.total);
  if (!leading || keys == 0) {
    std::fill(dense, dense + p.total, T(0));
#pragma omp parallel if (par)
    {
      std::vector<std::size_t> pos, fidx;
#pragma omp for schedule(static)
      for (std::size_t k = 0; k < keys; ++k) {
        for_each_run_of_key(p, lay, p.keys[k], pos, fidx,
                            [&](std::size_t d, std::size_t c, std::size_t n) { copy_run(dense + d, compact + c, n); });
      }
    }
    return;
  }
  const std::size_t slab = p.key_modes.empty() ? p.total : lay.strides[p.key_modes.back()];
  auto slab_of = [&](std::size_t k) {
    std::size_t s = 0;
    for (std::size_t d = 0; d < p.key_modes.size(); ++d) s += p.keys[k].index[d] * lay.strides[d];
    return s;
  };
  // Slabs of a few KiB and more are built in a buffer in cache and streamed out.
  const bool stream = streams_past_caches() && slab * sizeof(T) >= 4096 && slab * sizeof(T) <= (std::size_t{1} << 20);
#pragma omp parallel if (par)
  {
    std::vector<std::size_t> pos, fidx;
    std::vector<T> buffer(stream ? slab : 0);
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < keys; ++k) {
      const std::size_t begin = slab_of(k);
      const std::size_t from = k == 0 ? 0 : slab_of(k - 1) + slab;    // the slabs of keys with nothing before it
      const std::size_t to = k + 1 == keys ? p.total : begin + slab;  // the last key zeroes the rest
      if (!stream) {
        std::fill(dense + from, dense + to, T(0));
        for_each_run_of_key(p, lay, p.keys[k], pos, fidx,
                            [&](std::size_t d, std::size_t c, std::size_t n) { copy_run(dense + d, compact + c, n); });
        continue;
      }
      std::fill(buffer.begin(), buffer.end(), T(0));
      for_each_run_of_key(p, lay, p.keys[k], pos, fidx, [&](std::size_t d, std::size_t c, std::size_t n) {
        copy_run(buffer.data() + (d - begin), compact + c, n);
      });
      auto bytes = [](T* at) { return reinterpret_cast<char*>(at); };
      stream_bytes(bytes(dense + from), nullptr, (begin - from) * sizeof(T));
      stream_bytes(bytes(dense + begin), reinterpret_cast<const char*>(buffer.data()), slab * sizeof(T));
      stream_bytes(bytes(dense + begin + slab), nullptr, (to - begin - slab) * sizeof(T));
    }
  }
}

/// The allowed elements of a dense tensor, as a compact buffer (keys in parallel).
template <class T>
void gather(const SparsePattern& p, const T* dense, T* compact) {
  const RunLayout lay(p);
  const std::size_t keys = p.keys.size();
#pragma omp parallel if (parallel_worth(keys, p.allowed))
  {
    std::vector<std::size_t> pos, fidx;
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < keys; ++k) {
      for_each_run_of_key(p, lay, p.keys[k], pos, fidx,
                          [&](std::size_t d, std::size_t c, std::size_t n) { copy_run(compact + c, dense + d, n); });
    }
  }
}

bool same_layout(const OpNode& a, const OpNode& b) {
  if (!a.blocks() || !b.blocks() || a.labels != b.labels) return false;
  const SparsePattern& p = *a.pattern;
  const SparsePattern& q = *b.pattern;
  if (&p == &q) return true;
  if (p.key_modes != q.key_modes || p.row_modes != q.row_modes || p.free_modes != q.free_modes ||
      p.extents != q.extents || p.allowed != q.allowed || p.keys.size() != q.keys.size()) {
    return false;
  }
  for (std::size_t k = 0; k < p.keys.size(); ++k) {
    if (p.keys[k].index != q.keys[k].index || p.keys[k].domains != q.keys[k].domains) return false;
  }
  return true;
}

#define TENEX_INSTANTIATE_COMPACT_LAYOUT(T)                    \
  template void expand<T>(const SparsePattern&, const T*, T*); \
  template void gather<T>(const SparsePattern&, const T*, T*);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_COMPACT_LAYOUT)
#undef TENEX_INSTANTIATE_COMPACT_LAYOUT

}  // namespace tenex::detail::cpu::sparse
