// The TCCG benchmark cases (../shared/bench/tccg_public.tsv): reading the table.
// Shared by the benchmark programs; header-only, no tenex dependency.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tccg {

/// One case: `c = a * b` in einsum letters, with the extent of every letter.
struct Case {
  std::string name;
  std::string einsum;
  std::string a, b, c;  // labels of each operand, one letter a mode
  std::map<char, std::size_t> extent;
};

inline std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// Throws std::runtime_error naming the line when it is not a case.
inline std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<Case> cases;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const auto fields = split(line, '\t');
    const std::size_t comma = fields.size() >= 3 ? fields[1].find(',') : std::string::npos;
    const std::size_t arrow = fields.size() >= 3 ? fields[1].find("->") : std::string::npos;
    if (comma == std::string::npos || arrow == std::string::npos || arrow < comma) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": expected name, einsum, extents");
    }
    Case c;
    c.name = fields[0];
    c.einsum = fields[1];
    c.a = fields[1].substr(0, comma);
    c.b = fields[1].substr(comma + 1, arrow - comma - 1);
    c.c = fields[1].substr(arrow + 2);
    for (const std::string& item : split(fields[2], ',')) {
      std::size_t value = 0;
      const char* first = item.data() + std::min<std::size_t>(2, item.size());
      const auto [end, error] = std::from_chars(first, item.data() + item.size(), value);
      if (item.size() < 3 || item[1] != '=' || error != std::errc() || end != item.data() + item.size()) {
        throw std::runtime_error(path + ":" + std::to_string(number) + ": bad extent '" + item + "'");
      }
      c.extent[item[0]] = value;
    }
    for (char label : c.a + c.b) {
      if (!c.extent.count(label)) {
        throw std::runtime_error(path + ":" + std::to_string(number) + ": no extent for '" + label + "'");
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// "bda" -> "b,d,a"
inline std::string labels_of(const std::string& letters) {
  std::string labels;
  for (char ch : letters) {
    if (!labels.empty()) labels += ',';
    labels += ch;
  }
  return labels;
}

inline std::vector<std::size_t> extents_of(const Case& c, const std::string& letters) {
  std::vector<std::size_t> extents;
  for (char ch : letters) extents.push_back(c.extent.at(ch));
  return extents;
}

}  // namespace tccg
