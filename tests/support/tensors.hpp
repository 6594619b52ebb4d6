// Small tensors with known contents, for tests that check where each element goes.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <tenex/tenex.hpp>

namespace tenex_test {

/// 0, 1, 2, ... in row-major order.
template <class T>
tenex::Tensor<T> iota_tensor(const tenex::Shape& shape) {
  std::vector<T> values(shape.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(i);
  return tenex::Tensor<T>(shape, std::move(values));
}

}  // namespace tenex_test
