// LinkedState: what a set of linked expressions shares.
//
// Every expression handle holds a shared_ptr to a state. Combining handles of two states
// merges them: the smaller set forwards to the larger one's root (a union-find by size
// whose links are owning pointers, with path compression), so the root lives as long as
// any handle of the set and recording a statement costs O(1) amortised however long a set
// stays open. When the last handle dies, the root's destructor evaluates what the set
// recorded. Pending storages keep a weak pointer to a state of the set (through the
// Producer interface of tensor/), and reading one flushes the set early.
//
// Threads: every member takes sets_mutex() (tensor/producer.hpp), so that a pending result
// used as an operand on another thread joins its set safely (both threads' statements then
// form one set, run when its last handle goes or one of its results is read). A set runs
// outside the lock; a thread reading a result of a set another thread is running waits for it.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tenex/backend_choice.hpp"
#include "tenex/backend_kind.hpp"
#include "tenex/expression/detail/node.hpp"
#include "tenex/sparse/sparse_map.hpp"
#include "tenex/tensor/producer.hpp"

namespace tenex::detail {

/// One recorded statement: target <- rhs, the rhs labels renamed to `target_labels`.
struct Assignment {
  NodePtr rhs;
  std::vector<std::string> rhs_labels;     // rhs labels (after renaming new modes), kept by the target
  std::vector<std::string> target_labels;  // the target's labels, in the target's order
  std::shared_ptr<void> target;            // Storage<T> of the result
  std::shared_ptr<bool> cancelled;         // set when a failed multi-target statement undoes it
};

struct RegisteredSparseMap {
  std::vector<std::string> source, target;
  std::shared_ptr<const SparseMap> map;
};

/// Everything a set hands to the pipeline when it runs.
struct SetRecord {
  DType dtype = DType::f64;
  BackendChoice backend;
  // No set_default_backend choice when the set was made: TENEX_BACKEND decides, read by
  // the pipeline when the set runs (resolve_backend in runtime/compile.hpp sets `backend`).
  bool backend_from_environment = false;
  std::vector<Assignment> assignments;
  std::vector<RegisteredSparseMap> sparse_maps;
};

/// The pipeline the linked state hands its sets to (runtime/ installs it). Never throws:
/// errors go to the results of the set.
using SetRunner = void (*)(SetRecord& set) noexcept;
void install_set_runner(SetRunner runner);

class LinkedState final : public Producer {
 public:
  explicit LinkedState(DType dtype);
  /// A state that has seen `labels` with `extents` (an operand's own set): noted without the
  /// lock, as no other thread can reach a state being made.
  LinkedState(DType dtype, const std::vector<std::string>& labels, const std::vector<std::size_t>& extents);
  ~LinkedState();
  LinkedState(const LinkedState&) = delete;
  LinkedState& operator=(const LinkedState&) = delete;

  /// The root of the set this state belongs to.
  static std::shared_ptr<LinkedState> root(std::shared_ptr<LinkedState> state);
  /// The same, with sets_mutex() held by the caller: a root is returned as it is.
  static std::shared_ptr<LinkedState> root_locked(const std::shared_ptr<LinkedState>& state) {
    return state->forward_ ? root(state) : state;
  }
  /// Merges the sets of a and b; returns the root of the union.
  static std::shared_ptr<LinkedState> merge(const std::shared_ptr<LinkedState>& a,
                                            const std::shared_ptr<LinkedState>& b);
  /// The same, with sets_mutex() held by the caller.
  static std::shared_ptr<LinkedState> merge_locked(const std::shared_ptr<LinkedState>& a,
                                                   const std::shared_ptr<LinkedState>& b);

  /// Records an assignment on the root of `state`'s set; marks its target storage pending.
  static void record(const std::shared_ptr<LinkedState>& state, Assignment assignment);
  /// Labels seen in the set and their largest extent (for validating sparse maps).
  void note_labels(const std::vector<std::string>& labels, const std::vector<std::size_t>& extents);
  /// The largest extent `label` has in the set, or nullopt when it does not occur.
  std::optional<std::size_t> label_extent(const std::string& label) const;
  void add_sparse_map(RegisteredSparseMap map);
  /// The set's sparse maps (a copy: another thread may add to the set meanwhile).
  std::vector<RegisteredSparseMap> sparse_maps() const;
  /// Whether part of the set already ran (an early read): a sparse map added now would not
  /// apply to what ran, so set_sparse_map refuses it.
  bool has_run() const;

  /// Evaluates every assignment recorded so far (on the root). Errors go to the results.
  void flush() noexcept override;
  /// Whether a statement of the set holds a truncated decomposition (on the root).
  bool decides_extents() const override;
  /// The statements recorded and not yet run (on the root), for tenex::explain.
  std::vector<Assignment> recorded() const;
  /// The backend the set asks for (on the root), for tenex::explain: set.backend and
  /// set.backend_from_environment as a flush hands them to the pipeline.
  void backend(SetRecord& set) const;

 private:
  DType dtype_;
  BackendChoice backend_;          // set_default_backend's choice when the state was made
  bool backend_from_environment_;  // none: TENEX_BACKEND decides when the set runs
  std::shared_ptr<LinkedState> forward_;
  std::size_t size_ = 1;  // states in this set (roots only)
  bool has_run_ = false;
  bool decides_extents_ = false;  // a statement recorded holds a truncated decomposition (roots)
  std::vector<Assignment> assignments_;
  std::vector<RegisteredSparseMap> sparse_maps_;
  // A set has a handful of labels: a flat list (a scan), its first few in the state itself,
  // costs less than a map's node per label, paid by every expression made. A set with many
  // (a product of a thousand matrices, each with its own labels) indexes them too, so that
  // noting a node's labels costs O(labels), not O(labels x labels seen).
  using LabelExtent = std::pair<std::string, std::size_t>;
  static constexpr std::size_t indexed_from = 16;  // labels seen
  std::array<LabelExtent, 4> labels_seen_{};
  std::size_t labels_seen_count_ = 0;
  std::vector<LabelExtent> more_labels_seen_;                 // past the first four
  std::unordered_map<std::string, std::size_t> label_index_;  // label -> i, past indexed_from
  LabelExtent& label_seen(std::size_t i) {
    return i < labels_seen_.size() ? labels_seen_[i] : more_labels_seen_[i - labels_seen_.size()];
  }
  const LabelExtent& label_seen(std::size_t i) const {
    return i < labels_seen_.size() ? labels_seen_[i] : more_labels_seen_[i - labels_seen_.size()];
  }
  void note_label(const std::string& label, std::size_t extent);
  // Adds `label`, which is not among the labels seen.
  void append_label(const std::string& label, std::size_t extent);
  // The index of `label` among the labels seen, or labels_seen_count_.
  std::size_t find_label_seen(const std::string& label) const;
  // The root, with sets_mutex() held.
  LinkedState& top();
  const LinkedState& top() const;
};

}  // namespace tenex::detail
