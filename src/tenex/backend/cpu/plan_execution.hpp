// Running a chosen plan: the plain loops, the narrow or GETT kernel, or the GEMM nest with the
// operands laid out as the plan says and c written in place, through a buffer, or one tile at
// a time.
#pragma once

#include <cstddef>

#include "tenex/backend/cpu/contraction_plan.hpp"
#include "tenex/backend/cpu/contraction_problem.hpp"

namespace tenex::detail::cpu::contraction {

// c = alpha * sum a b + beta c with plain loops: for tiny problems, Hadamard products and
// scalars, where GEMM calls would be mostly overhead. Returns the number of kernel calls.
template <class T>
std::size_t run_naive(const Problem& p, T alpha, const T* a, const T* b, T beta, T* c);

// c = alpha * sum a b + beta c as `plan` says: the plain loops, the narrow or GETT kernel, or
// the GEMM nest. Returns the number of kernel, GEMM and copy calls.
template <class T>
// `conj` (complex elements): operands read conjugated; the GEMM reads one it takes in place
// conjugated, one laid out afresh or read by the plain loops is conjugated as it is copied.
std::size_t run_plan(const Problem& p, const Plan& plan, T alpha, const T* a, const T* b, T beta, T* c,
                     Conjugated conj = {});

// Writes one element per page of `data` (size elements), so that a timed run that writes
// it does not also pay for its first touch.
template <class T>
void touch_pages(T* data, std::size_t size) {
  constexpr std::size_t kPage = 4096 / sizeof(T);
  for (std::size_t at = 0; at < size; at += kPage) data[at] = T(0);
}

// Takes the scratch blocks `plan` will take, writes one element per page, and gives them back
// to the block cache, from which the plan's next run takes them: a candidate's timed run
// (contract.cpp) then measures the plan, not first touch of its memory.
template <class T>
void prefault_scratch(const Problem& p, const Plan& plan);

}  // namespace tenex::detail::cpu::contraction
