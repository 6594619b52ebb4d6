// The graph passes run before a set is evaluated; optimize() lists them in order.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tenex/graph/op_graph.hpp"

namespace tenex::passes {

/// Merges nodes that compute the same thing from the same operands.
void eliminate_common_subexpressions(OpGraph& graph);
/// Folds scale nodes into the alpha of the contraction or element-wise node they scale.
void fold_scales(OpGraph& graph);
/// Folds a conjugation (a fused node that only conjugates) of a complex product's factor into
/// the product (ContractParams::conj_a, conj_b): the GEMM reads the factor conjugated. Runs
/// after the fusion pass, under the name fold_scales.
void fold_conjugations(OpGraph& graph);
/// Flattens chains of contractions (through scales) that nothing else reads into one
/// n-ary product and re-evaluates it in the order of fewest flops (dynamic programming up
/// to 10 factors, greedy with a priority queue of the pairs that share a label beyond:
/// 1,000 factors in milliseconds). Sharing is read from the graph: a contraction with two
/// consumers is a named intermediate and is computed once. `memory_limit` (bytes; 0: none)
/// makes it prefer orders whose every intermediate fits.
void order_contractions(OpGraph& graph, std::size_t memory_limit = 0);
/// Folds add/subtract(contract(a, b), d) into one contraction with an addend,
/// contract(a, b, d){alpha, beta}: GEMM with beta, no temporary. Only where the product,
/// d and the sum have the same labels (a broadcast addend stays an element-wise node).
void fold_gemm_beta(OpGraph& graph);
/// Under `memory_limit` (bytes; 0: does nothing): a product whose intermediate takes more
/// than half the limit and that one contraction reads, summing one of its labels, is
/// computed in batches of that label (slices of the operands, each batch's product added
/// into the result by GEMM beta), so the whole intermediate is never held.
void slice_contractions(OpGraph& graph, std::size_t memory_limit);
/// `id` restricted to [lo, hi) of `label` (itself when it lacks the label), a slice node with
/// `note` (the order pass's slices carry "slice k": see common_subexpressions.cpp).
NodeId restrict_to(OpGraph& graph, NodeId id, const std::string& label, std::size_t lo, std::size_t hi,
                   const std::string& note = {});
/// Puts a mask node after every node that sparse maps restrict (sparse masking is a node
/// kind, run by the backend like any other).
void insert_masks(OpGraph& graph);
/// Fills every node's `holds` and `pattern`: the sparse maps true of its value, propagated
/// through the graph and composed, and the elements they allow (propagate_sparsity.cpp).
void propagate_sparsity(OpGraph& graph);
/// What a pass asks the backend that will run the graph (ggml's supports_op): whether it
/// evaluates `node` on per-key blocks of its sparse maps (its storage kinds list blocks and it
/// supports the node); `why`
/// says why not. Empty: every node is accepted.
using SparseSupport = std::function<bool(const OpNode& node, std::string& why)>;
/// Stores the nodes that maps make sparse enough as per-key blocks of their allowed
/// elements, absorbing masks into their producers (plan_sparse_evaluation.cpp). Named
/// "sparse" among the passes; without it a set runs dense and masked. `supports` is asked
/// first about every node that would run sparsely: when it declines one, the graph is left
/// as it was (dense and masked), `declined` says why and the result is false.
bool plan_sparse_evaluation(OpGraph& graph, const SparseSupport& supports = {}, std::string* declined = nullptr);
/// Folds a scale of a scale into one factor and a reduction of a reduction (a permutation
/// of a permutation) into one reading the original operand.
void collapse_chains(OpGraph& graph);
/// Makes every maximal region of element-wise work one fused node (fuse_elementwise.cpp).
void fuse_elementwise(OpGraph& graph);
/// The optional passes' names, in order: "cse", "order", ... (TENEX_PASSES chooses among them).
std::vector<std::string_view> pass_names();
/// The passes a TENEX_PASSES value chooses: "" or "all" (every pass), "none", or a
/// comma-separated list of names. Throws tenex::Error naming an unknown pass.
std::vector<std::string_view> selected_passes(std::string_view setting);
/// Runs the chosen passes in their fixed order, then the sparse-map masks, the sparsity
/// propagation and (when chosen) the sparse evaluation plan, then drops what
/// no output needs and validates the graph. `memory_limit`: see order_contractions.
/// `sparse_support`, `declined`: what the backend that will run the graph accepts of the
/// sparse evaluation plan, and why it declined it (see plan_sparse_evaluation).
void optimize(OpGraph& graph, const std::vector<std::string_view>& chosen, std::size_t memory_limit = 0,
              const SparseSupport& sparse_support = {}, std::string* declined = nullptr);
/// optimize() with the passes TENEX_PASSES chooses (every pass when unset).
void optimize(OpGraph& graph, std::size_t memory_limit = 0);

}  // namespace tenex::passes
