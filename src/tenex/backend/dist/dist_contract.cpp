// The distributed backend's contractions: operands brought to a GEMM layout on the grid,
// then p?gemm (dist_backend.hpp).
#include "tenex/backend/dist/dist_kernels.hpp"

namespace tenex::dist::detail {

using namespace kernels;  // NOLINT: this file's own helpers

namespace {

struct ContractionLabels {
  Labels batch, free_a, free_b, contracted;
};

/// Whether `m` (labels `labels`) is, as stored, the matrix (first | second).
template <class T>
bool stored_as(const DistMatrix<T>& m, const Labels& labels, const Labels& first, const Labels& second) {
  if (m.split != first.size() || labels.size() != first.size() + second.size()) return false;
  for (std::size_t k = 0; k < first.size(); ++k) {
    if (labels[k] != first[k]) return false;
  }
  for (std::size_t k = 0; k < second.size(); ++k) {
    if (labels[first.size() + k] != second[k]) return false;
  }
  return true;
}

/// The p?gemm flag that reads `m` as op(m), op given by `trans` ('N' or 'T'), conjugated
/// when `conj`: a transposed read becomes 'C' (no pass over m); PBLAS has no conjugated
/// untransposed read, so then m is conjugated locally (no messages), in place when `owned`
/// (a layout made for this product), else in a copy.
template <class T>
char conjugate_flag(const DistContext& ctx, MatrixPtr<T>& m, char trans, bool conj, bool owned) {
  if (!conj) return trans;
  if (trans == 'T') return 'C';
  if (!owned) m = copy_of(ctx, *m);
  for (T& x : m->local) x = conj_value(x);
  return 'N';
}

Labels concat(const Labels& a, const Labels& b, const Labels& c = {}) {
  Labels r = a;
  r.insert(r.end(), b.begin(), b.end());
  r.insert(r.end(), c.begin(), c.end());
  return r;
}

/// The labels of c = a b sorted into batch (on both operands and c), free (on one operand and
/// c) and contracted (on both operands only); the contracted ones in b's stored order where
/// that lets more operands be used as they are.
template <class T>
ContractionLabels contraction_labels(const MatrixPtr<T>& a, const MatrixPtr<T>& b, const Labels& la, const Labels& lb,
                                     const Labels& lc) {
  ContractionLabels cl;
  for (const auto& l : lc) {
    const bool in_a = has(la, l), in_b = has(lb, l);
    if (in_a && in_b) {
      cl.batch.push_back(l);
    } else if (in_a) {
      cl.free_a.push_back(l);
    } else if (in_b) {
      cl.free_b.push_back(l);
    }
  }
  for (const auto& l : la) {
    if (has(lb, l) && !has(lc, l) && !has(cl.contracted, l)) cl.contracted.push_back(l);
  }
  // The order of the contracted modes b stores, when that lets b be used as it is.
  if (cl.batch.empty() && all_distinct(lb) && all_distinct(la)) {
    Labels from_b;
    for (const auto& l : lb) {
      if (has(cl.contracted, l)) from_b.push_back(l);
    }
    auto direct = [&](const MatrixPtr<T>& m, const Labels& labels, const Labels& free, const Labels& contracted,
                      bool free_first) {
      return free_first ? (stored_as(*m, labels, free, contracted) || stored_as(*m, labels, contracted, free))
                        : (stored_as(*m, labels, contracted, free) || stored_as(*m, labels, free, contracted));
    };
    const int with_a = direct(a, la, cl.free_a, cl.contracted, true) + direct(b, lb, cl.free_b, cl.contracted, false);
    const int with_b = direct(a, la, cl.free_a, from_b, true) + direct(b, lb, cl.free_b, from_b, false);
    if (with_b > with_a) cl.contracted = from_b;
  }
  return cl;
}

/// The extents of the product's labels, from the operand that holds each.
struct LabelExtents {
  const Labels& la;
  const Labels& lb;
  const Extents& ea;
  const Extents& eb;

