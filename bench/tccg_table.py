#!/usr/bin/python3
"""One table of tenex, numpy.einsum and Eigen::Tensor against one GEMM, on a file of cases.

    /usr/bin/python3 bench/tccg_table.py [cases.tsv] [--threads N] [--repeat N] [--float]
                                         [--build build] [--data FILE] [--plot FILE.png]

Runs, one after the other and each with OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=N (default 1):
  - build/bench/bench_contractions: tenex against one cblas_dgemm (sgemm with --float) of the
    same m, n, k, alternating in one process;
  - bench/tccg_numpy.py with the system Python: numpy.einsum(optimize=True) as it returns its
    result and made contiguous, against one numpy GEMM (the same OpenBLAS) in one process;
  - build/bench/bench_eigen_tccg (double only, when it was built): Eigen::Tensor's contract on
    a ThreadPoolDevice of N threads against tenex, alternating in one process.
Every column is GEMM time / that library's time (1 = as fast as one GEMM of the same size).
Eigen's column is tenex's column times tenex/Eigen measured side by side, so it compares with
tenex exactly as measured in one process. `best other` is the fastest of numpy (either form)
and Eigen, and `tenex/best` how far ahead tenex is of it (> 1: tenex faster). The summary gives
the geometric mean, minimum, 10th percentile and median of each column.

--data writes the table as whitespace-separated columns (for bench/tccg_plot.gp); --plot also
draws it as a PNG with gnuplot (Debian's gnuplot-nox).
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CASES = os.path.join(HERE, "..", "..", "shared", "bench", "tccg_public.tsv")


def run(command, threads):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stdout}{result.stderr}")
    return result.stdout


def rows(text, columns):
    """{name: [floats of the requested column indices]} from a whitespace table."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) <= max(columns) or line.startswith("#") or fields[0] in ("name", "case"):
            continue
        try:
            out[fields[0]] = [float(fields[c]) for c in columns]
        except ValueError:
            continue
    return out


def stats(values):
    values = sorted(v for v in values if v is not None)
    if not values:
        return "-"
    rank = lambda f: values[max(0, math.ceil(f * len(values)) - 1)]  # noqa: E731
    geomean = math.exp(sum(math.log(v) for v in values) / len(values))
    return f"geomean {geomean:.3f}  min {values[0]:.3f}  p10 {rank(0.1):.3f}  median {rank(0.5):.3f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="?", default=DEFAULT_CASES)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--float", action="store_true")
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--data")
    parser.add_argument("--plot")
    parser.add_argument("--no-eigen", action="store_true")
    parser.add_argument("--no-numpy", action="store_true")
    o = parser.parse_args()

    names, specs = [], {}
    with open(o.cases) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.rstrip("\n").split("\t")
            names.append(fields[0])
            specs[fields[0]] = fields[1]

    bench = os.path.join(o.build, "bench", "bench_contractions")
    args = [o.cases, "--repeat", str(o.repeat)] + (["--float"] if o.float else [])
    tenex = rows(run([bench] + args, o.threads), [3, 4, 5])  # tenex_ms, gemm_ms, ratio

    numpy = {}
    if not o.no_numpy:
        numpy_args = ["/usr/bin/python3", os.path.join(HERE, "tccg_numpy.py"), o.cases, "--repeat", str(o.repeat)]
        if o.float:
            numpy_args.append("--float")
        numpy = rows(run(numpy_args, o.threads), [5, 6])  # ratio as returned, contiguous

    eigen = {}
    eigen_binary = os.path.join(o.build, "bench", "bench_eigen_tccg")
    if not o.no_eigen and not o.float and os.path.exists(eigen_binary):
        text = run([eigen_binary, o.cases, "--repeat", str(o.repeat), "--threads", str(o.threads)], o.threads)
        for name, (tenex_ms, eigen_ms) in rows(text, [2, 3]).items():
            if name in tenex and eigen_ms > 0:
                eigen[name] = tenex[name][2] * tenex_ms / eigen_ms

    precision = "float (sgemm)" if o.float else "double (dgemm)"
    print(f"# {os.path.basename(o.cases)}, {precision}, {o.threads} thread(s), best of {o.repeat}; "
          "each column GEMM time / its time (1 = one GEMM of the same m, n, k)")
    header = f"{'name':8} {'einsum':24} {'gemm_ms':>9} {'tenex':>7} {'numpy':>7} {'np_contig':>9} {'eigen':>7} " \
             f"{'tenex/best':>10}"
    print(header)
    columns = {"tenex": [], "numpy": [], "np_contig": [], "eigen": [], "tenex/best": []}
    table = []
    for name in names:
        if name not in tenex:
            continue
        _, gemm_ms, ratio = tenex[name]
        np_view, np_contig = numpy.get(name, (None, None))
        eig = eigen.get(name)
        others = [v for v in (np_view, np_contig, eig) if v is not None]
        ahead = ratio / max(others) if others else None
        fmt = lambda v, w: f"{v:{w}.3f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
        print(f"{name:8} {specs[name]:24} {gemm_ms:9.2f} {fmt(ratio, 7)} {fmt(np_view, 7)} {fmt(np_contig, 9)} "
              f"{fmt(eig, 7)} {fmt(ahead, 10)}")
        for key, value in (("tenex", ratio), ("numpy", np_view), ("np_contig", np_contig), ("eigen", eig),
                           ("tenex/best", ahead)):
            columns[key].append(value)
        table.append((name, ratio, np_view, np_contig, eig))
    for key, values in columns.items():
        print(f"{key:10} {stats(values)}")
    behind = [n for n, r, *rest in table if any(v is not None and v > r for v in rest)]
    print(f"cases where another library is faster than tenex: {len(behind)}" +
          (f" ({', '.join(behind)})" if behind else ""))

    if o.data or o.plot:
        data = o.data or re.sub(r"\.png$", "", o.plot) + ".dat"
        with open(data, "w") as f:
            f.write("# name tenex numpy numpy_contiguous eigen (GEMM time / time; NaN: not measured)\n")
            for name, *values in table:
                f.write(name + " " + " ".join("NaN" if v is None else f"{v:.4f}" for v in values) + "\n")
        if o.plot:
            if shutil.which("gnuplot") is None:
                sys.exit(f"tccg_table.py: gnuplot not found (Debian: apt-get install gnuplot-nox); the data is in {data}")
            title = f"{os.path.basename(o.cases)}, {precision}, {o.threads} thread(s)"
            subprocess.run(["gnuplot", "-e", f"data='{data}'; out='{o.plot}'; label='{title}'",
                            os.path.join(HERE, "tccg_plot.gp")], check=True)
            print(f"plot: {o.plot}")


if __name__ == "__main__":
    main()
