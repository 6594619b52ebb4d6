#include "tenex/backend/dist/dist_matrix.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <type_traits>

#include "tenex/backend/dist/scalapack.hpp"
#include "tenex/error.hpp"
#include "tenex/graph/functions.hpp"
#include "tenex/scalar.hpp"
#include "tenex/settings.hpp"

namespace tenex::dist::detail {

namespace {

std::int64_t product(const std::vector<std::size_t>& e, std::size_t from, std::size_t to) {
  std::int64_t p = 1;
  for (std::size_t k = from; k < to; ++k) p *= static_cast<std::int64_t>(e[k]);
  return p;
}

/// The most a remap sends (and receives) per rank in one MPI_Alltoallv round: 8 MiB, 512K
/// elements of double with their offsets. It bounds what a remap of a large tensor needs
/// besides its source and destination: MP2 at o = 30, v = 150, X = 600 on 4 ranks peaked at
/// 291 MB per rank with 8 MiB rounds and 342 MB with 32 MiB, in the same time (a round's
/// fixed cost is one MPI_Alltoall of counts, microseconds next to packing 512K elements).
constexpr std::size_t kRemapRoundBytes = std::size_t{8} << 20;

/// The round size: kRemapRoundBytes, or TENEX_DIST_REMAP_ROUND_BYTES (a test switch, so that
/// small tensors take many rounds; docs/distributed.md). Every rank must see the same value.
std::size_t remap_round_bytes() {
  if (const char* text = tenex::detail::setting(tenex::detail::Setting::dist_remap_round_bytes)) {
    const unsigned long long bytes = std::strtoull(text, nullptr, 10);
    if (bytes > 0) return static_cast<std::size_t>(bytes);
  }
  return kRemapRoundBytes;
}

/// Test switch: TENEX_DIST_FAIL_REMAP_ON_RANK=r makes rank r run out of memory (std::bad_alloc)
/// in the last round of every remap with more than one rank, so that the tests can check
/// that a failure on one rank in the middle of a remap is the same error on every rank.
bool remap_fails_here(const DistContext& ctx) {
  const char* text = tenex::detail::setting(tenex::detail::Setting::dist_fail_remap_on_rank);
  return text != nullptr && *text != '\0' && std::atoi(text) == ctx.rank;
}

/// n / d by a multiply for 0 <= n < 2^32 (Lemire, Kaser and Kurz, "Faster remainder by
/// direct computation", 2019): a remap places every element by two such divisions per
/// coordinate, which as hardware divisions took most of its time.
class FastDivider {
 public:
  explicit FastDivider(std::uint32_t d) : d_(d), m_(d > 1 ? ~std::uint64_t{0} / d + 1 : 0) {}
  std::uint32_t divide(std::uint32_t n) const {
    __extension__ using Wide = unsigned __int128;
    return d_ == 1 ? n : static_cast<std::uint32_t>((static_cast<Wide>(m_) * n) >> 64);
  }

 private:
  std::uint32_t d_;
  std::uint64_t m_;
};

/// Where global row (or column) g of a block-cyclic dimension lives: the process row (or
/// column) and the local index there.
class CyclicPlacement {
 public:
  CyclicPlacement(int block, int processes)
      : block_(static_cast<std::uint32_t>(block)), processes_(static_cast<std::uint32_t>(processes)), by_block_(block_),
        by_processes_(processes_) {}
  void place(std::int64_t g, int& owner, std::uint64_t& local) const {
    const auto n = static_cast<std::uint32_t>(g);  // matrix dimensions are ints
    const std::uint32_t block = by_block_.divide(n), cycle = by_processes_.divide(block);
    owner = static_cast<int>(block - cycle * processes_);
    local = static_cast<std::uint64_t>(cycle) * block_ + (n - block * block_);
  }

 private:
  std::uint32_t block_, processes_;
  FastDivider by_block_, by_processes_;
};

template <class T>
struct Entry {
  std::uint64_t index;  // remap: offset in the receiver's local array; gather: row * cols + col (row-major)
  T value;
};

int checked_count(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw BackendError("tenex: distributed backend: a message of " + std::to_string(n) +
                       " bytes exceeds MPI's int count; use more ranks or smaller tensors");
  }
  return static_cast<int>(n);
}

template <class T>
T* data_or_dummy(std::vector<T>& v) {
  static T dummy[1] = {};
  return v.empty() ? dummy : v.data();
}
template <class T>
const T* data_or_dummy(const std::vector<T>& v) {
  static const T dummy[1] = {};
  return v.empty() ? dummy : v.data();
}

}  // namespace

