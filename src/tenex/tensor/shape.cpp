#include "tenex/tensor/shape.hpp"

#include <limits>

#include "tenex/error.hpp"

namespace tenex {

namespace {

// Every shape's element count fits in std::size_t, so size() never wraps.
void check_size(const std::vector<std::size_t>& extents) {
  std::size_t n = 1;
  bool zero = false;
  bool overflow = false;
  for (std::size_t e : extents) {
    if (e == 0) zero = true;
    if (!overflow && e != 0 && n > std::numeric_limits<std::size_t>::max() / e) overflow = true;
    if (!overflow) n *= e;
  }
  if (overflow && !zero) {
    std::string text = "{";
    for (std::size_t i = 0; i < extents.size(); ++i) text += (i ? ", " : "") + std::to_string(extents[i]);
    throw ShapeError("tenex: Shape: the extents " + text + "} have more elements than std::size_t can count");
  }
}

}  // namespace

Shape::Shape() = default;
Shape::Shape(std::initializer_list<std::size_t> extents) : extents_(extents) { check_size(extents_); }
Shape::Shape(std::vector<std::size_t> extents) : extents_(std::move(extents)) { check_size(extents_); }

std::size_t Shape::size() const {
  std::size_t n = 1;
  for (std::size_t e : extents_) n *= e;
  return n;
}

std::size_t Shape::extent(std::size_t mode) const {
  if (mode >= extents_.size()) {
    throw Error("tenex: Shape::extent: mode " + std::to_string(mode) + " is out of range for shape " + to_string() +
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

}  // namespace tenex
