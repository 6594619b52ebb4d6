// Every plan of the CPU contraction kernel timed on the TCCG cases (or any cases file), next to
// the model's prediction and one GEMM of the same m, n, k: how far the cost model's ranking is
// from the machine's, and which case no plan serves well.
//
//   bench_contraction_plans [cases.tsv] [--filter NAME] [--repeat N] [--float | --complex128] [--top N]
//                           [--timed N] [--offset BYTES]
//
// For each case it prints the GEMM time, then the plan contract() settles on (after its
// measured search) and the --top N plans (default 8) by measured time, each with the model's
// predicted time and its description (src/tenex/backend/cpu/contract.cpp), among the --timed N
// plans (default 24) the model ranks first (the first of them is the model's choice), and the
// narrow and GETT kernels' plans where they run. The kernel is called directly
// (internal API, src/tenex/backend/cpu/kernels.hpp), so there is no graph work.
#include <cblas.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tccg_cases.hpp"
#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/contraction_problem.hpp"
#include "tenex/backend/cpu/kernels.hpp"
#include "tenex/backend/cpu/plan_search.hpp"

namespace {

namespace cpu = tenex::detail::cpu;

template <class F>
double best_ms(int repeat, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

void gemm(int m, int n, int k, const double* a, const double* b, double* c) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, a, k, b, n, 0.0, c, n);
}
void gemm(int m, int n, int k, const float* a, const float* b, float* c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0F, a, k, b, n, 0.0F, c, n);
}
void gemm(int m, int n, int k, const std::complex<double>* a, const std::complex<double>* b, std::complex<double>* c) {
  const std::complex<double> one(1), zero(0);
  cblas_zgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, &one, a, k, b, n, &zero, c, n);
}

template <class T>
T random_value(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> uniform(-1, 1);
  if constexpr (std::is_same_v<T, std::complex<double>>) {
    const double re = uniform(rng);
    return {re, uniform(rng)};
  } else {
    return static_cast<T>(uniform(rng));
  }
}

cpu::Modes modes_of(const std::string& letters) {
  cpu::Modes modes;
  for (char ch : letters) modes.push_back(ch);
  return modes;
}

double model_ms(const std::string& description) {
  const std::size_t at = description.rfind("model ");
  return at == std::string::npos ? 0.0 : std::stod(description.substr(at + 6));
}

