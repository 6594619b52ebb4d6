// The trees the driver found, remembered by network (a repeated network is not searched
// again in this process) and written to the plan file with the kernel plans (TENEX_PLAN_FILE,
// save_plans: the next process does not search either).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tenex/graph/contraction_tree/methods.hpp"

namespace tenex::tree {

/// The network and the options that decide its tree, as text without spaces.
std::string tree_key(const Network& network, const Options& options);

std::optional<Path> find_tree(const std::string& key);
/// Keeps at most `most_trees` (later ones are not kept).
void remember_tree(const std::string& key, const Path& path);
inline constexpr std::size_t most_trees = 4096;

/// Every tree remembered, for the plan file.
std::vector<std::pair<std::string, Path>> remembered_trees();

/// A path as text ("0-1,2-3,4-5") and back; nullopt for text that is not one.
std::string path_text(const Path& path);
std::optional<Path> parse_path(const std::string& text);

}  // namespace tenex::tree
