// Machine profiles for the kernel tests that check a choice the library makes from the
// machine's caches (the GETT kernel's blocking, the cost model's sizes: tuning.hpp): such a
// test states the machine it assumes, pinned with machine::set_caches_for_testing, and runs
// under each profile, so that its expectations hold on whatever CPU runs the suite (issue 45:
// an expectation read from the caches of the CPU at hand failed on a 1 MB L2). Where a test
// also checks a SIMD target's choice, it runs every target the CPU has under each profile.
#pragma once

#include <cstddef>
#include <string>

#include "tenex/backend/cpu/machine.hpp"
#include "tenex/backend/cpu/plan_search.hpp"

namespace machine_profiles {

struct Profile {
  const char* name;
  tenex::detail::cpu::machine::Caches caches;  // l1d, l2 (one core's), l3 (the whole last level)
};

// An AMD Zen 3 core (AVX2), a Zen 5 core (AVX-512) and an Intel Xeon's (AVX-512).
inline constexpr Profile kProfiles[] = {
    {"Zen 3: 32 KB L1d, 512 KB L2, 32 MB L3", {std::size_t{32} << 10, std::size_t{512} << 10, std::size_t{32} << 20}},
    {"Zen 5: 48 KB L1d, 1 MB L2, 32 MB L3", {std::size_t{48} << 10, std::size_t{1} << 20, std::size_t{32} << 20}},
    {"Xeon: 48 KB L1d, 2 MB L2, 105 MB L3", {std::size_t{48} << 10, std::size_t{2} << 20, std::size_t{105} << 20}},
};
inline constexpr std::size_t kProfileCount = sizeof(kProfiles) / sizeof(kProfiles[0]);

// Pins a profile's caches for its lifetime, the planner's state on this thread forgotten at
// both ends (plans made for other caches), then back to the machine's own.
struct Scope {
  explicit Scope(const Profile& profile) {
    tenex::detail::cpu::machine::set_caches_for_testing(&profile.caches);
    tenex::detail::cpu::plan_search::reset_for_testing(false);
  }
  ~Scope() {
    tenex::detail::cpu::machine::set_caches_for_testing(nullptr);
    tenex::detail::cpu::plan_search::reset_for_testing(false);
  }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
};

// Runs check(index) once per profile, its caches pinned.
template <class F>
void for_each_profile(F check) {
  for (std::size_t x = 0; x < kProfileCount; ++x) {
    const Scope scope(kProfiles[x]);
    check(x);
  }
}

}  // namespace machine_profiles
