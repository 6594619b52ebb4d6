// The distributed backend's element-wise kernels, slices, chips, factors, powers and masks,
// column by column over the local blocks (dist_backend.hpp).
#include "tenex/backend/dist/dist_kernels.hpp"

namespace tenex::dist::detail {

using namespace kernels;  // NOLINT: this file's own helpers

namespace {

/// The operands of element-wise work over an iteration space (labels `space`): each either
/// remapped to the space's canonical layout (then local element `at` of every operand is the
/// space's element `at`), or, when broadcasting it would send more than gathering it
/// everywhere (its size times the ranks is at most the space's size: e_i, e_a of MP2's
/// denominators), replicated on every rank with MPI_Allgatherv and read by index.
template <class T>
struct SpaceOperands {
  std::vector<MatrixPtr<T>> local;                // null where read by strides
  std::vector<std::vector<T>> full;               // replicated values, row-major
  std::vector<const T*> base;                     // where read by strides: `full`, or the whole matrix
  std::vector<std::vector<std::size_t>> strides;  // by space mode, from `base`
  std::vector<MatrixPtr<T>> held;                 // keeps read-in-place matrices alive
  bool any_replicated = false;

  SpaceOperands(const DistContext& ctx, const KernelArgs<T>& args, const Labels& space, const Extents& extents) {
    std::size_t space_size = 1;
    for (std::size_t e : extents) space_size *= e;
    const std::size_t n = args.operands.size();
    local.resize(n);
    full.resize(n);
    base.resize(n, nullptr);
    strides.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      const OpNode& node = *args.operand_nodes[k];
      const MatrixPtr<T>& m = operand(args, k);
      bool broadcast = false, within = true;
      for (const auto& l : space) broadcast = broadcast || !has(node.labels, l);
      for (const auto& l : node.labels) within = within && has(space, l);
      const bool in_order = node.labels == space && all_distinct(node.labels);
      // Each element's offset from `base` is a sum over the operand's modes of index times
      // stride (a repeated label adds its strides: a diagonal).
      auto read_by_strides = [&](const std::vector<std::size_t>& own) {
        strides[k].assign(space.size(), 0);
        for (std::size_t s = 0; s < space.size(); ++s) {
          for (std::size_t d = 0; d < node.labels.size(); ++d) {
            if (node.labels[d] == space[s]) strides[k][s] += own[d];
          }
        }
        any_replicated = true;
      };
      if (broadcast && node.size() * static_cast<std::size_t>(ctx.size) <= space_size) {
        full[k] = gather(ctx, *m, -1);
        base[k] = full[k].data();
        std::vector<std::size_t> own(node.labels.size(), 1);
        for (std::size_t d = node.labels.size(); d-- > 1;) own[d - 1] = own[d] * node.extents[d];
        read_by_strides(own);
      } else if (ctx.size == 1 && within && !in_order) {
        // One rank holds the whole matrix: a permuted operand (MP2's exchange V(i,b,j,a)) is
        // read where it is, not remapped into a copy of its size. Row modes step through the
        // rows, column modes through the columns of the column-major local matrix.
        std::vector<std::size_t> own(node.labels.size(), 1);
        for (std::size_t d = m->split; d-- > 1;) own[d - 1] = own[d] * node.extents[d];
        if (m->split < node.labels.size()) own[node.labels.size() - 1] = static_cast<std::size_t>(m->lld());
        for (std::size_t d = node.labels.size(); d-- > m->split + 1;) own[d - 1] = own[d] * node.extents[d];
        held.push_back(m);
        base[k] = m->local.data();
        read_by_strides(own);
      } else {
        local[k] = in_canonical(ctx, m, node.labels, space, extents);
      }
    }
  }