int checked_int(std::size_t n, const char* what) {
  if (n > static_cast<std::size_t>(INT_MAX)) {
    throw BackendError(std::string("tenex: distributed backend: ") + what + " " + std::to_string(n) +
                       " exceeds ScaLAPACK's int; use smaller tensors");
  }
  return static_cast<int>(n);
}

template <class T>
std::int64_t DistMatrix<T>::global_row(const DistContext& ctx, int r) const {
  const int nb = ctx.block;
  return (static_cast<std::int64_t>(r / nb) * ctx.prow + ctx.myrow) * nb + r % nb;
}

template <class T>
std::int64_t DistMatrix<T>::global_col(const DistContext& ctx, int c) const {
  const int nb = ctx.block;
  return (static_cast<std::int64_t>(c / nb) * ctx.pcol + ctx.mycol) * nb + c % nb;
}

template <class T>
void DistMatrix<T>::tensor_index(std::int64_t row, std::int64_t col, std::vector<std::size_t>& index) const {
  index.resize(extents.size());
  for (std::size_t k = split; k-- > 0;) {
    index[k] = static_cast<std::size_t>(row % static_cast<std::int64_t>(extents[k]));
    row /= static_cast<std::int64_t>(extents[k]);
  }
  for (std::size_t k = extents.size(); k-- > split;) {
    index[k] = static_cast<std::size_t>(col % static_cast<std::int64_t>(extents[k]));
    col /= static_cast<std::int64_t>(extents[k]);
  }
}

template <class T>
std::shared_ptr<DistMatrix<T>> make_matrix(const DistContext& ctx, std::vector<std::size_t> extents,
                                           std::size_t split) {
  auto m = make_layout<T>(ctx, std::move(extents), split);
  m->local.assign(static_cast<std::size_t>(m->local_rows) * static_cast<std::size_t>(m->local_cols), T(0));
  return m;
}

template <class T>
std::shared_ptr<DistMatrix<T>> make_layout(const DistContext& ctx, std::vector<std::size_t> extents,
                                           std::size_t split) {
  auto m = std::make_shared<DistMatrix<T>>();
  m->split = split;
  const std::int64_t rows = product(extents, 0, split), cols = product(extents, split, extents.size());
  m->rows = checked_int(static_cast<std::size_t>(rows), "a matricization's row count");
  m->cols = checked_int(static_cast<std::size_t>(cols), "a matricization's column count");
  m->extents = std::move(extents);
  const int zero = 0;
  m->local_rows = numroc_(&m->rows, &ctx.block, &ctx.myrow, &zero, &ctx.prow);
  m->local_cols = numroc_(&m->cols, &ctx.block, &ctx.mycol, &zero, &ctx.pcol);
  const int lld = m->lld();
  int info = 0;
  descinit_(m->desc, &m->rows, &m->cols, &ctx.block, &ctx.block, &zero, &zero, &ctx.blacs, &lld, &info);
  if (info != 0) {
    throw InternalError("tenex: distributed backend: descinit failed (info " + std::to_string(info) + ") for a " +
                        std::to_string(m->rows) + " x " + std::to_string(m->cols) + " matrix");
  }
  return m;
}

RemapRule rule_by_labels(const std::vector<std::string>& src, const std::vector<std::string>& dst) {
  RemapRule rule;
  for (const std::string& label : dst) {
    const auto at = std::find(src.begin(), src.end(), label);
    rule.from.push_back(at == src.end() ? -1 : static_cast<int>(at - src.begin()));
  }
  std::vector<char> grouped(src.size(), 0);
  for (std::size_t a = 0; a < src.size(); ++a) {
    if (grouped[a]) continue;
    std::vector<int> group{static_cast<int>(a)};
    for (std::size_t b = a + 1; b < src.size(); ++b) {
      if (src[b] == src[a]) {
        group.push_back(static_cast<int>(b));
        grouped[b] = 1;
      }
    }
    if (group.size() > 1) rule.equal.push_back(std::move(group));
  }
  return rule;
}

