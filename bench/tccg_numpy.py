#!/usr/bin/python3
"""numpy.einsum(optimize=True) on the TCCG cases, against one numpy GEMM of the same m, n, k.

Run with Debian's system Python (python3-numpy), the same OpenBLAS as tenex:
    /usr/bin/python3 bench/tccg_numpy.py [../shared/bench/tccg_public.tsv] [--repeat N] [--float]
Prints name, einsum ms (the result as numpy returns it, which can be a transposed view),
contiguous ms (the same made C-contiguous with np.ascontiguousarray, the layout tenex writes),
gemm ms and gemm/einsum for both (1.0 = as fast as one GEMM), and the geometric means.
Thread counts follow OPENBLAS_NUM_THREADS, which must be set before Python starts.
"""
import math
import os
import sys
import time

import numpy as np


def parse(path):
    cases = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, spec, extents, gflop, group = line.rstrip("\n").split("\t")
            ext = {kv.split("=")[0]: int(kv.split("=")[1]) for kv in extents.split(",")}
            cases.append((name, spec, ext))
    return cases


def best_of(fn, repeat):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repeat = 5
    if "--repeat" in sys.argv:
        repeat = int(sys.argv[sys.argv.index("--repeat") + 1])
        args = [a for a in args if a != str(repeat)]
    here = os.path.dirname(os.path.abspath(__file__))
    path = args[0] if args else os.path.join(here, "..", "..", "shared", "bench", "tccg_public.tsv")
    dtype = np.float32 if "--float" in sys.argv else np.float64
    rng = np.random.default_rng(1)
    ratios = []
    contiguous_ratios = []
    print(f"{'case':8} {'einsum':24} {'numpy_ms':>10} {'contig_ms':>10} {'gemm_ms':>10} {'ratio':>7} {'contig':>7}")
    for name, spec, ext in parse(path):
        inputs, out = spec.split("->")
        a_labels, b_labels = inputs.split(",")
        a = rng.uniform(-1, 1, [ext[l] for l in a_labels]).astype(dtype)
        b = rng.uniform(-1, 1, [ext[l] for l in b_labels]).astype(dtype)
        m = math.prod(ext[l] for l in a_labels if l in out)
        n = math.prod(ext[l] for l in b_labels if l in out)
        k = math.prod(ext[l] for l in a_labels if l in b_labels and l not in out)
        ga = rng.uniform(-1, 1, (m, k)).astype(dtype)
        gb = rng.uniform(-1, 1, (k, n)).astype(dtype)
        t_einsum = best_of(lambda: np.einsum(spec, a, b, optimize=True), repeat)
        t_contiguous = best_of(lambda: np.ascontiguousarray(np.einsum(spec, a, b, optimize=True)), repeat)
        t_gemm = best_of(lambda: ga @ gb, repeat)
        ratio = t_gemm / t_einsum
        contiguous_ratio = t_gemm / t_contiguous
        ratios.append(ratio)
        contiguous_ratios.append(contiguous_ratio)
        print(f"{name:8} {spec:24} {t_einsum * 1e3:10.2f} {t_contiguous * 1e3:10.2f} {t_gemm * 1e3:10.2f} "
              f"{ratio:7.3f} {contiguous_ratio:7.3f}", flush=True)

    def geomean(values):
        return math.exp(sum(math.log(r) for r in values) / len(values))
    print(f"geometric mean gemm/einsum: {geomean(ratios):.3f} (contiguous {geomean(contiguous_ratios):.3f})")


if __name__ == "__main__":
    main()
