// Runs statements with TENEX_DUMP_GRAPH set to a fresh folder and returns the DOT text of
// every set they evaluated (the folder is removed afterwards).
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace tenex_test {

inline std::vector<std::string> dumped_graphs(const std::function<void()>& statement) {
  static std::atomic<int> counter{0};
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("tenex-test-dump-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::setenv("TENEX_DUMP_GRAPH", dir.c_str(), 1);
  try {
    statement();
  } catch (...) {
    ::unsetenv("TENEX_DUMP_GRAPH");
    std::filesystem::remove_all(dir);
    throw;
  }
  ::unsetenv("TENEX_DUMP_GRAPH");
  std::vector<std::string> graphs;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    graphs.push_back(text.str());
  }
  std::filesystem::remove_all(dir);
  return graphs;
}

}  // namespace tenex_test
