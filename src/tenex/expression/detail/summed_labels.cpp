// The check that a statement sums no label over a sum whose terms do not all carry it
// (docs/einstein.md, "A label some terms lack"): `r("i,b") = f("b,c") * t("i,c") + x("i,k")`
// would add f t once per value of k. The walk follows Lowering::build's labels (what each node
// is asked for and what it sums after itself) without building anything.
#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "tenex/error.hpp"
#include "tenex/expression/detail/make.hpp"
#include "tenex/labels.hpp"

namespace tenex::detail {

bool adds_terms(const ExprNode& node) {
  if (const auto* e = node_as<ElementwiseNode>(node)) return e->op == OpKind::add || e->op == OpKind::subtract;
  if (const auto* m = node_as<MapNode>(node)) {
    return m->program.size() == 3 && m->program[1].op == FusedOp::constant &&
           (m->program[2].op == FusedOp::add || m->program[2].op == FusedOp::subtract);
  }
  return false;
}

namespace {

/// Whether a sum over the value of `node` is the same sum over child `i` (a sum distributes
/// over it): sums, scales, permutations, products, sums by label and a quotient's numerator.
/// A function, a decomposition or a slice sees its operand whole: a broadcast inside it is
/// an operand's value, not a term.
bool distributes(const ExprNode& node, std::size_t i) {
  if (adds_terms(node) || node.is_product()) return true;
  if (node_as<ScaleNode>(node) || node_as<PermutationNode>(node)) return true;
  if (const auto* e = node_as<ElementwiseNode>(node)) return e->op == OpKind::divide && i == 0;
  if (const auto* r = node_as<ReductionNode>(node)) return r->op == ReduceOp::sum;
  return false;
}

struct Visit {
  const ExprNode* node;
  std::vector<std::string> keep;       // what the consumer asks of the node
  std::vector<std::string> summed;     // labels of `keep` an ancestor sums by the summation rule
  std::vector<std::string> explicit_;  // labels a tenex::sum above sums: summing them is meant
};

[[noreturn]] void throw_stray(const ExprNode& sum, const std::string& label, const std::vector<std::string>& target) {
  const std::size_t extent = sum.extents.at(find_label(sum.labels, label));
  std::string free_in, absent_from;
  if (node_as<MapNode>(sum)) {
    free_in = sum.children[0]->text();
    absent_from = "the scalar";
  } else {
    const ExprNode& a = *sum.children[0];
    const ExprNode& b = *sum.children[1];
    const bool in_a = contains_label(a.labels, label);
    free_in = "the term " + (in_a ? a : b).text();
    absent_from = "the term " + (in_a ? b : a).text();
  }
  throw ShapeError("tenex: a sum whose terms lack a summed label: \"" + label + "\" (extent " + std::to_string(extent) +
                   ") is summed because the target (\"" + join_labels(target) + "\") drops it, but it is free in " +
                   free_in + " and absent from " + absent_from + ", which would be added " + std::to_string(extent) +
                   " times. Sum the term that carries it (" + "tenex::sum(term, \"" + label + "\")), keep \"" + label +
                   "\" in the target, or write tenex::sum(..., \"" + label + "\") around the sum if that is meant");
}

/// The labels that `visit.node` sums after itself (Lowering::build): those it carries freely
/// and its consumer does not ask for. Returns the labels its children are asked for.
std::vector<std::string> widened(const Visit& visit, std::vector<std::string>& dropped) {
  const ExprNode& node = *visit.node;
  if (node.is_product()) return visit.keep;
  for (const std::string& l : node.implicit_labels()) {
    if (!contains_label(visit.keep, l)) dropped.push_back(l);
  }
  if (dropped.empty()) return visit.keep;
  std::vector<std::string> wide;
  for (const std::string& l : node.labels) {
    if (contains_label(visit.keep, l) || contains_label(dropped, l)) wide.push_back(l);
  }
  return wide;
}

void check_node(const Visit& visit, const std::vector<std::string>& target, std::vector<Visit>& stack) {
  const ExprNode& node = *visit.node;
  std::vector<std::string> dropped;
  const std::vector<std::string> keep = widened(visit, dropped);
  std::vector<std::string> summed = visit.summed, explicit_ = visit.explicit_;
  for (const std::string& l : dropped) {
    if (contains_label(explicit_, l)) continue;
    if (!contains_label(summed, l)) summed.push_back(l);
  }
  if (adds_terms(node)) {
    for (const std::string& l : summed) {
      for (const NodePtr& child : node.children) {
        if (!contains_label(child->labels, l)) throw_stray(node, l, target);
      }
      if (node_as<MapNode>(node)) throw_stray(node, l, target);
    }
  }
  if (const auto* r = node_as<ReductionNode>(node); r && r->op == ReduceOp::sum) {
    explicit_.insert(explicit_.end(), r->reduced.begin(), r->reduced.end());
  }
  for (std::size_t i = 0; i < node.children.size(); ++i) {
    const ExprNode& child = *node.children[i];
    if (!child.holds_sum) continue;
    std::vector<std::string> child_keep = node.child_keep(i, keep);
    const bool linear = distributes(node, i);
    stack.push_back(Visit{&child, std::move(child_keep),
                          linear ? filter_labels(summed, child.labels) : std::vector<std::string>{},
                          linear ? filter_labels(explicit_, child.labels) : std::vector<std::string>{}});
  }
}

std::string key_of(const Visit& v) {
  return std::to_string(reinterpret_cast<std::uintptr_t>(v.node)) + ":" + join_labels(v.keep) + ":" +
         join_labels(v.summed) + ":" + join_labels(v.explicit_);
}

}  // namespace

void check_summed_labels(const NodePtr& value, const std::vector<std::string>& keep,
                         const std::vector<std::string>& target) {
  if (!value->holds_sum) return;
  std::vector<Visit> stack{Visit{value.get(), keep, {}, {}}};
  std::unordered_set<std::string> seen;
  while (!stack.empty()) {
    Visit visit = std::move(stack.back());
    stack.pop_back();
    if (!seen.insert(key_of(visit)).second) continue;
    check_node(visit, target, stack);
  }
}

}  // namespace tenex::detail