  /// Calls f(c, columns) for every local column c of `x` (the space's canonical layout; only
  /// its geometry is read): columns[k] points at operand k's x.local_rows values there (a
  /// local operand's own column; a replicated one's values gathered into a buffer, its
  /// offset the sum of what the row modes and what the column modes give, worked out once
  /// per local row and once per local column).
  template <class F>
  void for_each_column(const DistContext& ctx, const DistMatrix<T>& x, F f) const {
    const std::size_t n = local.size();
    const auto rows = static_cast<std::size_t>(x.local_rows);
    std::vector<std::vector<std::size_t>> row_offset(n);
    std::vector<std::vector<T>> buffer(n);
    std::vector<std::size_t> index, col_offset(n, 0);
    for (std::size_t k = 0; k < n; ++k) {
      if (local[k]) continue;
      row_offset[k].resize(rows);
      buffer[k].resize(rows);
      for (int r = 0; r < x.local_rows; ++r) {
        x.tensor_index(x.global_row(ctx, r), 0, index);
        std::size_t offset = 0;
        for (std::size_t s = 0; s < x.split; ++s) offset += index[s] * strides[k][s];
        row_offset[k][static_cast<std::size_t>(r)] = offset;
      }
    }
    std::vector<const T*> columns(n);
    for (int c = 0; c < x.local_cols; ++c) {
      const std::size_t at = static_cast<std::size_t>(c) * static_cast<std::size_t>(x.lld());
      if (any_replicated) x.tensor_index(0, x.global_col(ctx, c), index);
      for (std::size_t k = 0; k < n; ++k) {
        if (local[k]) {
          columns[k] = local[k]->local.data() + at;
          continue;
        }
        std::size_t offset = 0;
        for (std::size_t s = x.split; s < index.size(); ++s) offset += index[s] * strides[k][s];
        const T* values = base[k] + offset;
        for (std::size_t r = 0; r < rows; ++r) buffer[k][r] = values[row_offset[k][r]];
        columns[k] = buffer[k].data();
      }
      f(c, columns);
    }
  }
};

template <class T>
KernelCount binary(const DistContext& ctx, const KernelArgs<T>& args, const ElementwiseParams& p, int op) {
  const SpaceOperands<T> in(ctx, args, args.node.labels, args.node.extents);
  MatrixPtr<T> c = allocate_canonical<T>(ctx, args.node.extents);
  const T alpha = scalar_factor<T>(p.alpha, 0.0), alpha_b = scalar_factor<T>(p.alpha_b, 0.0);
  const auto rows = static_cast<std::size_t>(c->local_rows);
  in.for_each_column(ctx, *c, [&](int col, const std::vector<const T*>& columns) {
    T* out = c->local.data() + static_cast<std::size_t>(col) * static_cast<std::size_t>(c->lld());
    const T* a = columns[0];
    const T* b = columns[1];
    for (std::size_t r = 0; r < rows; ++r) {
      const T u = alpha * a[r], v = alpha_b * b[r];
      out[r] = op == 0 ? u + v : op == 1 ? u - v : u / v;
    }
  });
  set_out(args, {c});
  return {static_cast<double>(args.node.size()), 1};
}

}  // namespace

template <class T>
KernelCount DistBackend<T>::run_add(const AddParams& params, const KernelArgs<T>& args) {
  return binary(context(), args, params, 0);
}
template <class T>
KernelCount DistBackend<T>::run_subtract(const SubtractParams& params, const KernelArgs<T>& args) {
  return binary(context(), args, params, 1);
}
template <class T>
KernelCount DistBackend<T>::run_divide(const DivideParams& params, const KernelArgs<T>& args) {
  return binary(context(), args, params, 2);
}

template <class T>
KernelCount DistBackend<T>::run_scale(const ScaleParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  MatrixPtr<T> a =
      in_canonical(ctx, operand(args, 0), args.operand_nodes[0]->labels, args.node.labels, args.node.extents);
  MatrixPtr<T> c = copy_of(ctx, *a);
  const T alpha = scalar_factor<T>(params.alpha, params.alpha_imag);  // complex sets: alpha + i alpha_imag
  for (T& x : c->local) x *= alpha;
  set_out(args, {c});
  return {static_cast<double>(args.node.size()), 1};
}

