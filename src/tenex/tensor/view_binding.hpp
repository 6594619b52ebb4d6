// ViewBinding: the user's memory behind a TensorView, shared by every storage of the view.
//
// A view's value lives in memory the user owns. Each time the view is labelled, its proxy
// tensor gets a fresh Storage bound to that memory: a contiguous (row-major) view's storage
// holds the user's elements themselves (`direct`); a strided view's storage gathers them into
// its own buffer when a set first reads it. A result assigned to the view is written into the
// user's memory by the executor: directly by the kernel where the memory is contiguous, on the
// host and overlaps nothing else the set reads; otherwise computed apart and copied (scattered)
// out (runtime/execute.cpp). The binding also lists the sets that read the view, so that a
// statement writing it first runs earlier pending sets that still have to read the old value.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "tenex/tensor/producer.hpp"
#include "tenex/tensor/shape.hpp"

namespace tenex::detail {

struct ViewBinding {
  /// `strides` in elements, one per mode (already checked by TensorView).
  ViewBinding(void* data_, std::size_t element_size_, Shape shape_, std::vector<std::size_t> strides_)
      : data(data_), element_size(element_size_), shape(std::move(shape_)), strides(std::move(strides_)) {
    contiguous = true;
    std::size_t expected = 1;
    span = shape.size() == 0 ? 0 : element_size;
    for (std::size_t d = shape.rank(); d-- > 0;) {
      const std::size_t n = shape.extent(d);
      if (n > 1 && strides[d] != expected) contiguous = false;
      expected *= n;
      if (n > 0) span += (n - 1) * strides[d] * element_size;
    }
    if (shape.size() == 0) span = 0;
  }

  void* data;
  std::size_t element_size;
  Shape shape;
  std::vector<std::size_t> strides;  // elements
  bool contiguous = true;            // row-major without gaps: the storage uses the memory itself
  std::size_t span = 0;              // bytes from data to the end of the last element

  /// No two indices share an element: the view can be written. (Modes ordered by stride,
  /// each stride clears the span of the smaller ones.) A view without elements (an extent 0)
  /// has no two indices at all, whatever its strides.
  bool writable() const {
    if (shape.size() == 0) return true;
    std::vector<std::pair<std::size_t, std::size_t>> modes;  // (stride, extent) of modes with extent > 1
    for (std::size_t d = 0; d < shape.rank(); ++d) {
      if (shape.extent(d) > 1) modes.emplace_back(strides[d], shape.extent(d));
    }
    std::sort(modes.begin(), modes.end());
    std::size_t reach = 0;  // elements spanned by the smaller modes, minus one
    for (const auto& [stride, extent] : modes) {
      if (stride <= reach) return false;
      reach += (extent - 1) * stride;
    }
    return true;
  }

  /// Whether [begin, begin + bytes) shares a byte with the view's memory.
  bool overlaps(const void* begin, std::size_t bytes) const {
    if (span == 0 || bytes == 0 || begin == nullptr) return false;
    const auto a = reinterpret_cast<std::uintptr_t>(data);
    const auto b = reinterpret_cast<std::uintptr_t>(begin);
    return a < b + bytes && b < a + span;
  }
  bool overlaps(const ViewBinding& other) const { return other.overlaps(data, span); }

  /// A set that reads the view (its expression's linked state).
  void note_reader(const std::shared_ptr<Producer>& set) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(readers_, [](const std::weak_ptr<Producer>& r) { return r.expired(); });
    readers_.push_back(set);
  }
  /// The sets that read the view and still exist (they may have run already).
  std::vector<std::shared_ptr<Producer>> readers() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::shared_ptr<Producer>> alive;
    for (const auto& r : readers_) {
      if (auto p = r.lock()) alive.push_back(std::move(p));
    }
    return alive;
  }

  /// Row-major elements of the view's shape from (gather) or into (scatter) its memory.
  template <class T>
  void gather(T* to) const {
    walk<T>([&](T* user, std::size_t i) { to[i] = *user; });
  }
  template <class T>
  void scatter(const T* from) const {
    walk<T>([&](T* user, std::size_t i) { *user = from[i]; });
  }

 private:
  template <class T, class F>
  void walk(F&& f) const {
    const std::size_t rank = shape.rank();
    if (shape.size() == 0) return;
    if (rank == 0) {
      f(static_cast<T*>(data), 0);
      return;
    }
    std::vector<std::size_t> index(rank, 0);
    const std::size_t inner = shape.extent(rank - 1), inner_stride = strides[rank - 1];
    std::size_t i = 0;
    for (;;) {
      T* row = static_cast<T*>(data);
      for (std::size_t d = 0; d + 1 < rank; ++d) row += index[d] * strides[d];
      for (std::size_t x = 0; x < inner; ++x) f(row + x * inner_stride, i++);
      std::size_t d = rank - 1;
      for (;;) {
        if (d == 0) return;
        --d;
        if (++index[d] < shape.extent(d)) break;
        index[d] = 0;
      }
    }
  }

  mutable std::mutex mutex_;
  std::vector<std::weak_ptr<Producer>> readers_;
};

}  // namespace tenex::detail
