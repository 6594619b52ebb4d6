#include "tenex/labels.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>

#include "tenex/error.hpp"

namespace tenex::detail {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

/// `text` as a message quotes it: bytes outside printable ASCII as \xNN, and a long text cut
/// to its first kQuotedLength characters with its length said.
std::string quote(std::string_view text) {
  constexpr std::size_t kQuotedLength = 48;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (std::size_t i = 0; i < text.size() && i < kQuotedLength; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += "\"";
  if (text.size() > kQuotedLength) out += "... (" + std::to_string(text.size()) + " characters)";
  return out;
}

}  // namespace

namespace {

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

/// The common text, identifiers of ASCII letters, digits and '_' separated by commas with no
/// spaces ("i,j", "mu,nu"), split in one pass without the locale's character classes; false
/// (and `labels` untouched) for anything else, which the general parser then reads. The
/// characters accepted are classified alike in every locale, so the result is the same.
bool parse_plain_labels(std::string_view text, std::vector<std::string>& labels) {
  std::size_t count = 1;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ',') {
      // An empty label, or one starting with a digit: the general parser's message.
      if (i + 1 == text.size() || !is_ascii_letter(text[i + 1])) return false;
      ++count;
    } else if (!is_ascii_letter(c) && !is_ascii_digit(c)) {
      return false;
    }
  }
  if (!is_ascii_letter(text[0])) return false;
  labels.reserve(count);
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      labels.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return true;
}

}  // namespace

std::vector<std::string> parse_labels(std::string_view text) {
  std::vector<std::string> labels;
  if (!text.empty() && text.size() <= kMaxLabelsLength && parse_plain_labels(text, labels)) return labels;
  if (text.size() > kMaxLabelsLength) {
    throw ShapeError("tenex: malformed labels " + quote(text) + ": longer than " + std::to_string(kMaxLabelsLength) +
                     " characters");
  }
  if (trim(text).empty()) return labels;
  labels.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1);
  std::size_t start = 0;
  std::size_t position = 1;
  while (true) {
    std::size_t comma = text.find(',', start);
    std::string_view piece = trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    if (piece.empty()) {
      throw ShapeError("tenex: malformed labels " + quote(text) + ": empty label at position " +
                       std::to_string(position));
    }
    if (!is_identifier(piece)) {
      throw ShapeError("tenex: malformed labels " + quote(text) + ": " + quote(piece) + " is not an identifier");
    }
    labels.emplace_back(piece);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
    ++position;
  }
  return labels;
}

std::string join_labels(const std::vector<std::string>& labels) {
  std::string s;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ",";
    s += is_new_mode_label(labels[i]) ? "<new>" : labels[i];
  }
  return s;
}

std::string format_extents(const std::vector<std::size_t>& extents) {
  std::string s = "{";
  for (std::size_t i = 0; i < extents.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(extents[i]);
  }
  return s + "}";
}

std::string describe(const std::vector<std::string>& labels, const std::vector<std::size_t>& extents) {
  return "(\"" + join_labels(labels) + "\") " + format_extents(extents);
}

std::vector<std::string> union_labels(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out = a;
  for (const std::string& l : b) {
    if (!contains_label(out, l)) out.push_back(l);
  }
  return out;
}

std::vector<std::string> filter_labels(const std::vector<std::string>& order, const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& l : order) {
    if (contains_label(allowed, l)) out.push_back(l);
  }
  return out;
}

std::size_t find_label(const std::vector<std::string>& labels, const std::string& label) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (same_label(labels[i], label)) return i;
  }
  return labels.size();
}

bool contains_label(const std::vector<std::string>& labels, const std::string& label) {
  return find_label(labels, label) < labels.size();
}

std::string make_new_mode_label() {
  static std::atomic<unsigned long long> counter{0};
  return "#new" + std::to_string(counter.fetch_add(1));
}

bool is_new_mode_label(const std::string& label) { return !label.empty() && label[0] == '#'; }

}  // namespace tenex::detail