template <class T>
KernelCount DistBackend<T>::run_fused(const FusedParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  if constexpr (is_complex_v<T>) {  // the expression layer refuses these first; checked here as the CPU does
    for (const FusedInstr& in : params.program) {
      if (is_function(in.op) && !defined_for_complex(in.op)) {
        throw Error("tenex: distributed backend: " + std::string(function_info(in.op).name) +
                    " is not defined for complex numbers");
      }
    }
    if (params.reduce != ReduceOp::sum) {
      throw Error("tenex: distributed backend: max and min reductions are not defined for complex numbers");
    }
  }
  // The iteration space: the result's labels, then those the operands add (reduced).
  Labels space = args.node.labels;
  Extents extents = args.node.extents;
  for (const OpNode* op : args.operand_nodes) {
    for (std::size_t k = 0; k < op->labels.size(); ++k) {
      if (!has(space, op->labels[k])) {
        space.push_back(op->labels[k]);
        extents.push_back(op->extents[k]);
      }
    }
  }
  const SpaceOperands<T> in(ctx, args, space, extents);
  std::size_t space_size = 1;
  for (std::size_t e : extents) space_size *= e;
  const double flops = static_cast<double>(space_size) * static_cast<double>(params.program.size());
  const Accumulate reduce = params.reduce == ReduceOp::max   ? Accumulate::max
                            : params.reduce == ReduceOp::min ? Accumulate::min
                                                             : Accumulate::sum;
  if (args.node.labels.empty() && !space.empty()) {
    // A full reduction (MP2's energy): each rank reduces its part of the space as it goes,
    // without storing it, then one MPI_Allreduce.
    T identity = T(0);
    if constexpr (!is_complex_v<T>) {
      if (reduce == Accumulate::max) identity = -std::numeric_limits<T>::infinity();
      if (reduce == Accumulate::min) identity = std::numeric_limits<T>::infinity();
    }
    T local = identity;
    MatrixPtr<T> layout;
    agreed(ctx, [&] {  // a tenex::map callable may throw on some ranks only
      layout = make_layout<T>(ctx, extents, canonical_split(extents.size()));
      ColumnProgram<T> program(params);
      const auto rows = static_cast<std::size_t>(layout->local_rows);
      in.for_each_column(ctx, *layout, [&](int, const std::vector<const T*>& columns) {
        const T* v = program.run(columns, rows);
        for (std::size_t r = 0; r < rows; ++r) local = reduce_combine(reduce, local, v[r]);
      });
    });
    T total = local;
    if (reduce == Accumulate::sum) {
      MPI_Allreduce(&local, &total, 1, mpi_type<T>(), MPI_SUM, ctx.comm);
    } else {
      // MPI_MAX and MPI_MIN need not keep a NaN: every rank combines all ranks' values itself.
      std::vector<T> all(static_cast<std::size_t>(ctx.size));
      MPI_Allgather(&local, 1, mpi_type<T>(), all.data(), 1, mpi_type<T>(), ctx.comm);
      total = identity;
      for (T v : all) total = reduce_combine(reduce, total, v);
    }
    MatrixPtr<T> s = allocate_canonical<T>(ctx, {});
    if (!s->local.empty()) s->local[0] = total;
    set_out(args, {s});
    return {flops, 2};
  }
  MatrixPtr<T> x = allocate_canonical<T>(ctx, extents);
  agreed(ctx, [&] {  // a tenex::map callable may throw on some ranks only
    ColumnProgram<T> program(params);
    const auto rows = static_cast<std::size_t>(x->local_rows);
    in.for_each_column(ctx, *x, [&](int col, const std::vector<const T*>& columns) {
      const T* v = program.run(columns, rows);
      std::copy(v, v + rows, x->local.data() + static_cast<std::size_t>(col) * static_cast<std::size_t>(x->lld()));
    });
  });
  if (space.size() == args.node.labels.size()) {
    set_out(args, {x});
    return {flops, 1};
  }
  set_out(args, {in_canonical(ctx, x, space, args.node.labels, args.node.extents, reduce)});
  return {flops, 2};
}

