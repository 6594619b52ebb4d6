#include "tenex/backend/cuda/contraction_layout.hpp"

#include <algorithm>

#include "tenex/error.hpp"

namespace tenex::detail::cuda {

namespace {

using Labels = std::vector<std::string>;

bool has(const Labels& l, const std::string& x) { return std::find(l.begin(), l.end(), x) != l.end(); }

/// The labels of `from` that are in `group`, in `from`'s order.
Labels in_order(const Labels& from, const Labels& group) {
  Labels out;
  for (const auto& x : from) {
    if (has(group, x)) out.push_back(x);
  }
  return out;
}

Labels concat(const Labels& a, const Labels& b, const Labels& c = {}) {
  Labels out = a;
  out.insert(out.end(), b.begin(), b.end());
  out.insert(out.end(), c.begin(), c.end());
  return out;
}

/// Whether `labels` is batch + first + second or batch + second + first; `first_leads` says which.
bool fits(const Labels& labels, const Labels& batch, const Labels& first, const Labels& second, bool& first_leads) {
  if (labels == concat(batch, first, second)) {
    first_leads = true;
    return true;
  }
  if (labels == concat(batch, second, first)) {
    first_leads = false;
    return true;
  }
  return false;
}

}  // namespace

namespace {

/// The plan with the groups ordered as the result has them (`result_orders`, when the result
/// can be written in place) or as the operands have them.
GemmPlan plan_with(const Labels& la, const Labels& lb, const Labels& lc, const Labels& labels,
                   const std::vector<std::size_t>& extents, bool result_orders) {
  auto extent = [&](const std::string& x) -> long long {
    const auto it = std::find(labels.begin(), labels.end(), x);
    if (it == labels.end()) throw InternalError("tenex: cuda: contraction label " + x + " has no extent");
    return static_cast<long long>(extents[static_cast<std::size_t>(it - labels.begin())]);
  };
  auto product = [&](const Labels& group) {
    long long p = 1;
    for (const auto& x : group) p *= extent(x);
    return p;
  };
  GemmPlan plan;
  Labels batch, m, n, k;
  for (const auto& x : lc) {
    if (has(la, x) && has(lb, x)) {
      batch.push_back(x);
    } else if (has(la, x)) {
      m.push_back(x);
    } else if (has(lb, x)) {
      n.push_back(x);
    } else {
      throw InternalError("tenex: cuda: result label " + x + " is in neither operand");
    }
  }
  for (const auto& x : la) {
    if (has(lb, x) && !has(lc, x)) k.push_back(x);
  }
  // Orders: the result's when it can be written in place, else the operands' own.
  bool c_m_first = true;
  bool c_fits = fits(lc, batch, m, n, c_m_first);
  if (!c_fits || !result_orders) {
    batch = in_order(la, batch);
    m = in_order(la, m);
    n = in_order(lb, n);
    c_fits = fits(lc, batch, m, n, c_m_first);
  }
  bool a_m_first = true, b_k_first = true;
  Labels k_a = in_order(la, k), k_b = in_order(lb, k);
  k = k_a;
  if (fits(la, batch, m, k_a, a_m_first) && !fits(lb, batch, k_a, n, b_k_first) && fits(lb, batch, k_b, n, b_k_first) &&
      !fits(la, batch, m, k_b, a_m_first)) {
    k = k_a;  // a in place, b permuted: either way one permutation
  } else if (!fits(la, batch, m, k_a, a_m_first) && fits(lb, batch, k_b, n, b_k_first)) {
    k = k_b;  // a is permuted anyway: take b's order
  }
  plan.batch_labels = batch;
  plan.m_labels = m;
  plan.n_labels = n;
  plan.k_labels = k;
  plan.m = product(m);
  plan.n = product(n);
  plan.k = product(k);
  plan.batch = product(batch);

  // a: in place as batch (m k | k m), else permuted to batch m k.
  plan.a.labels = la;
  if (!fits(la, batch, m, k, a_m_first)) {
    plan.a.labels = concat(batch, m, k);
    plan.a.permute = true;
    a_m_first = true;
  }
  plan.b.labels = lb;
  if (!fits(lb, batch, k, n, b_k_first)) {
    plan.b.labels = concat(batch, k, n);
    plan.b.permute = true;
    b_k_first = true;
  }
  plan.c.labels = lc;
  if (!c_fits) {
    plan.c.labels = concat(batch, m, n);
    plan.c.permute = true;
    c_m_first = true;
  }
  // Column-major reading of row-major data: c (m n) row-major is the column-major n x m
  // matrix c^T = b^T a^T; c (n m) row-major is the column-major m x n matrix c = a b.
  plan.swap = !c_m_first;
  if (!plan.swap) {
    // cuBLAS: C' (n x m) = op(B') (n x k) * op(A') (k x m), B' = b's data, A' = a's data.
    plan.rows = plan.n;
    plan.cols = plan.m;
    plan.c.ld = plan.n;
    // b (k n) row-major = column-major n x k = b^T: op N, ld n; b (n k): column-major k x n, op T, ld k.
    plan.b.transpose = !b_k_first;
    plan.b.ld = b_k_first ? plan.n : plan.k;
    // a (m k) row-major = column-major k x m = a^T: op N, ld k; a (k m): column-major m x k, op T, ld m.
    plan.a.transpose = !a_m_first;
    plan.a.ld = a_m_first ? plan.k : plan.m;
  } else {
    // cuBLAS: C' (m x n) = op(A') (m x k) * op(B') (k x n).
    plan.rows = plan.m;
    plan.cols = plan.n;
    plan.c.ld = plan.m;
    // a (m k): column-major k x m, op T, ld k; a (k m): column-major m x k, op N, ld m.
    plan.a.transpose = a_m_first;
    plan.a.ld = a_m_first ? plan.k : plan.m;
    // b (k n): column-major n x k, op T, ld n; b (n k): column-major k x n, op N, ld k.
    plan.b.transpose = b_k_first;
    plan.b.ld = b_k_first ? plan.n : plan.k;
  }
  plan.a.ld = std::max(plan.a.ld, 1LL);
  plan.b.ld = std::max(plan.b.ld, 1LL);
  plan.c.ld = std::max(plan.c.ld, 1LL);
  plan.a.batch_stride = plan.m * plan.k;
  plan.b.batch_stride = plan.k * plan.n;
  plan.c.batch_stride = plan.m * plan.n;
  return plan;
}

}  // namespace

GemmPlan plan_gemm(const Labels& la, const Labels& lb, const Labels& lc, const Labels& labels,
                   const std::vector<std::size_t>& extents) {
  // The result's orders, or the operands': whichever permutes fewer elements (ties: the
  // result's, which writes the output in place).
  GemmPlan by_result = plan_with(la, lb, lc, labels, extents, true);
  GemmPlan by_operands = plan_with(la, lb, lc, labels, extents, false);
  auto permuted = [](const GemmPlan& p) {
    return (p.a.permute ? p.m * p.k * p.batch : 0) + (p.b.permute ? p.k * p.n * p.batch : 0) +
           (p.c.permute ? p.m * p.n * p.batch : 0);
  };
  return permuted(by_operands) < permuted(by_result) ? by_operands : by_result;
}

std::string describe(const GemmPlan& plan) {
  auto list = [](const Labels& l) {
    std::string s = "(";
    for (std::size_t i = 0; i < l.size(); ++i) s += (i ? "," : "") + l[i];
    return s + ")";
  };
  const GemmOperand& first = plan.swap ? plan.a : plan.b;
  const GemmOperand& second = plan.swap ? plan.b : plan.a;
  std::string s = std::string(plan.batch > 1 ? "gemm_strided_batched" : "gemm") + "(" + (first.transpose ? "T" : "N") +
                  "," + (second.transpose ? "T" : "N") + ") rows=" + std::to_string(plan.rows) +
                  " cols=" + std::to_string(plan.cols) + " k=" + std::to_string(plan.k) +
                  " ld=" + std::to_string(first.ld) + "," + std::to_string(second.ld) + "," + std::to_string(plan.c.ld);
  if (plan.batch > 1) s += " batch=" + std::to_string(plan.batch);
  if (plan.a.permute) s += " permute a to " + list(plan.a.labels);
  if (plan.b.permute) s += " permute b to " + list(plan.b.labels);
  if (plan.c.permute) s += " permute c from " + list(plan.c.labels);
  return s;
}

}  // namespace tenex::detail::cuda