namespace {

/// Whether `rule` maps each source element to one destination element whose (row, column) is
/// a sum of what the source's row modes give and what its column modes give: no broadcast,
/// and each diagonal within the source's rows or within its columns.
bool is_fast(const RemapRule& rule, std::size_t src_split) {
  bool fast = true;
  for (int f : rule.from) fast = fast && f >= 0;
  for (const auto& group : rule.equal) {
    bool rows = true, cols = true;
    for (int m : group) {
      rows = rows && static_cast<std::size_t>(m) < src_split;
      cols = cols && static_cast<std::size_t>(m) >= src_split;
    }
    fast = fast && (rows || cols);
  }
  return fast;
}

/// What each of the source's local rows (or columns) adds to the destination's (row,
/// column), and whether the rule keeps it (is_fast rules only).
struct Part {
  std::int64_t row = 0, col = 0;
  bool keep = true;
};

/// Weights of each destination mode in its row or column index.
template <class T>
std::vector<std::int64_t> weights_of(const DistMatrix<T>& dst) {
  const std::size_t dst_rank = dst.extents.size();
  std::vector<std::int64_t> weight(dst_rank, 1);
  for (std::size_t k = dst.split; k-- > 1;) weight[k - 1] = weight[k] * static_cast<std::int64_t>(dst.extents[k]);
  for (std::size_t k = dst_rank; k-- > dst.split + 1;) {
    weight[k - 1] = weight[k] * static_cast<std::int64_t>(dst.extents[k]);
  }
  return weight;
}

template <class T>
std::vector<Part> parts_of(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule,
                           const DistMatrix<T>& dst, const std::vector<std::int64_t>& weight, int count, bool rows) {
  const std::size_t src_rank = src.extents.size(), dst_rank = dst.extents.size();
  std::vector<Part> out(static_cast<std::size_t>(count));
  std::vector<std::size_t> s;
  for (int x = 0; x < count; ++x) {
    if (rows) {
      src.tensor_index(src.global_row(ctx, x), 0, s);
    } else {
      src.tensor_index(0, src.global_col(ctx, x), s);
    }
    const std::size_t from = rows ? 0 : src.split, to = rows ? src.split : src_rank;
    Part& p = out[static_cast<std::size_t>(x)];
    for (std::size_t m = from; m < to && p.keep && m < rule.lo.size(); ++m) {
      p.keep = s[m] >= rule.lo[m] && s[m] < rule.hi[m];
    }
    for (const auto& group : rule.equal) {
      const auto first = static_cast<std::size_t>(group[0]);
      if (first < from || first >= to) continue;
      for (int m : group) p.keep = p.keep && s[static_cast<std::size_t>(m)] == s[first];
    }
    for (std::size_t k = 0; k < dst_rank; ++k) {
      const auto m = static_cast<std::size_t>(rule.from[k]);
      if (m < from || m >= to) continue;
      const std::int64_t v = static_cast<std::int64_t>(s[m]) + (rule.offset.empty() ? 0 : rule.offset[k]);
      (k < dst.split ? p.row : p.col) += v * weight[k];
    }
  }
  return out;
}

/// Calls emit(row, col, value) with the destination (global row, column) of every element of
/// `src` in its local columns [first_col, last_col) that `rule` keeps (every copy of a
/// broadcast one).
template <class T, class Emit>
void enumerate(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule, const DistMatrix<T>& dst,
               int first_col, int last_col, Emit emit) {
  const std::size_t dst_rank = dst.extents.size();
  const std::vector<std::int64_t> weight = weights_of(dst);
  if (is_fast(rule, src.split)) {
    // A destination index is a sum of what the source's row modes give and what its column
    // modes give: worked out once per local row and once per local column.
    auto parts = [&](int count, bool rows) { return parts_of(ctx, src, rule, dst, weight, count, rows); };
    const std::vector<Part> row_parts = parts(src.local_rows, true), col_parts = parts(src.local_cols, false);
    // In tiles of the source: a permutation that turns rows into columns (a transpose) then
    // writes to a few destination columns at a time instead of one cache line per element.
    constexpr int tile = 64;
    for (int c0 = first_col; c0 < last_col; c0 += tile) {
      const int c1 = std::min(last_col, c0 + tile);
      for (int r0 = 0; r0 < src.local_rows; r0 += tile) {
        const int r1 = std::min(src.local_rows, r0 + tile);
        for (int c = c0; c < c1; ++c) {
          const Part& pc = col_parts[static_cast<std::size_t>(c)];
          if (!pc.keep) continue;
          const T* column = src.local.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(src.lld());
          for (int r = r0; r < r1; ++r) {
            const Part& pr = row_parts[static_cast<std::size_t>(r)];
            if (pr.keep) emit(pr.row + pc.row, pr.col + pc.col, column[r]);
          }
        }
      }
    }
    return;
  }
  std::vector<std::size_t> s, d(dst_rank, 0), broadcast;  // dst modes that take every value
  for (std::size_t k = 0; k < dst_rank; ++k) {
    if (rule.from[k] < 0) broadcast.push_back(k);
  }
  for (std::size_t k : broadcast) {
    if (dst.extents[k] == 0) return;
  }
  for (int c = first_col; c < last_col; ++c) {
    const std::int64_t gc = src.global_col(ctx, c);
    for (int r = 0; r < src.local_rows; ++r) {
      src.tensor_index(src.global_row(ctx, r), gc, s);
      bool keep = true;
      for (std::size_t m = 0; m < rule.lo.size() && keep; ++m) keep = s[m] >= rule.lo[m] && s[m] < rule.hi[m];
      for (const auto& group : rule.equal) {
        for (int m : group) keep = keep && s[static_cast<std::size_t>(m)] == s[static_cast<std::size_t>(group[0])];
      }
      if (!keep) continue;
      for (std::size_t k = 0; k < dst_rank; ++k) {
        d[k] = 0;
        if (rule.from[k] >= 0) {
          const std::ptrdiff_t off = rule.offset.empty() ? 0 : rule.offset[k];
          d[k] = static_cast<std::size_t>(static_cast<std::ptrdiff_t>(s[static_cast<std::size_t>(rule.from[k])]) + off);
        }
      }
      const T value = src.local[static_cast<std::size_t>(c) * static_cast<std::size_t>(src.lld()) + r];
      while (true) {  // every combination of the broadcast modes (once when there are none)
        std::int64_t row = 0, col = 0;
        for (std::size_t k = 0; k < dst_rank; ++k) {
          (k < dst.split ? row : col) += static_cast<std::int64_t>(d[k]) * weight[k];
        }
        emit(row, col, value);
        std::size_t b = broadcast.size();
        while (b > 0) {
          const std::size_t k = broadcast[b - 1];
          if (++d[k] < dst.extents[k]) break;
          d[k] = 0;
          --b;
        }
        if (b == 0) break;
      }
    }
  }
}

/// Where remap's elements go: the offset of each (row, col) of the destination in its owner's
/// local array (the sender knows the receiver's leading dimension), and how an element is
/// combined with what is there.
template <class T>
class RemapTarget {
 public:
  RemapTarget(const DistContext& ctx, const RemapRule& rule, DistMatrix<T>& dst)
      : rule_(rule), local_(dst.local.data()), pcol_(ctx.pcol), lld_of_row_(static_cast<std::size_t>(ctx.prow)),
        by_row_(ctx.block, ctx.prow), by_col_(ctx.block, ctx.pcol) {
    for (int p = 0; p < ctx.prow; ++p) {
      const int zero = 0;
      lld_of_row_[static_cast<std::size_t>(p)] = std::max(1, numroc_(&dst.rows, &ctx.block, &p, &zero, &ctx.prow));
    }
  }

