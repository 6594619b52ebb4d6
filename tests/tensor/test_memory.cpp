// The block cache behind large tensors: freed blocks of 64 KiB and more wait for the
// next allocation of the same size class, and release_cached_memory() hands them back.
#include <doctest/doctest.h>

#include <cstdint>

#include <tenex/tenex.hpp>

TEST_CASE("memory: large freed buffers are kept for reuse and released on request") {
  tenex::release_cached_memory();
  CHECK(tenex::cached_memory_bytes() == 0);
  const tenex::Shape big{512, 512};  // 2 MiB of doubles
  { tenex::Tensor<double> t(big); }
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer nothing is cached, so use-after-free stays detectable.
  CHECK(tenex::cached_memory_bytes() == 0);
#else
  CHECK(tenex::cached_memory_bytes() >= big.size() * sizeof(double));
  {
    tenex::Tensor<double> again(big);  // takes the cached block back, zero-filled all the same
    CHECK(tenex::cached_memory_bytes() == 0);
    CHECK(again.at(511, 511) == 0.0);
    CHECK(again.at(0, 0) == 0.0);
  }
  CHECK(tenex::cached_memory_bytes() >= big.size() * sizeof(double));
  {
    tenex::Tensor<double> nearly(tenex::Shape{512, 500});  // a little smaller: the same size class
    CHECK(tenex::cached_memory_bytes() == 0);
  }
  CHECK(tenex::cached_memory_bytes() >= big.size() * sizeof(double));
#endif
  tenex::release_cached_memory();
  // A result of a few hundred KiB as well (malloc would map and unmap it, faulting its pages
  // in again on every statement of a loop).
  { tenex::Tensor<double> medium(tenex::Shape{128, 256}); }  // 256 KiB
#if !defined(__SANITIZE_ADDRESS__)
  CHECK(tenex::cached_memory_bytes() >= 256 * 1024);
#endif
  tenex::release_cached_memory();
  // Small buffers never go to the cache.
  { tenex::Tensor<double> small(tenex::Shape{8, 8}); }
  { tenex::Tensor<double> below(tenex::Shape{64, 64}); }  // 32 KiB
  CHECK(tenex::cached_memory_bytes() == 0);
  tenex::release_cached_memory();
  CHECK(tenex::cached_memory_bytes() == 0);
}

TEST_CASE("memory: blocks of 8 MiB and more start on a 2 MiB boundary (huge pages on request)") {
  tenex::Tensor<double> big(tenex::Shape{1024, 1280});  // 10 MiB
  const auto at = reinterpret_cast<std::uintptr_t>(big.data());
#if defined(__SANITIZE_ADDRESS__)
  CHECK(at % 64 == 0);
#else
  CHECK(at % (std::uintptr_t{2} << 20) == 0);
#endif
  big.data()[big.size() - 1] = 1.0;  // every byte of it is usable
  CHECK(big.at(1023, 1279) == 1.0);
  tenex::Tensor<double> small(tenex::Shape{64, 64});
  CHECK(reinterpret_cast<std::uintptr_t>(small.data()) % 64 == 0);
}

TEST_CASE("memory: a result overwritten in a loop stays correct with reused blocks") {
  tenex::Tensor<double> a({300, 200}), b({200, 250}), c;
  tenex::fill_random(a, 5);
  tenex::fill_random(b, 6);
  for (int round = 0; round < 3; ++round) {
    c("i,j") = a("i,k") * b("k,j");
    double expected = 0;
    for (std::size_t k = 0; k < 200; ++k) expected += a.at(299, k) * b.at(k, 249);
    CHECK(c.at(299, 249) == doctest::Approx(expected).epsilon(1e-12));
  }
}