  std::size_t of(const std::string& l) const { return has(la, l) ? ea[find_label(la, l)] : eb[find_label(lb, l)]; }
  Extents of(const Labels& labels) const {
    Extents e;
    for (const auto& l : labels) e.push_back(of(l));
    return e;
  }
  std::size_t product(const Labels& labels) const {
    std::size_t p = 1;
    for (const auto& l : labels) p *= of(l);
    return p;
  }
};

/// What every way of running the product takes: the operands with their labels, the result's
/// labels and extents, alpha, and which factor is read conjugated.
template <class T>
struct Product {
  const DistContext& ctx;
  const MatrixPtr<T>& a;
  const MatrixPtr<T>& b;
  const Labels& la;
  const Labels& lb;
  const Labels& lc;
  const Extents& ec;
  const ContractionLabels& cl;
  const LabelExtents& extents;
  T alpha;
  bool conj_a, conj_b;  // complex sets: a factor read conjugated (always false in real sets)
};

/// An inner product (MP2's energy): b in a's layout, the products summed locally, one
/// MPI_Allreduce; no p?gemm on a 1 x N matricization, so neither operand is remapped to one.
template <class T>
MatrixPtr<T> inner_product(const Product<T>& x) {
  const MatrixPtr<T>& a = x.a;
  const MatrixPtr<T> mb = in_layout(x.ctx, x.b, x.lb, x.la, x.extents.ea, a->split);
  T local = T(0);
  for (std::size_t i = 0; i < a->local.size(); ++i) {
    local += (x.conj_a ? conj_value(a->local[i]) : a->local[i]) * (x.conj_b ? conj_value(mb->local[i]) : mb->local[i]);
  }
  T total = local;
  MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, x.ctx.comm);
  MatrixPtr<T> result = allocate_canonical<T>(x.ctx, {});
  if (!result->local.empty()) result->local[0] = x.alpha * total;
  return result;
}

/// A product without batch labels: one p?gemm of op(A) = (free_a | contracted) and op(B) =
/// (contracted | free_b), p?gemm's flags taking a stored transpose as it is; into c directly
/// where c's layout is (free_a | free_b) or its transpose, else through a matrix remapped to c.
template <class T>
MatrixPtr<T> unbatched_product(const Product<T>& x) {
  const DistContext& ctx = x.ctx;
  const MatrixPtr<T>& a = x.a;
  const MatrixPtr<T>& b = x.b;
  const Labels& la = x.la;
  const Labels& lb = x.lb;
  const Labels& lc = x.lc;
  const ContractionLabels& cl = x.cl;
  char ta = 'N', tb = 'N';
  MatrixPtr<T> ma, mb;
  if (all_distinct(la) && stored_as(*a, la, cl.free_a, cl.contracted)) {
    ma = a;
  } else if (all_distinct(la) && stored_as(*a, la, cl.contracted, cl.free_a)) {
    ma = a;
    ta = 'T';
  } else {
    ma = in_layout(ctx, a, la, concat(cl.free_a, cl.contracted), x.extents.of(concat(cl.free_a, cl.contracted)),
                   cl.free_a.size());
  }
  if (all_distinct(lb) && stored_as(*b, lb, cl.contracted, cl.free_b)) {
    mb = b;
  } else if (all_distinct(lb) && stored_as(*b, lb, cl.free_b, cl.contracted)) {
    mb = b;
    tb = 'T';
  } else {
    mb = in_layout(ctx, b, lb, concat(cl.contracted, cl.free_b), x.extents.of(concat(cl.contracted, cl.free_b)),
                   cl.contracted.size());
  }
  // A layout made here (not an operand's own matrix) may be conjugated in place.
  const bool owned_a = ma != a && ma != b, owned_b = mb != a && mb != b;
  const std::size_t split = canonical_split(lc.size());
  if (lc == concat(cl.free_a, cl.free_b) && split == cl.free_a.size()) {
    MatrixPtr<T> result = allocate_matrix<T>(ctx, x.ec, split);
    const char fa = conjugate_flag(ctx, ma, ta, x.conj_a, owned_a), fb = conjugate_flag(ctx, mb, tb, x.conj_b, owned_b);
    gemm(ctx, fa, fb, x.alpha, *ma, *mb, T(0), *result);
    return result;
  }
  if (lc == concat(cl.free_b, cl.free_a) && split == cl.free_b.size()) {
    // C^T = op(B)^T op(A)^T: the flags flip, the operands swap.
    MatrixPtr<T> result = allocate_matrix<T>(ctx, x.ec, split);
    const char fb = conjugate_flag(ctx, mb, tb == 'N' ? 'T' : 'N', x.conj_b, owned_b);
    const char fa = conjugate_flag(ctx, ma, ta == 'N' ? 'T' : 'N', x.conj_a, owned_a);
    gemm(ctx, fb, fa, x.alpha, *mb, *ma, T(0), *result);
    return result;
  }
  const Labels lt = concat(cl.free_a, cl.free_b);
  MatrixPtr<T> c = allocate_matrix<T>(ctx, x.extents.of(lt), cl.free_a.size());
  const char fa = conjugate_flag(ctx, ma, ta, x.conj_a, owned_a), fb = conjugate_flag(ctx, mb, tb, x.conj_b, owned_b);
  gemm(ctx, fa, fb, x.alpha, *ma, *mb, T(0), *c);
  return in_canonical(ctx, c, lt, lc, x.ec);
}

/// Batch indices by a loop: the operands as (batch, free | contracted) matrices, each batch's
/// rows cut out with p?gemr2d, multiplied, and put back.
template <class T>
MatrixPtr<T> batched_product(const Product<T>& x, std::size_t batches, std::size_t m, std::size_t n, std::size_t k) {
  const DistContext& ctx = x.ctx;
  const ContractionLabels& cl = x.cl;
  const Labels labels_a = concat(cl.batch, cl.free_a, cl.contracted);
  const Labels labels_b = concat(cl.batch, cl.contracted, cl.free_b);
  const Labels labels_c = concat(cl.batch, cl.free_a, cl.free_b);
  MatrixPtr<T> ma = in_layout(ctx, x.a, x.la, labels_a, x.extents.of(labels_a), cl.batch.size() + cl.free_a.size());
  MatrixPtr<T> mb = in_layout(ctx, x.b, x.lb, labels_b, x.extents.of(labels_b), cl.batch.size() + cl.contracted.size());
  MatrixPtr<T> mc = allocate_matrix<T>(ctx, x.extents.of(labels_c), cl.batch.size() + cl.free_a.size());
  MatrixPtr<T> pa = allocate_matrix<T>(ctx, {m, k}, 1);
  MatrixPtr<T> pb = allocate_matrix<T>(ctx, {k, n}, 1);
  MatrixPtr<T> pc = allocate_matrix<T>(ctx, {m, n}, 1);
  const int im = checked_int(m, "rows"), in = checked_int(n, "columns"), ik = checked_int(k, "contracted extent");
  for (std::size_t batch = 0; batch < batches; ++batch) {
    const int bi = checked_int(batch, "batch");
    copy_block(ctx, im, ik, *ma, bi * im, 0, *pa, 0, 0);
    copy_block(ctx, ik, in, *mb, bi * ik, 0, *pb, 0, 0);
    const char fa = conjugate_flag(ctx, pa, 'N', x.conj_a, true), fb = conjugate_flag(ctx, pb, 'N', x.conj_b, true);
    gemm(ctx, fa, fb, x.alpha, *pa, *pb, T(0), *pc);
    copy_block(ctx, im, in, *pc, 0, 0, *mc, bi * im, 0);
  }
  return in_canonical(ctx, mc, labels_c, x.lc, x.ec);
}

}  // namespace

