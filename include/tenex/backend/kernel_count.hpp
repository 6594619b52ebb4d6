// tenex/backend/kernel_count.hpp — what a kernel did, for RunStats (tenex/backend/plugin.hpp).
#pragma once

#include <cstddef>

namespace tenex::detail {

struct KernelCount {
  double flops = 0;       // floating-point operations performed (2*m*n*k per GEMM)
  std::size_t calls = 0;  // BLAS calls + own kernel launches
};

}  // namespace tenex::detail