  /// The local leading dimension of the ranks of process row `p`.
  int lld_of_row(int p) const { return lld_of_row_[static_cast<std::size_t>(p)]; }
  T* local() const { return local_; }

  void combine(std::uint64_t at, T value) const {
    switch (rule_.reduce) {
      case Accumulate::sum: local_[at] += value; break;
      case Accumulate::max:  // the table's maximum and minimum: a NaN is kept
        local_[at] = Function<FusedOp::maximum>::apply(local_[at], value, T(0), T(0));
        break;
      case Accumulate::min: local_[at] = Function<FusedOp::minimum>::apply(local_[at], value, T(0), T(0)); break;
    }
  }

  std::uint64_t owner_and_offset(std::int64_t row, std::int64_t col, int& owner) const {
    int pr = 0, pc = 0;
    std::uint64_t lr = 0, lc = 0;
    by_row_.place(row, pr, lr);
    by_col_.place(col, pc, lc);
    owner = pr * pcol_ + pc;
    return lc * static_cast<std::uint64_t>(lld_of_row_[static_cast<std::size_t>(pr)]) + lr;
  }

 private:
  const RemapRule& rule_;
  T* local_;
  int pcol_;
  std::vector<int> lld_of_row_;
  CyclicPlacement by_row_, by_col_;
};

/// The destination's local array at the reduction's start: -inf for a maximum, +inf for a
/// minimum (dst is made zero-filled, a sum's start).
template <class T>
void fill_start(const RemapRule& rule, DistMatrix<T>& dst) {
  T start = T(0);
  if constexpr (!is_complex_v<T>) {  // complex numbers have no order: their reductions are sums
    if (rule.reduce == Accumulate::max) start = -std::numeric_limits<T>::infinity();
    if (rule.reduce == Accumulate::min) start = std::numeric_limits<T>::infinity();
  }
  if (start != T(0)) std::fill(dst.local.begin(), dst.local.end(), start);
}

/// A remap on one rank, whose local matrix is the whole matrix: a permutation in place.
template <class T>
void remap_in_place(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule, DistMatrix<T>& dst,
                    const RemapTarget<T>& target) {
  const auto lld = static_cast<std::uint64_t>(target.lld_of_row(0));
  if (!is_fast(rule, src.split)) {
    enumerate(ctx, src, rule, dst, 0, src.local_cols, [&](std::int64_t row, std::int64_t col, T value) {
      target.combine(static_cast<std::uint64_t>(col) * lld + static_cast<std::uint64_t>(row), value);
    });
    return;
  }
  // The destination offset col * lld + row is a sum of a term per source row and a term
  // per source column: a gather-scatter loop over tiles, one loop per kind of reduction.
  T* local = target.local();
  const std::vector<std::int64_t> weight = weights_of(dst);
  constexpr std::uint64_t skip = ~std::uint64_t{0};
  auto offsets = [&](bool rows) {
    const std::vector<Part> parts = parts_of(ctx, src, rule, dst, weight, rows ? src.local_rows : src.local_cols, rows);
    std::vector<std::uint64_t> out(parts.size());
    for (std::size_t x = 0; x < parts.size(); ++x) {
      out[x] = parts[x].keep ? static_cast<std::uint64_t>(parts[x].col) * lld + static_cast<std::uint64_t>(parts[x].row)
                             : skip;
    }
    return out;
  };
  const std::vector<std::uint64_t> row_offset = offsets(true), col_offset = offsets(false);
  auto permute = [&](auto accumulate) {
    constexpr int tile = 64;
    for (int c0 = 0; c0 < src.local_cols; c0 += tile) {
      const int c1 = std::min(src.local_cols, c0 + tile);
      for (int r0 = 0; r0 < src.local_rows; r0 += tile) {
        const int r1 = std::min(src.local_rows, r0 + tile);
        for (int c = c0; c < c1; ++c) {
          const std::uint64_t oc = col_offset[static_cast<std::size_t>(c)];
          if (oc == skip) continue;
          const T* column = src.local.data() + static_cast<std::size_t>(c) * static_cast<std::size_t>(src.lld());
          for (int r = r0; r < r1; ++r) {
            const std::uint64_t orow = row_offset[static_cast<std::size_t>(r)];
            if (orow != skip) accumulate(local[orow + oc], column[r]);
          }
        }
      }
    }
  };
  switch (rule.reduce) {
    case Accumulate::sum: permute([](T& d, T v) { d += v; }); break;
    case Accumulate::max: permute([](T& d, T v) { d = Function<FusedOp::maximum>::apply(d, v, T(0), T(0)); }); break;
    case Accumulate::min: permute([](T& d, T v) { d = Function<FusedOp::minimum>::apply(d, v, T(0), T(0)); }); break;
  }
}

/// The rounds of a remap over several ranks, the same on every rank: enough for the largest
/// local part (rank 0's, in a block-cyclic layout), times the copies a broadcast makes of each
/// element.
template <class T>
int remap_rounds(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule, const DistMatrix<T>& dst) {
  double copies = 1;
  for (std::size_t k = 0; k < rule.from.size(); ++k) {
    if (rule.from[k] < 0) copies *= static_cast<double>(dst.extents[k]);
  }
  const int zero = 0;
  const int nb = ctx.block;
  const double largest_part = static_cast<double>(numroc_(&src.rows, &nb, &zero, &zero, &ctx.prow)) *
                              static_cast<double>(numroc_(&src.cols, &nb, &zero, &zero, &ctx.pcol));
  const double round_bytes = static_cast<double>(remap_round_bytes());
  return static_cast<int>(
      std::clamp(std::ceil(largest_part * copies * static_cast<double>(sizeof(Entry<T>)) / round_bytes), 1.0, 1e6));
}

/// The buffers and counts of a remap's rounds, kept from round to round.
template <class T>
struct RemapBuffers {
  std::vector<Entry<T>> send, receive;
  std::vector<int> send_counts, send_displs, receive_counts, receive_displs;