template <class T>
KernelCount DistBackend<T>::run_slice(const SliceParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const MatrixPtr<T>& a = operand(args, 0);
  RemapRule rule;
  for (std::size_t k = 0; k < params.lo.size(); ++k) {
    rule.from.push_back(static_cast<int>(k));
    rule.offset.push_back(-static_cast<std::ptrdiff_t>(params.lo[k]));
  }
  rule.lo = params.lo;
  rule.hi = params.hi;
  MatrixPtr<T> c = allocate_canonical<T>(ctx, args.node.extents);
  remap(ctx, *a, rule, *c);
  set_out(args, {c});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_chip(const ChipParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const MatrixPtr<T>& a = operand(args, 0);
  const Extents& in = args.operand_nodes[0]->extents;
  RemapRule rule;
  for (std::size_t k = 0; k < in.size(); ++k) {
    rule.lo.push_back(k == params.mode ? params.index : 0);
    rule.hi.push_back(k == params.mode ? params.index + 1 : in[k]);
    if (k != params.mode) rule.from.push_back(static_cast<int>(k));
  }
  MatrixPtr<T> c = allocate_canonical<T>(ctx, args.node.extents);
  remap(ctx, *a, rule, *c);
  set_out(args, {c});
  return {0, 1};
}

template <class T>
KernelCount DistBackend<T>::run_factor(const FactorParams& params, const KernelArgs<T>& args) {
  const DistValue<T>& packed = value_of(args.operands[0]);
  if (params.which >= packed.parts.size() || packed.parts[params.which]->extents != args.node.extents) {
    throw InternalError("tenex: distributed backend: factor " + std::to_string(params.which) +
                        " does not match the decomposition's parts");
  }
  set_out(args, {packed.parts[params.which]});
  return {0, 0};
}

template <class T>
KernelCount DistBackend<T>::run_pow(const PowParams& params, const KernelArgs<T>& args) {
  const DistContext& ctx = context();
  const MatrixPtr<T>& a = operand(args, 0);
  const std::size_t n = args.node.extents[0];
  MatrixPtr<T> result = allocate_canonical<T>(ctx, {n, n});
  if (params.power == 0) {
    set_identity(ctx, *result);
  } else {
    result = copy_of(ctx, *a);
    MatrixPtr<T> next = allocate_canonical<T>(ctx, {n, n});
    for (unsigned p = 1; p < params.power; ++p) {
      gemm(ctx, 'N', 'N', T(1), *result, *a, T(0), *next);
      std::swap(result, next);
    }
  }
  set_out(args, {result});
  const double nn = static_cast<double>(n);
  return {params.power > 1 ? 2.0 * nn * nn * nn * (params.power - 1) : 0.0, params.power > 1 ? params.power - 1 : 1};
}

template <class T>
KernelCount DistBackend<T>::run_mask(const MaskParams& params, const KernelArgs<T>& args) {
  // Element-wise: each rank zeroes the elements of its own blocks that a map excludes (the
  // CPU's dense mask), no messages.
  const DistContext& ctx = context();
  const OpNode& node = args.node;
  MatrixPtr<T> c =
      copy_of(ctx, *in_canonical(ctx, operand(args, 0), args.operand_nodes[0]->labels, node.labels, node.extents));
  struct Use {
    std::vector<std::size_t> source_modes, target_modes;
    const SparseMap* map;
  };
  std::vector<Use> uses;
  for (const SparseMapUse& use : params.maps) {
    Use u{{}, {}, use.map.get()};
    for (const auto& l : use.source) u.source_modes.push_back(find_label(node.labels, l));
    for (const auto& l : use.target) u.target_modes.push_back(find_label(node.labels, l));
    uses.push_back(std::move(u));
  }
  agreed(ctx, [&] {
    std::vector<std::size_t> index;
    SparseMap::Index source, target;
    for (int col = 0; col < c->local_cols; ++col) {
      const auto gc = c->global_col(ctx, col);
      for (int r = 0; r < c->local_rows; ++r) {
        c->tensor_index(c->global_row(ctx, r), gc, index);
        for (const Use& u : uses) {
          source.resize(u.source_modes.size());
          target.resize(u.target_modes.size());
          for (std::size_t i = 0; i < u.source_modes.size(); ++i) source[i] = index[u.source_modes[i]];
          for (std::size_t i = 0; i < u.target_modes.size(); ++i) target[i] = index[u.target_modes[i]];
          if (!u.map->allows(source, target)) {
            c->local[static_cast<std::size_t>(col) * static_cast<std::size_t>(c->lld()) + r] = T(0);
            break;
          }
        }
      }
    }
  });
  set_out(args, {c});
  return {0, 1};
}


#define TENEX_INSTANTIATE_DIST_ELEMENTWISE(T)                                                     \
  template KernelCount DistBackend<T>::run_add(const AddParams&, const KernelArgs<T>&);           \
  template KernelCount DistBackend<T>::run_subtract(const SubtractParams&, const KernelArgs<T>&); \
  template KernelCount DistBackend<T>::run_divide(const DivideParams&, const KernelArgs<T>&);     \
  template KernelCount DistBackend<T>::run_scale(const ScaleParams&, const KernelArgs<T>&);       \
  template KernelCount DistBackend<T>::run_fused(const FusedParams&, const KernelArgs<T>&);       \
  template KernelCount DistBackend<T>::run_slice(const SliceParams&, const KernelArgs<T>&);       \
  template KernelCount DistBackend<T>::run_chip(const ChipParams&, const KernelArgs<T>&);         \
  template KernelCount DistBackend<T>::run_factor(const FactorParams&, const KernelArgs<T>&);     \
  template KernelCount DistBackend<T>::run_pow(const PowParams&, const KernelArgs<T>&);           \
  template KernelCount DistBackend<T>::run_mask(const MaskParams&, const KernelArgs<T>&);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DIST_ELEMENTWISE)
#undef TENEX_INSTANTIATE_DIST_ELEMENTWISE

}  // namespace tenex::dist::detail
