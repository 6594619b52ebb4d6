// Benchmark: what a program that runs each contraction a few times pays, under each plan
// search mode (TENEX_PLAN_SEARCH, docs/performance.md): the time of the 1st, 2nd, 10th and
// best of calls 1-N of two statements, each in a fresh process per mode (the mode and the
// planner's state are per process).
//
//   bench_first_calls                    # every mode, each in a child process of this one
//   bench_first_calls --mode amortized [--calls 20]
//   bench_first_calls --cpu              # process CPU time instead of wall time (a loaded machine)
//
//   gemm  c("i,j") = a("i,k") * b("k,j")                   256 x 256 x 256
//   mp2   V("i,a,j,b") = B("Q,i,a") * B("Q,j,b")           Q = 400, i, j = 20, a, b = 120
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include <tenex/tenex.hpp>

namespace {

using Clock = std::chrono::steady_clock;
bool cpu_time = false;  // --cpu: std::clock(), the CPU time of every thread of the process

double now_ms() {
  if (cpu_time) return 1e3 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC;
  return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
}

template <class F>
std::vector<double> calls_of(int calls, F&& statement) {
  std::vector<double> ms;
  for (int call = 0; call < calls; ++call) {
    const double start = now_ms();
    statement();
    ms.push_back(now_ms() - start);
  }
  return ms;
}

// One line per case, then the plan its last call ran and why (explain()).
void report(const char* mode, const char* name, const std::vector<double>& ms, const std::string& explained) {
  std::printf("%-10s %-5s %9.3f %9.3f %9.3f %9.3f %9.3f\n", mode, name, ms[0], ms[1], ms[9],
              *std::min_element(ms.begin(), ms.end()), ms.back());
  const std::size_t at = explained.find("contraction 1 ran: ");
  if (at != std::string::npos) std::printf("    %s\n", explained.substr(at, explained.find('\n', at) - at).c_str());
}

int run_mode(const char* mode, int calls) {
  ::setenv("TENEX_PLAN_SEARCH", mode, 1);
  using tenex::Tensor;
  Tensor<double> a({256, 256}), b({256, 256}), c;
  tenex::fill_random(a, 1);
  tenex::fill_random(b, 2);
  const std::vector<double> gemm = calls_of(calls, [&] {
    c("i,j") = a("i,k") * b("k,j");
    (void)c.at(0, 0);
  });
  const std::string gemm_plan = tenex::explain();
  Tensor<double> B({400, 20, 120}), V;
  tenex::fill_random(B, 3);
  const std::vector<double> mp2 = calls_of(calls, [&] {
    V("i,a,j,b") = B("Q,i,a") * B("Q,j,b");
    (void)V.at(0, 0, 0, 0);
  });
  report(mode, "gemm", gemm, gemm_plan);
  report(mode, "mp2", mp2, tenex::explain());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  int calls = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--mode" && i + 1 < argc) {
      mode = argv[++i];
    } else if (arg == "--cpu") {
      cpu_time = true;
    } else if (arg == "--calls" && i + 1 < argc) {
      calls = std::max(10, std::atoi(argv[++i]));
    } else {
      std::printf("usage: bench_first_calls [--mode estimate|amortized|measure] [--calls N (>= 10)] [--cpu]\n");
      return 2;
    }
  }
  if (!mode.empty()) return run_mode(mode.c_str(), calls);
  std::printf("%-10s %-5s %9s %9s %9s %9s %9s   (ms per call)\n", "mode", "case", "1st", "2nd", "10th", "best", "last");
  std::printf("(%s)\n", cpu_time ? "process CPU time" : "wall time");
  std::fflush(stdout);
  for (const char* each : {"estimate", "amortized", "measure"}) {
    const std::string command = std::string("\"") + argv[0] + "\" --mode " + each + " --calls " + std::to_string(calls);
    if (std::system(command.c_str()) != 0) return 1;
  }
  return 0;
}
