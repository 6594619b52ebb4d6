#!/usr/bin/python3
"""tenex.einsum against numpy.einsum(optimize=True): the per-call overhead and the TCCG cases.

    PYTHONPATH=build-test/python /usr/bin/python3 bench/python/einsum_vs_numpy.py \
        [--tsv ../shared/bench/tccg_public.tsv] [--threads 1,2] [--repeat 3] [--cases tccg01,tccg13]

For each thread count the script runs itself again in a fresh process with OMP_NUM_THREADS and
OPENBLAS_NUM_THREADS set (both libraries call the same OpenBLAS), and prints:
  (a) the overhead: best-of-5 timeit of einsum("ij,jk->ik", a, b) on 2x2 float64 arrays, in µs
      per call, and tenex/numpy (below 1: tenex costs less);
  (b) one table of the TCCG cases (float64, einsum strings of the file, operands uniform in
      [-1, 1)): the first call of each case (cold: tenex plans the statement, numpy finds its
      contraction path) and the best of --repeat later calls (steady), in ms, the speedups
      numpy/tenex, and the largest difference of the results (relative to the largest element);
      then the geometric means of the speedups.
Run it on an otherwise idle machine: the figures of docs/python.md come from it.
"""
import math
import os
import subprocess
import sys
import time
import timeit

# The TCCG file's reader, shared with the numpy baseline (bench/tccg_numpy.py).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tccg_numpy import parse  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def import_tenex():
    try:
        import tenex  # noqa: F401
    except ImportError:
        for build in ("build-test", "build"):
            path = os.path.join(ROOT, build, "python")
            if os.path.isdir(os.path.join(path, "tenex")):
                sys.path.insert(0, path)
                break
    import tenex
    return tenex


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def overhead(np, tenex):
    a = np.random.default_rng(0).uniform(-1, 1, (2, 2))
    b = np.random.default_rng(1).uniform(-1, 1, (2, 2))
    number = 20000

    def best(fn):
        fn()
        return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6

    t_numpy = best(lambda: np.einsum("ij,jk->ik", a, b, optimize=True))
    t_tenex = best(lambda: tenex.einsum("ij,jk->ik", a, b))
    print(f"overhead 2x2 ij,jk->ik: tenex {t_tenex:.2f} us, numpy(optimize=True) {t_numpy:.2f} us, "
          f"tenex/numpy {t_tenex / t_numpy:.3f}", flush=True)


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def tccg(np, tenex, path, repeat, only):
    rng = np.random.default_rng(1)
    cold_speedups, steady_speedups = [], []
    print(f"{'case':8} {'einsum':22} {'tenex cold':>10} {'numpy cold':>10} {'tenex ms':>9} {'numpy ms':>9} "
          f"{'cold x':>7} {'steady x':>8} {'max diff':>9}")
    for name, spec, ext in parse(path):
        if only and name not in only:
            continue
        inputs = spec.split("->")[0].split(",")
        operands = [rng.uniform(-1, 1, [ext[c] for c in term]) for term in inputs]
        t_tenex_cold, r_tenex = timed(lambda: tenex.einsum(spec, *operands))
        t_numpy_cold, r_numpy = timed(lambda: np.einsum(spec, *operands, optimize=True))
        diff = float(np.max(np.abs(r_tenex - r_numpy)) / max(1e-300, float(np.max(np.abs(r_numpy)))))
        del r_tenex, r_numpy
        t_tenex = min(timed(lambda: tenex.einsum(spec, *operands))[0] for _ in range(repeat))
        t_numpy = min(timed(lambda: np.einsum(spec, *operands, optimize=True))[0] for _ in range(repeat))
        cold_speedups.append(t_numpy_cold / t_tenex_cold)
        steady_speedups.append(t_numpy / t_tenex)
        print(f"{name:8} {spec:22} {t_tenex_cold * 1e3:10.1f} {t_numpy_cold * 1e3:10.1f} {t_tenex * 1e3:9.1f} "
              f"{t_numpy * 1e3:9.1f} {cold_speedups[-1]:7.2f} {steady_speedups[-1]:8.2f} {diff:9.1e}", flush=True)
    if steady_speedups:
        print(f"geometric mean numpy/tenex: cold {geomean(cold_speedups):.2f}x, "
              f"steady {geomean(steady_speedups):.2f}x ({len(steady_speedups)} cases)", flush=True)


def main():
    args = sys.argv[1:]

    def option(name, default):
        if name in args:
            return args[args.index(name) + 1]
        return default

    path = option("--tsv", os.path.join(ROOT, "..", "shared", "bench", "tccg_public.tsv"))
    repeat = int(option("--repeat", "3"))
    only = [c for c in option("--cases", "").split(",") if c]
    if "--child" not in args:
        for threads in option("--threads", "1,2").split(","):
            env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
            print(f"== {threads} thread(s) ==", flush=True)
            child = [sys.executable, os.path.abspath(__file__), "--child", "--tsv", path, "--repeat", str(repeat)]
            if only:
                child += ["--cases", ",".join(only)]
            subprocess.run(child, env=env, check=True)
        return
    import numpy as np
    tenex = import_tenex()
    overhead(np, tenex)
    tccg(np, tenex, path, repeat, only)


if __name__ == "__main__":
    main()
