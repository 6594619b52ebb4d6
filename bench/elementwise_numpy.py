#!/usr/bin/python3
"""numpy evaluating the fused element-wise chains of bench_elementwise.cpp.

    /usr/bin/python3 bench/elementwise_numpy.py N REPEAT streaming|transposed
Prints the best time in seconds of r = a + 2 b - c / d[:, None] (b transposed for
"transposed"), with n x n doubles; bench_elementwise runs it and prints it beside tenex.
"""
import sys
import time

import numpy as np


def main():
    n = int(sys.argv[1])
    repeat = int(sys.argv[2])
    transposed = sys.argv[3] == "transposed"
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n))
    b = rng.uniform(-1, 1, (n, n))
    c = rng.uniform(-1, 1, (n, n))
    d = 2.0 + (np.arange(n) % 7).astype(np.float64)

    def run():
        bb = b.T if transposed else b
        return a + 2.0 * bb - c / d[:, None]

    run()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    print(f"{best:.6f}")


if __name__ == "__main__":
    main()