  explicit RemapBuffers(int ranks)
      : send_counts(ranks, 0), send_displs(ranks, 0), receive_counts(ranks, 0), receive_displs(ranks, 0) {}
};

/// The elements of the source's local columns [first, last) packed for their owners, each
/// receiver's run after the one before (send_counts, send_displs in bytes); those this rank
/// owns combined in place. `last_round`: where the test switch makes this rank fail.
template <class T>
void pack_round(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule, const DistMatrix<T>& dst,
                const RemapTarget<T>& target, int first, int last, bool last_round, RemapBuffers<T>& x) {
  agreed(ctx, [&] {
    if (last_round && remap_fails_here(ctx)) throw std::bad_alloc();
    std::vector<std::size_t> count(static_cast<std::size_t>(ctx.size), 0);
    enumerate(ctx, src, rule, dst, first, last, [&](std::int64_t row, std::int64_t col, T) {
      int owner = 0;
      target.owner_and_offset(row, col, owner);
      ++count[static_cast<std::size_t>(owner)];
    });
    count[static_cast<std::size_t>(ctx.rank)] = 0;  // kept here, combined in place
    std::vector<std::size_t> next(count.size(), 0);
    std::size_t total = 0;
    for (int p = 0; p < ctx.size; ++p) {
      next[static_cast<std::size_t>(p)] = total;
      x.send_displs[p] = checked_count(total * sizeof(Entry<T>));
      x.send_counts[p] = checked_count(count[static_cast<std::size_t>(p)] * sizeof(Entry<T>));
      total += count[static_cast<std::size_t>(p)];
    }
    checked_count(total * sizeof(Entry<T>));
    x.send.resize(total);
    x.send.shrink_to_fit();
    enumerate(ctx, src, rule, dst, first, last, [&](std::int64_t row, std::int64_t col, T value) {
      int owner = 0;
      const std::uint64_t at = target.owner_and_offset(row, col, owner);
      if (owner == ctx.rank) {
        target.combine(at, value);
      } else {
        x.send[next[static_cast<std::size_t>(owner)]++] = {at, value};
      }
    });
  });
}

/// A packed round exchanged (the counts by MPI_Alltoall, the elements by MPI_Alltoallv) and
/// what arrives combined.
template <class T>
void exchange_round(const DistContext& ctx, const RemapTarget<T>& target, RemapBuffers<T>& x) {
  for (int p = 0; p < ctx.size; ++p) {
    if (p != ctx.rank) phase_clock().remap_bytes_sent += static_cast<unsigned long long>(x.send_counts[p]);
  }
  MPI_Alltoall(x.send_counts.data(), 1, MPI_INT, x.receive_counts.data(), 1, MPI_INT, ctx.comm);
  agreed(ctx, [&] {
    std::size_t total = 0;
    for (int p = 0; p < ctx.size; ++p) {
      x.receive_displs[p] = checked_count(total);
      total += static_cast<std::size_t>(x.receive_counts[p]);
    }
    checked_count(total);
    x.receive.resize(total / sizeof(Entry<T>));
    x.receive.shrink_to_fit();
  });
  MPI_Alltoallv(data_or_dummy(x.send), x.send_counts.data(), x.send_displs.data(), MPI_BYTE, data_or_dummy(x.receive),
                x.receive_counts.data(), x.receive_displs.data(), MPI_BYTE, ctx.comm);
  for (const Entry<T>& e : x.receive) target.combine(e.index, e.value);
}

}  // namespace

