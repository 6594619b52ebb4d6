// tenex/tensor/shape.hpp — the extents of a tensor.
//
// Shapes compose like tensors: an expression over Shape objects computes the
// extents of its result without touching data.
//
//   tenex::Shape a{3, 4}, b{4, 5}, c;
//   c("i,j") = a("i,k") * b("k,j");      // c == Shape{3, 5}
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/export.hpp"

namespace tenex {

template <class Object>
class Indexed;

class TENEX_API Shape {
 public:
  /// Rank 0: the shape of a scalar.
  Shape();
  Shape(std::initializer_list<std::size_t> extents);
  explicit Shape(std::vector<std::size_t> extents);

  std::size_t rank() const { return extents_.size(); }
  /// Product of the extents (1 for rank 0, 0 when any extent is 0).
  std::size_t size() const;
  /// Extent of one mode; throws tenex::Error when mode >= rank().
  std::size_t extent(std::size_t mode) const;
  const std::vector<std::size_t>& extents() const { return extents_; }
  bool operator==(const Shape& other) const { return extents_ == other.extents_; }
  bool operator!=(const Shape& other) const { return extents_ != other.extents_; }

  /// Labels this shape's modes for use in an expression: `s("i,j")`.
  Indexed<Shape> operator()(std::string_view labels);

  /// "{3, 4}"
  std::string to_string() const;

 private:
  std::vector<std::size_t> extents_;
};

}  // namespace tenex