template <class T>
void bench_case(const tccg::Case& c, int repeat, std::size_t top, std::size_t timed_count, std::size_t offset_bytes) {
  const cpu::Extents ea = tccg::extents_of(c, c.a), eb = tccg::extents_of(c, c.b), ec = tccg::extents_of(c, c.c);
  const cpu::Modes ma = modes_of(c.a), mb = modes_of(c.b), mc = modes_of(c.c);
  auto volume = [](const cpu::Extents& e) {
    std::size_t n = 1;
    for (std::size_t x : e) n *= x;
    return n;
  };
  // Operands and result `offset` bytes past a page boundary (--offset; alignment changes how
  // fast strided reads run: see docs/performance.md), in memory asking for huge pages before
  // its first touch, as tenex's tensors are (tensor/memory.cpp): on 4 KiB pages, a strided
  // operand (tccg06, efbad,cf->abcde: each k of a's rows 103 KB apart) pays a TLB miss a read
  // that contract() on tensors does not.
  const std::size_t offset = offset_bytes;
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  using Raw = std::unique_ptr<unsigned char, Free>;
  auto place = [offset](Raw& raw, std::size_t n) {
    constexpr std::size_t huge = std::size_t{2} << 20;
    const std::size_t bytes = (n * sizeof(T) + offset + huge - 1) / huge * huge;
    raw.reset(static_cast<unsigned char*>(std::aligned_alloc(huge, bytes)));
    if (!raw) throw std::bad_alloc();
    static_cast<void>(madvise(raw.get(), bytes, MADV_HUGEPAGE));
    std::memset(raw.get(), 0, bytes);
    return reinterpret_cast<T*>(raw.get() + offset);
  };
  Raw raw_a, raw_b, raw_out;
  T* const a_data = place(raw_a, volume(ea));
  T* const b_data = place(raw_b, volume(eb));
  T* const out_data = place(raw_out, volume(ec));
  std::mt19937_64 rng(7);
  for (std::size_t x = 0; x < volume(ea); ++x) a_data[x] = random_value<T>(rng);
  for (std::size_t x = 0; x < volume(eb); ++x) b_data[x] = random_value<T>(rng);
  struct View {
    T* p;
    T* data() const { return p; }
  };
  const View a{a_data}, b{b_data}, out{out_data};
  // GEMM of the same size: m from a's free modes, n from b's, k from the shared ones.
  std::size_t m = 1, n = 1, k = 1;
  for (char ch : c.a) (c.b.find(ch) == std::string::npos ? m : k) *= c.extent.at(ch);
  for (char ch : c.b) {
    if (c.a.find(ch) == std::string::npos) n *= c.extent.at(ch);
  }
  std::vector<T> ga(m * k, T(0.5)), gb(k * n, T(0.25)), gc(m * n);
  auto run_gemm = [&] { gemm(int(m), int(n), int(k), ga.data(), gb.data(), gc.data()); };
  run_gemm();
  const double gemm_ms = best_ms(repeat, run_gemm);

  // contract(), after its measured search has settled.
  auto run_contract = [&] { cpu::contract(T(1), a.data(), ea, ma, b.data(), eb, mb, T(0), out.data(), mc); };
  for (int warm = 0; warm < 4; ++warm) run_contract();
  const double chosen_ms = best_ms(repeat, run_contract);

  const std::size_t plans = cpu::contract_plan_count<T>(ea, ma, eb, mb, mc, true);
  struct Timed {
    std::size_t index;
    double ms, model;
    std::string text;
  };
  std::vector<Timed> timed;
  std::vector<std::string> texts(plans);
  for (std::size_t x = 0; x < plans; ++x) texts[x] = cpu::contract_plan_description<T>(x, ea, ma, eb, mb, mc, true);
  // The `timed` plans the model ranks first.
  std::vector<std::size_t> ranked;
  for (std::size_t x = 0; x < plans; ++x) {
    if (texts[x] != "plain loops") ranked.push_back(x);
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](std::size_t x, std::size_t y) { return model_ms(texts[x]) < model_ms(texts[y]); });
  if (ranked.size() > timed_count) ranked.resize(timed_count);
  // The narrow and GETT kernels' plans too, which the model never ranks (contract() times them).
  for (std::size_t x = 0; x < plans; ++x) {
    const bool kernel = texts[x].rfind("narrow kernel", 0) == 0 || texts[x].rfind("GETT kernel", 0) == 0;
    if (kernel && std::find(ranked.begin(), ranked.end(), x) == ranked.end()) ranked.push_back(x);
  }
  for (std::size_t x : ranked) {
    auto run = [&] { cpu::contract_with_plan(x, T(1), a.data(), ea, ma, b.data(), eb, mb, T(0), out.data(), mc); };
    run();
    timed.push_back({x, best_ms(repeat, run), model_ms(texts[x]), texts[x]});
  }
  const Timed model_choice = timed.empty() ? Timed{0, 0, 0, ""} : timed.front();
  std::sort(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) { return x.ms < y.ms; });
  std::printf(
      "%s %s  m=%zu n=%zu k=%zu  gemm %.2f ms  contract() %.2f ms (ratio %.2f)  model's choice #%zu %.2f ms (ratio "
      "%.2f)  %zu plans, %zu timed\n",
      c.name.c_str(), c.einsum.c_str(), m, n, k, gemm_ms, chosen_ms, gemm_ms / chosen_ms, model_choice.index,
      model_choice.ms, gemm_ms / model_choice.ms, plans, timed.size());
  const auto prepared =
      cpu::contraction::prepare(sizeof(T), true, ea, ma, eb, mb, mc, std::is_same_v<T, std::complex<double>>);
  for (const auto& plan :
       cpu::plan_search::candidate_plans(prepared.problem, prepared.flops, cpu::plan_search::kPlansTried)) {
    std::printf("  candidate: %s\n", cpu::contraction::describe(prepared.problem, plan).c_str());
  }
  for (std::size_t x = 0; x < std::min(top, timed.size()); ++x) {
    std::printf("  #%-4zu %8.2f ms  ratio %.2f  %s\n", timed[x].index, timed[x].ms, gemm_ms / timed[x].ms,
                timed[x].text.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  // Steady state after the first call's search: TENEX_PLAN_SEARCH=measure unless set (the
  // default, amortized, spreads the search over many calls; docs/performance.md).
  ::setenv("TENEX_PLAN_SEARCH", "measure", 0);
  std::string path, filter;
#ifdef TENEX_TCCG_TSV
  path = TENEX_TCCG_TSV;
#endif
  int repeat = 3;
  std::size_t top = 8, timed_count = 24, offset = 64;
  bool single = false, complex = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--float") {
      single = true;
    } else if (arg == "--complex128") {
      complex = true;
    } else if ((arg == "--filter" || arg == "--repeat" || arg == "--top" || arg == "--timed" || arg == "--offset") &&
               i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--filter") filter = value;
      if (arg == "--repeat") repeat = std::max(1, std::stoi(value));
      if (arg == "--top") top = static_cast<std::size_t>(std::max(1, std::stoi(value)));
      if (arg == "--timed") timed_count = static_cast<std::size_t>(std::max(1, std::stoi(value)));
      if (arg == "--offset") offset = static_cast<std::size_t>(std::max(0, std::stoi(value)));
    } else if (!arg.empty() && arg[0] != '-') {
      path = arg;
    } else {
      std::printf(
          "usage: bench_contraction_plans [cases.tsv] [--filter NAME] [--repeat N] [--float | --complex128] [--top N] "
          "[--timed N] [--offset BYTES]\n");
      return 2;
    }
  }
  try {
    for (const tccg::Case& c : tccg::read_cases(path)) {
      if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
      if (complex) {
        bench_case<std::complex<double>>(c, repeat, top, timed_count, offset);
      } else if (single) {
        bench_case<float>(c, repeat, top, timed_count, offset);
      } else {
        bench_case<double>(c, repeat, top, timed_count, offset);
      }
    }
  } catch (const std::exception& error) {
    std::printf("error: %s\n", error.what());
    return 1;
  }
  return 0;
}
