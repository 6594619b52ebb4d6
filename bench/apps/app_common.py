"""What the numpy twins of the application benchmarks share (see app_common.hpp).

`pattern` makes the same deterministic inputs as the C++ programs (element n, row-major, is
scale * sin((0.0123 n + 0.37) n + k), computed in the same order of operations); `run_and_report` times
the iterations and prints the same `key value` report.
"""

import argparse
import statistics
import sys
import time

import numpy as np


def options(program, defaults, description):
    """Parses `--name value` (positive integers) with these defaults; returns a dict."""
    parser = argparse.ArgumentParser(prog=program, description=description)
    for name, value in defaults.items():
        parser.add_argument("--" + name, type=int, default=value)
    values = vars(parser.parse_args())
    for name, value in values.items():
        if value <= 0:
            parser.error(f"--{name} takes a positive integer, not {value}")
    return values


def pattern(shape, k, scale):
    """An array of this shape whose element n (row-major) is scale * sin((0.0123 n + 0.37) n + k)."""
    size = int(np.prod(shape, dtype=np.int64))
    x = np.empty(size)
    chunk = 1 << 22  # in pieces: the largest input (v^4) is 800 MB
    for start in range(0, size, chunk):
        index = np.arange(start, min(start + chunk, size), dtype=np.float64)
        part = index * 0.0123
        part += 0.37
        part *= index
        part += k
        np.sin(part, out=part)
        part *= scale
        x[start:start + len(part)] = part
    return x.reshape(shape)


def run_and_report(program, values, flops_per_iteration, iteration):
    """Runs `iteration` (returning the checksum) values['iterations'] times; prints the report."""
    count = values["iterations"]
    seconds = []
    checksum = None
    for _ in range(count):
        start = time.perf_counter()
        checksum = iteration()
        seconds.append(time.perf_counter() - start)
    sizes = " ".join(f"{name}={value}" for name, value in sorted(values.items()) if name != "iterations")
    lines = [f"program {program}", "implementation numpy", f"size {sizes}", f"iterations {count}",
             f"flops_per_iteration {flops_per_iteration:.6e}"]
    lines += [f"iteration {i + 1} {s:.6f}" for i, s in enumerate(seconds)]
    # The steady time is the median of the iterations after the first (the first alone when
    # there is only one).
    steady = statistics.median(seconds[1:] if count > 1 else seconds)
    lines += [f"cold_seconds {seconds[0]:.6f}", f"steady_seconds {steady:.6f}",
              f"cold_gflops {flops_per_iteration / seconds[0] * 1e-9:.3f}",
              f"steady_gflops {flops_per_iteration / steady * 1e-9:.3f}", f"checksum {float(checksum):.17e}"]
    sys.stdout.write("\n".join(lines) + "\n")
