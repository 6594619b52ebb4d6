// The values of truncated modes (backend/truncated_modes.hpp) on the host: a target shrunk to
// the kept rank when written, and padded back with zeros where the same set reads it again.
// Row-major. Private to the executor (runtime/execute.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace tenex::detail {

// Calls run(from, to, count) for each contiguous run of the last mode of `small` (extents
// <= `big`'s): `from` counts elements of `small`, `to` of `big`, in row-major order.
template <class Run>
void for_each_run(const std::vector<std::size_t>& small, const std::vector<std::size_t>& big, Run run) {
  const std::size_t rank = small.size();
  if (rank == 0) return run(std::size_t{0}, std::size_t{0}, std::size_t{1});
  for (std::size_t e : small) {
    if (e == 0) return;
  }
  std::vector<std::size_t> index(rank, 0), stride(rank, 1);
  for (std::size_t d = rank - 1; d > 0; --d) stride[d - 1] = stride[d] * big[d];
  std::size_t from = 0;
  while (true) {
    std::size_t to = 0;
    for (std::size_t d = 0; d + 1 < rank; ++d) to += index[d] * stride[d];
    run(from, to, small[rank - 1]);
    from += small[rank - 1];
    std::size_t d = rank - 1;
    while (d > 0) {
      if (++index[d - 1] < small[d - 1]) break;
      index[d - 1] = 0;
      --d;
    }
    if (d == 0) return;
  }
}

// In place: the elements of `small` (a block of `big` at the origin) moved to the front.
template <class T>
void compact_in_place(T* data, const std::vector<std::size_t>& big, const std::vector<std::size_t>& small) {
  for_each_run(small, big, [&](std::size_t from, std::size_t to, std::size_t count) {
    if (from != to) std::memmove(data + from, data + to, count * sizeof(T));
  });
}

// `out` (of `big`) = `in` (of `small`) padded with zeros.
template <class T>
void pad(const T* in, const std::vector<std::size_t>& small, T* out, const std::vector<std::size_t>& big) {
  std::size_t total = 1;
  for (std::size_t e : big) total *= e;
  std::fill(out, out + total, T(0));
  for_each_run(small, big, [&](std::size_t from, std::size_t to, std::size_t count) {
    std::copy(in + from, in + from + count, out + to);
  });
}

}  // namespace tenex::detail
