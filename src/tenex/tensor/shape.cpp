#include "tenex/tensor/shape.hpp"

#include "tenex/error.hpp"
#include "tenex/expression/indexed.hpp"

namespace tenex {

Shape::Shape() = default;
Shape::Shape(std::initializer_list<std::size_t> extents) : extents_(extents) {}
Shape::Shape(std::vector<std::size_t> extents) : extents_(std::move(extents)) {}

std::size_t Shape::size() const {
  std::size_t n = 1;
  for (std::size_t e : extents_) n *= e;
  return n;
}

std::size_t Shape::extent(std::size_t mode) const {
  if (mode >= extents_.size()) {
    throw Error("Shape::extent: mode " + std::to_string(mode) + " is out of range for shape " + to_string() +
                " of rank " + std::to_string(extents_.size()));
  }
  return extents_[mode];
}

std::string Shape::to_string() const {
  std::string s = "{";
  for (std::size_t i = 0; i < extents_.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(extents_[i]);
  }
  return s + "}";
}

Indexed<Shape> Shape::operator()(std::string_view labels) { return Indexed<Shape>(*this, labels); }

}  // namespace tenex
