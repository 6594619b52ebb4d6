// A program that prints one number, as a new user writes it, checking what the backend
// plugins cost it (tests/plugins/CMakeLists.txt runs it):
//
//   tenex_one_number [--max-rss-mb N]   no CUDA or MPI library is mapped (unless a CUDA driver
//                                       with a device made automatic choice load the CUDA
//                                       plugin), and the peak resident set is at most N MB
//   tenex_one_number --ask cuda         TENEX_BACKEND=cuda: the CUDA plugin is found and loaded;
//                                       the set runs (a device) or fails naming the missing device
//   tenex_one_number --ask distributed  the distributed plugin is found and loaded; the set fails
//                                       naming the missing tenex::dist::Context
//
// Exits 0 when every check holds, 1 naming the first that does not.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <tenex/tenex.hpp>

namespace {

std::string file_text(const char* path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool mapped(std::string_view library) { return file_text("/proc/self/maps").find(library) != std::string::npos; }

/// The peak resident set (VmHWM) in kB, or -1.
long peak_kb() {
  const std::string status = file_text("/proc/self/status");
  const std::size_t at = status.find("VmHWM:");
  return at == std::string::npos ? -1 : std::strtol(status.c_str() + at + 6, nullptr, 10);
}

int fail(const std::string& why) {
  std::printf("FAILED: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ask;
  long max_rss_mb = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view option = argv[i];
    if (option == "--ask") {
      ask = argv[i + 1];
    } else if (option == "--max-rss-mb") {
      max_rss_mb = std::strtol(argv[i + 1], nullptr, 10);
    }
  }
  if (!ask.empty()) setenv("TENEX_BACKEND", ask.c_str(), 1);

  tenex::Tensor<double> a({3}, {1, 2, 3}), b({3}, {4, 5, 6}), c;
  c("") = a("i") * b("i");
  std::string error;
  double value = 0;
  try {
    value = c.at();
  } catch (const tenex::BackendError& e) {
    error = e.what();
  }
  std::printf("%s%s\n", error.empty() ? std::to_string(value).c_str() : "error: ", error.c_str());

  if (ask.empty()) {
    if (!error.empty()) return fail("the CPU set failed");
    if (value != 32) return fail("a . b is " + std::to_string(value) + ", not 32");
    if (mapped("libtenex_dist") || mapped("libmpi") || mapped("libscalapack")) {
      return fail("MPI or the distributed plugin is mapped though nothing asked for it");
    }
    // Without a CUDA driver automatic choice must not load the CUDA plugin or its libraries.
    if (!mapped("libcuda.so") && (mapped("libtenex_cuda") || mapped("libcudart") || mapped("libcublas"))) {
      return fail("the CUDA plugin or CUDA's libraries are mapped on a machine without a CUDA driver");
    }
    const long peak = peak_kb();
    std::printf("peak resident set: %ld kB\n", peak);
    if (max_rss_mb > 0 && (peak < 0 || peak > max_rss_mb * 1024)) {
      return fail("the peak resident set is " + std::to_string(peak) + " kB, above " + std::to_string(max_rss_mb) +
                  " MB");
    }
    return 0;
  }
  if (ask == "cuda") {
    if (!mapped("libtenex_cuda")) return fail("TENEX_BACKEND=cuda did not load libtenex_cuda");
    if (error.empty() ? value != 32 : error.find("no usable CUDA device") == std::string::npos) {
      return fail("the CUDA set neither ran right nor named the missing device");
    }
    return 0;
  }
  if (ask == "distributed") {
    if (!mapped("libtenex_dist")) return fail("TENEX_BACKEND=distributed did not load libtenex_dist");
    if (error.find("no tenex::dist::Context is alive") == std::string::npos) {
      return fail("the distributed set did not name the missing tenex::dist::Context");
    }
    return 0;
  }
  return fail("unknown --ask " + ask);
}