template <class T>
void remap(const DistContext& ctx, const DistMatrix<T>& src, const RemapRule& rule, DistMatrix<T>& dst) {
  PhaseTimer timer(phase_clock().remap_seconds);
  // Each element travels as (its offset in the receiver's local array, value): the sender
  // knows the receiver's leading dimension, so the receiver only combines. Elements this
  // rank keeps are combined in place without a buffer (on one rank a remap is a local
  // permutation), and the source's columns are sent in rounds so that the buffers stay
  // under kRemapRoundBytes per rank (a remap of a large tensor needs no more than that
  // besides its source and destination).
  const RemapTarget<T> target(ctx, rule, dst);
  fill_start(rule, dst);
  if (ctx.size == 1) {
    remap_in_place(ctx, src, rule, dst, target);
    return;
  }
  const int rounds = remap_rounds(ctx, src, rule, dst);
  RemapBuffers<T> buffers(ctx.size);
  for (int round = 0; round < rounds; ++round) {
    const auto bound = [&](int r) { return static_cast<int>(static_cast<std::int64_t>(src.local_cols) * r / rounds); };
    pack_round(ctx, src, rule, dst, target, bound(round), bound(round + 1), round + 1 == rounds, buffers);
    exchange_round(ctx, target, buffers);
  }
}

