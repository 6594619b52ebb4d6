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
  const Extents ea = na.extents, eb = nb.extents;
  auto extent = [&](const std::string& l) { return has(la, l) ? ea[find_label(la, l)] : eb[find_label(lb, l)]; };
  auto extents = [&](const Labels& labels) {
    Extents e;
    for (const auto& l : labels) e.push_back(extent(l));
    return e;
  };
  std::size_t batches = 1, m = 1, n = 1, k = 1;
  for (const auto& l : cl.batch) batches *= extent(l);
  for (const auto& l : cl.free_a) m *= extent(l);
  for (const auto& l : cl.free_b) n *= extent(l);
  for (const auto& l : cl.contracted) k *= extent(l);
  const T alpha = scalar_factor<T>(params.alpha, 0.0);
  // Complex sets: conj_a / conj_b read a factor conjugated (always false in real sets).
  const bool conj_a = params.conj_a, conj_b = params.conj_b;
  MatrixPtr<T> result;
  bool same_labels = la.size() == lb.size() && all_distinct(la) && all_distinct(lb);
  for (const auto& l : lb) same_labels = same_labels && has(la, l);
  if (lc.empty() && same_labels) {
    // An inner product (MP2's energy): b in a's layout, the products summed locally, one
    // MPI_Allreduce; no p?gemm on a 1 x N matricization, so neither operand is remapped to one.
    const MatrixPtr<T> mb = in_layout(ctx, b, lb, la, ea, a->split);
    T local = T(0);
    for (std::size_t x = 0; x < a->local.size(); ++x) {
      local += (conj_a ? conj_value(a->local[x]) : a->local[x]) * (conj_b ? conj_value(mb->local[x]) : mb->local[x]);
    }
    T total = local;
    MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, ctx.comm);
    result = allocate_canonical<T>(ctx, {});
    if (!result->local.empty()) result->local[0] = alpha * total;
  } else if (cl.batch.empty()) {
    // op(A) is (free_a | contracted), op(B) is (contracted | free_b): p?gemm's flags take a
    // stored transpose as it is.
    char ta = 'N', tb = 'N';
    MatrixPtr<T> ma, mb;
    if (all_distinct(la) && stored_as(*a, la, cl.free_a, cl.contracted)) {
      ma = a;
    } else if (all_distinct(la) && stored_as(*a, la, cl.contracted, cl.free_a)) {
      ma = a;
      ta = 'T';
    } else {
      ma = in_layout(ctx, a, la, concat(cl.free_a, cl.contracted), extents(concat(cl.free_a, cl.contracted)),
                     cl.free_a.size());
    }
    if (all_distinct(lb) && stored_as(*b, lb, cl.contracted, cl.free_b)) {
      mb = b;
    } else if (all_distinct(lb) && stored_as(*b, lb, cl.free_b, cl.contracted)) {
      mb = b;
      tb = 'T';
    } else {
      mb = in_layout(ctx, b, lb, concat(cl.contracted, cl.free_b), extents(concat(cl.contracted, cl.free_b)),
                     cl.contracted.size());
    }
    // A layout made here (not an operand's own matrix) may be conjugated in place.
    const bool owned_a = ma != a && ma != b, owned_b = mb != a && mb != b;
    const std::size_t split = canonical_split(lc.size());
    if (lc == concat(cl.free_a, cl.free_b) && split == cl.free_a.size()) {
      result = allocate_matrix<T>(ctx, args.node.extents, split);
      const char fa = conjugate_flag(ctx, ma, ta, conj_a, owned_a), fb = conjugate_flag(ctx, mb, tb, conj_b, owned_b);
      gemm(ctx, fa, fb, alpha, *ma, *mb, T(0), *result);
    } else if (lc == concat(cl.free_b, cl.free_a) && split == cl.free_b.size()) {
      // C^T = op(B)^T op(A)^T: the flags flip, the operands swap.
      result = allocate_matrix<T>(ctx, args.node.extents, split);
      const char fb = conjugate_flag(ctx, mb, tb == 'N' ? 'T' : 'N', conj_b, owned_b);
      const char fa = conjugate_flag(ctx, ma, ta == 'N' ? 'T' : 'N', conj_a, owned_a);
      gemm(ctx, fb, fa, alpha, *mb, *ma, T(0), *result);
    } else {
      const Labels lt = concat(cl.free_a, cl.free_b);
      MatrixPtr<T> c = allocate_matrix<T>(ctx, extents(lt), cl.free_a.size());
      const char fa = conjugate_flag(ctx, ma, ta, conj_a, owned_a), fb = conjugate_flag(ctx, mb, tb, conj_b, owned_b);
      gemm(ctx, fa, fb, alpha, *ma, *mb, T(0), *c);
      result = in_canonical(ctx, c, lt, lc, args.node.extents);
    }
  } else {
    // Batch indices by a loop: the operands as (batch, free | contracted) matrices, each
    // batch's rows cut out with p?gemr2d.
    const Labels labels_a = concat(cl.batch, cl.free_a, cl.contracted);
    const Labels labels_b = concat(cl.batch, cl.contracted, cl.free_b);
    const Labels labels_c = concat(cl.batch, cl.free_a, cl.free_b);
    MatrixPtr<T> ma = in_layout(ctx, a, la, labels_a, extents(labels_a), cl.batch.size() + cl.free_a.size());
    MatrixPtr<T> mb = in_layout(ctx, b, lb, labels_b, extents(labels_b), cl.batch.size() + cl.contracted.size());
    MatrixPtr<T> mc = allocate_matrix<T>(ctx, extents(labels_c), cl.batch.size() + cl.free_a.size());
    MatrixPtr<T> pa = allocate_matrix<T>(ctx, {m, k}, 1);
    MatrixPtr<T> pb = allocate_matrix<T>(ctx, {k, n}, 1);
    MatrixPtr<T> pc = allocate_matrix<T>(ctx, {m, n}, 1);
    const int im = checked_int(m, "rows"), in = checked_int(n, "columns"), ik = checked_int(k, "contracted extent");
    for (std::size_t batch = 0; batch < batches; ++batch) {
      const int bi = checked_int(batch, "batch");
      copy_block(ctx, im, ik, *ma, bi * im, 0, *pa, 0, 0);
      copy_block(ctx, ik, in, *mb, bi * ik, 0, *pb, 0, 0);
      const char fa = conjugate_flag(ctx, pa, 'N', conj_a, true), fb = conjugate_flag(ctx, pb, 'N', conj_b, true);
      gemm(ctx, fa, fb, alpha, *pa, *pb, T(0), *pc);
      copy_block(ctx, im, in, *pc, 0, 0, *mc, bi * im, 0);
    }
    result = in_canonical(ctx, mc, labels_c, lc, args.node.extents);
  }
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
