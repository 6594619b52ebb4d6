#!/usr/bin/env python3
"""The MP2 correlation energy of a synthetic closed-shell molecule with tenex from Python: the
demo's examples/mp2_energy.cpp, statement for statement, checked against numpy.einsum.

    1. Roothaan equations  F C = S C e  (S symmetric positive definite): eigen_solve(F, S)
    2. Orbital blocks      Co = C[:, :nocc], Cv = C[:, nocc:]  (slice)
    3. Transformation      B(Q,i,a) = sum_mn Bao(Q,m,n) Co(m,i) Cv(n,a)
    4. MP2                 V(i,a,j,b) = sum_Q B(Q,i,a) B(Q,j,b)
                           T = V / (e_i - e_a + e_j - e_b)
                           E = sum T (2 V(i,a,j,b) - V(i,b,j,a))

    PYTHONPATH=build-test/python /usr/bin/python3 examples/python/mp2.py [--nocc 20] [--nvirt 120] [--naux 400]

Prints each stage's time, the energy and numpy's; exits with 1 when they differ by more than
1e-10 (relative).
"""
import argparse
import sys
import time

import numpy as np

import tenex


def synthetic_inputs(nocc, nvirt, naux, seed=2024):
    """F, S and Bao shaped like real ones (the C++ demo's recipe, numpy's random numbers)."""
    rng = np.random.default_rng(seed)
    nbf = nocc + nvirt
    x = rng.uniform(-1, 1, (nbf, nbf))
    y = rng.uniform(-1, 1, (nbf, nbf))
    s = np.eye(nbf) + (0.2 / nbf) * x @ x.T
    levels = np.concatenate([rng.uniform(-1.0, -0.5, nocc), rng.uniform(0.5, 2.0, nvirt)])
    f = np.diag(levels) + (0.02 / np.sqrt(nbf)) * (y + y.T)
    bao = rng.uniform(-1, 1, (naux, nbf, nbf))
    bao = (0.075 / np.sqrt(naux)) * (bao + bao.transpose(0, 2, 1))
    return f, s, bao


def mp2_tenex(f, s, bao, nocc):
    """The energy with tenex, and the time of each stage."""
    nbf = f.shape[0]
    F, S, Bao = tenex.Tensor(f), tenex.Tensor(s), tenex.Tensor(bao)  # views: no copy
    times = {}

    start = time.perf_counter()
    C, e = tenex.Tensor(), tenex.Tensor()  # shaped by their results
    with tenex.lazy():  # both factors from one generalized eigensolver call
        C["m,n"], e["n"] = tenex.eigen_solve(F["m,n"], S["m,n"])
    times["roothaan"] = time.perf_counter() - start

    start = time.perf_counter()
    B, eo, ev = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
    with tenex.lazy():
        # Labels are names: the same C read as (m,i) and as (n,a) gives the two blocks.
        co = tenex.slice(C["m,i"], [0, 0], [nbf, nocc])
        cv = tenex.slice(C["n,a"], [0, nocc], [nbf, nbf])
        eo["i"] = tenex.slice(e["i"], [0], [nocc])
        ev["a"] = tenex.slice(e["a"], [nocc], [nbf])
        B["Q,i,a"] = Bao["Q,m,n"] * co * cv
    times["transform"] = time.perf_counter() - start

    start = time.perf_counter()
    V, T, E = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
    with tenex.lazy():  # one optimized set
        V["i,a,j,b"] = B["Q,i,a"] * B["Q,j,b"]
        T["i,a,j,b"] = V["i,a,j,b"] / (eo["i"] - ev["a"] + eo["j"] - ev["b"])
        E[""] = T["i,a,j,b"] * (2.0 * V["i,a,j,b"] - V["i,b,j,a"])
    times["mp2"] = time.perf_counter() - start
    return float(E.numpy()), times


def mp2_numpy(f, s, bao, nocc):
    """The same energy with numpy: the generalized problem through S's Cholesky factor."""
    linv = np.linalg.inv(np.linalg.cholesky(s))
    e, y = np.linalg.eigh(linv @ f @ linv.T)
    c = linv.T @ y
    co, cv = c[:, :nocc], c[:, nocc:]
    eo, ev = e[:nocc], e[nocc:]
    b = np.einsum("Qmn,mi,na->Qia", bao, co, cv, optimize=True)
    v = np.einsum("Qia,Qjb->iajb", b, b, optimize=True)
    d = eo[:, None, None, None] - ev[None, :, None, None] + eo[None, None, :, None] - ev[None, None, None, :]
    t = v / d
    return float(np.einsum("iajb,iajb->", t, 2.0 * v - v.transpose(0, 3, 2, 1), optimize=True))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nocc", type=int, default=20)
    parser.add_argument("--nvirt", type=int, default=120)
    parser.add_argument("--naux", type=int, default=400)
    args = parser.parse_args(argv)
    if min(args.nocc, args.nvirt, args.naux) <= 0:
        parser.error("--nocc, --nvirt and --naux take positive integers")

    nbf = args.nocc + args.nvirt
    print(f"MP2 correlation energy: {args.nocc} occupied, {args.nvirt} virtual ({nbf} basis functions), "
          f"{args.naux} auxiliary")
    f, s, bao = synthetic_inputs(args.nocc, args.nvirt, args.naux)
    energy, times = mp2_tenex(f, s, bao, args.nocc)
    for stage, seconds in times.items():
        print(f"  {stage:<12} {seconds:.4f} s")
    start = time.perf_counter()
    reference = mp2_numpy(f, s, bao, args.nocc)
    numpy_seconds = time.perf_counter() - start
    difference = abs(energy - reference) / max(abs(reference), 1e-300)
    print(f"  energy       {energy:.12f}")
    print(f"  numpy.einsum {reference:.12f}  ({numpy_seconds:.4f} s; relative difference {difference:.1e})")
    if not difference <= 1e-10:
        print("  the energies differ", file=sys.stderr)
        return 1
    print("  agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
