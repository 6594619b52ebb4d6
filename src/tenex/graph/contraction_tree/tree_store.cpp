#include "tenex/graph/contraction_tree/tree_store.hpp"

#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>

namespace tenex::tree {

namespace {

struct Store {
  std::mutex mutex;
  std::map<std::string, Path> trees;
};

Store& store() {
  static Store s;
  return s;
}

}  // namespace

std::string tree_key(const Network& network, const Options& options) {
  std::string key = "v1:";
  for (const auto& input : network.inputs) {
    for (std::size_t i = 0; i < input.size(); ++i) {
      // Appended piece by piece: GCC 12's -Wrestrict misfires on "x" + std::string&& (aarch64).
      if (i) key += '.';
      key += std::to_string(input[i]);
    }
    key += "/";
  }
  key += ":";
  for (std::size_t l = 0; l < network.labels(); ++l) {
    key += std::to_string(static_cast<unsigned long long>(network.extent[l])) + (network.kept[l] ? "k" : "") + ".";
  }
  char tail[96];
  std::snprintf(tail, sizeof tail, ":m%d:s%.6g:l%.6g", static_cast<int>(options.method), options.seconds,
                options.log2_max_size > 1e299 ? -1.0 : options.log2_max_size);
  return key + tail;
}

std::optional<Path> find_tree(const std::string& key) {
  Store& s = store();
  const std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.trees.find(key);
  if (it == s.trees.end()) return std::nullopt;
  return it->second;
}

void remember_tree(const std::string& key, const Path& path) {
  Store& s = store();
  const std::lock_guard<std::mutex> lock(s.mutex);
  if (s.trees.size() < most_trees || s.trees.count(key)) s.trees[key] = path;
}

std::vector<std::pair<std::string, Path>> remembered_trees() {
  Store& s = store();
  const std::lock_guard<std::mutex> lock(s.mutex);
  return {s.trees.begin(), s.trees.end()};
}

std::string path_text(const Path& path) {
  std::string text;
  for (const auto& [a, b] : path) {
    if (!text.empty()) text += ',';
    text += std::to_string(a);
    text += '-';
    text += std::to_string(b);
  }
  return text.empty() ? "-" : text;
}

std::optional<Path> parse_path(const std::string& text) {
  Path path;
  if (text == "-") return path;
  std::size_t at = 0;
  auto number = [&](std::size_t& out) {
    const std::size_t start = at;
    out = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 9) {
      out = out * 10 + static_cast<std::size_t>(text[at++] - '0');
    }
    return at > start;
  };
  while (at < text.size()) {
    std::size_t a = 0, b = 0;
    if (!number(a) || at >= text.size() || text[at++] != '-' || !number(b)) return std::nullopt;
    path.emplace_back(a, b);
    if (at < text.size() && text[at++] != ',') return std::nullopt;
  }
  return path;
}

}  // namespace tenex::tree
