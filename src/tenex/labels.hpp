// The label vocabulary every layer shares: parsing and printing of mode labels ("i,j", "mu,nu",
// "" for a scalar), lookups, and the names of new modes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/export.hpp"

namespace tenex::detail {

/// The longest label text accepted (kMaxLabelsLength characters, spaces included).
inline constexpr std::size_t kMaxLabelsLength = 1024;

/// Splits comma-separated identifiers, tolerating spaces; "" (or only spaces) is rank 0.
/// Throws ShapeError `tenex: malformed labels "<text>": ...` (the text quoted with bytes outside
/// printable ASCII as \xNN, and cut after 48 characters), also for a text longer than
/// kMaxLabelsLength.
std::vector<std::string> parse_labels(std::string_view text);

/// "i,j"
std::string join_labels(const std::vector<std::string>& labels);
/// {3, 4}
TENEX_API std::string format_extents(const std::vector<std::size_t>& extents);
/// ("i,j") {3, 4}
TENEX_API std::string describe(const std::vector<std::string>& labels, const std::vector<std::size_t>& extents);

/// Position of `label` in `labels`, or labels.size().
/// a == b for labels: most are one or two characters, compared without a call of memcmp.
inline bool same_label(const std::string& a, const std::string& b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
std::size_t find_label(const std::vector<std::string>& labels, const std::string& label);
bool contains_label(const std::vector<std::string>& labels, const std::string& label);
/// The labels of `a`, then those of `b` that `a` lacks.
std::vector<std::string> union_labels(const std::vector<std::string>& a, const std::vector<std::string>& b);
/// The labels of `order` that `allowed` contains, in the order of `order`.
std::vector<std::string> filter_labels(const std::vector<std::string>& order, const std::vector<std::string>& allowed);

/// Labels made by a decomposition for a mode that is new (the inner mode of QR or SVD):
/// not an identifier, so never equal to a user's label; renamed by the assignment target.
std::string make_new_mode_label();
bool is_new_mode_label(const std::string& label);

}  // namespace tenex::detail