template <class T>
std::vector<T> gather(const DistContext& ctx, const DistMatrix<T>& m, int root) {
  PhaseTimer timer(phase_clock().gather_seconds);
  std::vector<Entry<T>> send, receive;
  std::vector<int> counts(ctx.size, 0), displs(ctx.size, 0);
  int count = 0;
  agreed(ctx, [&] {
    send.reserve(m.local.size());
    const std::int64_t cols = m.cols;
    for (int c = 0; c < m.local_cols; ++c) {
      const std::int64_t gc = m.global_col(ctx, c);
      for (int r = 0; r < m.local_rows; ++r) {
        send.push_back({static_cast<std::uint64_t>(m.global_row(ctx, r) * cols + gc),
                        m.local[static_cast<std::size_t>(c) * static_cast<std::size_t>(m.lld()) + r]});
      }
    }
    count = checked_count(send.size() * sizeof(Entry<T>));
  });
  if (root >= 0) {
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, ctx.comm);
  } else {
    MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, ctx.comm);
  }
  std::vector<T> full;
  const bool here = root < 0 || root == ctx.rank;
  agreed(ctx, [&] {
    if (!here) return;
    std::size_t total = 0;
    for (int p = 0; p < ctx.size; ++p) {
      displs[p] = checked_count(total);
      total += static_cast<std::size_t>(counts[p]);
    }
    receive.resize(total / sizeof(Entry<T>));
    full.assign(static_cast<std::size_t>(m.rows) * static_cast<std::size_t>(m.cols), T(0));
  });
  if (root >= 0) {
    MPI_Gatherv(data_or_dummy(send), count, MPI_BYTE, data_or_dummy(receive), counts.data(), displs.data(), MPI_BYTE,
                root, ctx.comm);
  } else {
    MPI_Allgatherv(data_or_dummy(send), count, MPI_BYTE, data_or_dummy(receive), counts.data(), displs.data(), MPI_BYTE,
                   ctx.comm);
  }
  for (const Entry<T>& e : receive) full[e.index] = e.value;
  return full;
}

template <class T>
void scatter_local(const DistContext& ctx, const T* full, DistMatrix<T>& m) {
  const std::int64_t cols = m.cols;
  for (int c = 0; c < m.local_cols; ++c) {
    const std::int64_t gc = m.global_col(ctx, c);
    for (int r = 0; r < m.local_rows; ++r) {
      m.local[static_cast<std::size_t>(c) * static_cast<std::size_t>(m.lld()) + r] =
          full[m.global_row(ctx, r) * cols + gc];
    }
  }
}

