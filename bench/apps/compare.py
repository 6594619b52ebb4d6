#!/usr/bin/python3
"""Runs the application benchmarks in C++ (tenex) and Python (numpy) and compares them.

Each program runs in a fresh process and prints a `key value` report (app_common.hpp); the
two sides compute the same statements on the same deterministic inputs, so their checksums
must agree to 1e-8 (relative): a mismatch is an error, whatever the timings.

  compare.py --check EXE TWIN.py [ARGS...]   run both with ARGS (small sizes), compare the
                                             checksums; the apps ctest. Exit 77 (skipped)
                                             when this Python has no numpy.
  compare.py --table BINDIR                  run mp2, ccd and mps at their default sizes and
                                             print one table (scripts/bench-apps)
"""

import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROGRAMS = ("mp2", "ccd", "mps")
TOLERANCE = 1e-8
SKIPPED = 77  # ctest's SKIP_RETURN_CODE


def run(command):
    """Runs one program; returns its report as a dict (iteration times as a list)."""
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"compare.py: {' '.join(map(str, command))} failed ({done.returncode}):\n{done.stderr}")
    report = {"iteration": []}
    for line in done.stdout.splitlines():
        key, _, value = line.partition(" ")
        if key == "iteration":
            report["iteration"].append(float(value.split()[1]))
        else:
            report[key] = value
    for key in ("cold_seconds", "steady_seconds", "checksum", "flops_per_iteration"):
        if key not in report:
            raise SystemExit(f"compare.py: {command[0]} printed no {key} line:\n{done.stdout}")
    return report


def agree(program, tenex, numpy):
    """Prints both checksums; False when they differ by more than TOLERANCE (relative)."""
    a, b = float(tenex["checksum"]), float(numpy["checksum"])
    difference = abs(a - b) / max(abs(a), abs(b), 1e-300)
    ok = difference <= TOLERANCE
    print(f"{program}: checksum tenex {a:.15e}, numpy {b:.15e}, relative difference {difference:.2e}: "
          f"{'ok' if ok else f'MISMATCH (> {TOLERANCE:g})'}")
    return ok


def check(executable, twin, arguments):
    try:
        import numpy  # noqa: F401  (only asks whether it is there)
    except ImportError:
        print(f"compare.py: {sys.executable} has no numpy (Debian: python3-numpy); skipped")
        return SKIPPED
    program = Path(twin).stem
    tenex = run([executable, *arguments])
    numpy_report = run([sys.executable, twin, *arguments])
    return 0 if agree(program, tenex, numpy_report) else 1


def machine():
    """The CPU's model name, its vector ISA and the settings the table depends on."""
    model = platform.processor() or "unknown CPU"
    try:
        lscpu = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True, check=False).stdout
        for line in lscpu.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    flags = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    isa = ", ".join(name for name in ("avx512f", "avx2") if name in flags) or "neither avx512f nor avx2"
    threads = os.environ.get("OMP_NUM_THREADS", "unset")
    blas_threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    search = os.environ.get("TENEX_PLAN_SEARCH", "unset")
    simd = os.environ.get("TENEX_SIMD", "unset")
    return (f"CPU: {model} ({os.cpu_count()} logical CPUs); ISA: {isa}\n"
            f"threads: OMP_NUM_THREADS={threads}, OPENBLAS_NUM_THREADS={blas_threads} (both sides); "
            f"TENEX_PLAN_SEARCH={search}, TENEX_SIMD={simd}")


def table(bindir):
    import numpy
    rows, ok = [], True
    for program in PROGRAMS:
        tenex = run([str(Path(bindir) / f"app_{program}")])
        numpy_report = run([sys.executable, str(HERE / f"{program}.py")])
        ok = agree(program, tenex, numpy_report) and ok
        rows.append((program, tenex, numpy_report))

    def cell(report, key):
        seconds = float(report[key])
        return f"{seconds:.4f} s ({float(report['flops_per_iteration']) / seconds * 1e-9:.1f} GFLOP/s)"

    print()
    print(machine())
    print(f"numpy {numpy.__version__} (einsum, optimize=True) under {sys.executable}; "
          "cold: the first iteration in a fresh process, steady: the median of the later ones")
    print()
    print("| program | size | tenex cold | tenex steady | numpy cold | numpy steady | numpy/tenex cold | numpy/tenex steady |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for program, tenex, numpy_report in rows:
        cold = float(numpy_report["cold_seconds"]) / float(tenex["cold_seconds"])
        steady = float(numpy_report["steady_seconds"]) / float(tenex["steady_seconds"])
        print(f"| {program} | {tenex['size']}, {tenex['iterations']} iterations | {cell(tenex, 'cold_seconds')} | "
              f"{cell(tenex, 'steady_seconds')} | {cell(numpy_report, 'cold_seconds')} | "
              f"{cell(numpy_report, 'steady_seconds')} | {cold:.2f} | {steady:.2f} |")
    print("\nratios above 1: tenex faster")
    if not ok:
        print("compare.py: the checksums of tenex and numpy differ (see above)", file=sys.stderr)
        return 1
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "--check":
        return check(argv[1], argv[2], argv[3:])
    if len(argv) == 2 and argv[0] == "--table":
        return table(argv[1])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