template <class T>
KernelCount DistBackend<T>::run_contract(const ContractParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const OpNode& na = *args.operand_nodes[0];
  const OpNode& nb = *args.operand_nodes[1];
  const Labels& la = na.labels;
  const Labels& lb = nb.labels;
  const Labels& lc = args.node.labels;
  MatrixPtr<T> a = operand(args, 0), b = operand(args, 1);
  MatrixPtr<T> addend = args.operands.size() == 3 ? operand(args, 2) : nullptr;
  const ContractionLabels cl = contraction_labels(a, b, la, lb, lc);
  const Extents ea = na.extents, eb = nb.extents;
  const LabelExtents extents{la, lb, ea, eb};
  const std::size_t batches = extents.product(cl.batch), m = extents.product(cl.free_a);
  const std::size_t n = extents.product(cl.free_b), k = extents.product(cl.contracted);
  const T alpha = scalar_factor<T>(params.alpha, 0.0);
  const Product<T> product{ctx, a, b, la, lb, lc, args.node.extents, cl, extents, alpha, params.conj_a, params.conj_b};
  bool same_labels = la.size() == lb.size() && all_distinct(la) && all_distinct(lb);
  for (const auto& l : lb) same_labels = same_labels && has(la, l);
  MatrixPtr<T> result = lc.empty() && same_labels ? inner_product(product)
                        : cl.batch.empty()        ? unbatched_product(product)
                                                  : batched_product(product, batches, m, n, k);
  if (addend && params.beta != 0.0) {
    MatrixPtr<T> d = in_canonical(ctx, addend, args.operand_nodes[2]->labels, lc, args.node.extents);
    const T beta = scalar_factor<T>(params.beta, 0.0);
    if (result == a || result == b) result = copy_of(ctx, *result);
    for (std::size_t x = 0; x < result->local.size(); ++x) result->local[x] += beta * d->local[x];
  }
  set_out(args, {result});
  return {2.0 * static_cast<double>(batches) * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k),
          batches};
}


#define TENEX_INSTANTIATE_DIST_CONTRACT(T) \
  template KernelCount DistBackend<T>::run_contract(const ContractParams&, const KernelArgs<T>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DIST_CONTRACT)
#undef TENEX_INSTANTIATE_DIST_CONTRACT

}  // namespace tenex::dist::detail