template <class T>
void gemm(const DistContext&, char trans_a, char trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b,
          T beta, DistMatrix<T>& c) {
  PhaseTimer timer(phase_clock().compute_seconds);
  const int m = trans_a == 'N' ? a.rows : a.cols;
  const int k = trans_a == 'N' ? a.cols : a.rows;
  const int n = trans_b == 'N' ? b.cols : b.rows;
  const int kb = trans_b == 'N' ? b.rows : b.cols;
  if (m != c.rows || n != c.cols || k != kb) {
    throw InternalError("tenex: distributed backend: p?gemm operands do not fit (" + std::to_string(m) + " x " +
                        std::to_string(k) + " times " + std::to_string(kb) + " x " + std::to_string(n) + " into " +
                        std::to_string(c.rows) + " x " + std::to_string(c.cols) + ")");
  }
  if (m == 0 || n == 0) return;
  const int one = 1;
  if constexpr (std::is_same_v<T, float>) {
    psgemm_(&trans_a, &trans_b, &m, &n, &k, &alpha, data_or_dummy(a.local), &one, &one, a.desc, data_or_dummy(b.local),
            &one, &one, b.desc, &beta, data_or_dummy(c.local), &one, &one, c.desc);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    pcgemm_(&trans_a, &trans_b, &m, &n, &k, &alpha, data_or_dummy(a.local), &one, &one, a.desc, data_or_dummy(b.local),
            &one, &one, b.desc, &beta, data_or_dummy(c.local), &one, &one, c.desc);
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    pzgemm_(&trans_a, &trans_b, &m, &n, &k, &alpha, data_or_dummy(a.local), &one, &one, a.desc, data_or_dummy(b.local),
            &one, &one, b.desc, &beta, data_or_dummy(c.local), &one, &one, c.desc);
  } else {
    pdgemm_(&trans_a, &trans_b, &m, &n, &k, &alpha, data_or_dummy(a.local), &one, &one, a.desc, data_or_dummy(b.local),
            &one, &one, b.desc, &beta, data_or_dummy(c.local), &one, &one, c.desc);
  }
}

template <class T>
void copy_block(const DistContext& ctx, int rows, int cols, const DistMatrix<T>& src, int src_row, int src_col,
                DistMatrix<T>& dst, int dst_row, int dst_col) {
  if (rows <= 0 || cols <= 0) return;
  PhaseTimer timer(phase_clock().remap_seconds);
  const int ia = src_row + 1, ja = src_col + 1, ib = dst_row + 1, jb = dst_col + 1;
  if constexpr (std::is_same_v<T, float>) {
    psgemr2d_(&rows, &cols, data_or_dummy(src.local), &ia, &ja, src.desc, data_or_dummy(dst.local), &ib, &jb, dst.desc,
              &ctx.blacs);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    pcgemr2d_(&rows, &cols, data_or_dummy(src.local), &ia, &ja, src.desc, data_or_dummy(dst.local), &ib, &jb, dst.desc,
              &ctx.blacs);
  } else if constexpr (std::is_same_v<T, std::complex<double>>) {
    pzgemr2d_(&rows, &cols, data_or_dummy(src.local), &ia, &ja, src.desc, data_or_dummy(dst.local), &ib, &jb, dst.desc,
              &ctx.blacs);
  } else {
    pdgemr2d_(&rows, &cols, data_or_dummy(src.local), &ia, &ja, src.desc, data_or_dummy(dst.local), &ib, &jb, dst.desc,
              &ctx.blacs);
  }
}

#define TENEX_INSTANTIATE_DIST_MATRIX(T)                                                                             \
  template struct DistMatrix<T>;                                                                                     \
  template std::shared_ptr<DistMatrix<T>> make_matrix<T>(const DistContext&, std::vector<std::size_t>, std::size_t); \
  template std::shared_ptr<DistMatrix<T>> make_layout<T>(const DistContext&, std::vector<std::size_t>, std::size_t); \
  template void remap<T>(const DistContext&, const DistMatrix<T>&, const RemapRule&, DistMatrix<T>&);                \
  template std::vector<T> gather<T>(const DistContext&, const DistMatrix<T>&, int);                                  \
  template void scatter_local<T>(const DistContext&, const T*, DistMatrix<T>&);                                      \
  template void gemm<T>(const DistContext&, char, char, T, const DistMatrix<T>&, const DistMatrix<T>&, T,            \
                        DistMatrix<T>&);                                                                             \
  template void copy_block<T>(const DistContext&, int, int, const DistMatrix<T>&, int, int, DistMatrix<T>&, int, int);
TENEX_FOR_EACH_SCALAR(TENEX_INSTANTIATE_DIST_MATRIX)
#undef TENEX_INSTANTIATE_DIST_MATRIX

}  // namespace tenex::dist::detail
