#!/usr/bin/python3
"""Two-site DMRG sweeps, side by side: tenex's Python example (examples/python/dmrg.py), the same
algorithm on numpy + opt_einsum (this file's NumpyEngine: opt_einsum.contract with its path
cached per shape, numpy's own thick-restart Lanczos, numpy.linalg.svd with the same truncation
rule), and the C++ example (examples/dmrg.cpp). Each runs in a fresh process; the table gives the
first sweep (cold), the median of the later ones (steady), the energies and numpy / tenex.

  PYTHONPATH=build/python:../shared/peers /usr/bin/python3 bench/apps/dmrg_sweeps.py \\
      [--sites 40] [--bond 128] [--sweeps 4] [--cpp build/examples/dmrg]
  ... dmrg_sweeps.py --engine numpy|tenex ...   # one engine in this process (what the table runs)
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent.parent / "examples" / "python" / "dmrg.py"


def example():
    """examples/python/dmrg.py as a module (bench/apps/dmrg.py is another program of that name)."""
    spec = importlib.util.spec_from_file_location("dmrg_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

try:  # opt_einsum where it is on the path (PYTHONPATH=../shared/peers), as a physicist runs it
    import opt_einsum
except ImportError:  # pragma: no cover - the table says which ran
    opt_einsum = None


def contract(subscripts, *operands, _paths={}):
    """opt_einsum.contract with the path of each (subscripts, shapes) found once."""
    if opt_einsum is None:
        return np.einsum(subscripts, *operands, optimize=True)
    key = (subscripts,) + tuple(o.shape for o in operands)
    expression = _paths.get(key)
    if expression is None:
        expression = _paths[key] = opt_einsum.contract_expression(subscripts, *(o.shape for o in operands))
    return expression(*operands)


def lanczos(matvec, x0, tol, krylov_dim=30):
    """The smallest eigenpair of a symmetric operator: thick-restart Lanczos with full (twice
    classical Gram-Schmidt) reorthogonalization that stops as soon as the residual meets
    tol * max(1, |w|), as tenex::eigsh does (src/tenex/solvers/lanczos.cpp)."""
    n = x0.size
    m = min(n, krylov_dim)
    basis = np.zeros((m, n))
    basis[0] = x0.ravel() / np.linalg.norm(x0)
    projected = np.zeros((m, m))
    size = 1
    while True:
        for j in range(size - 1, m):
            w = matvec(basis[j].reshape(x0.shape)).ravel()
            c = basis[: j + 1] @ w
            w -= basis[: j + 1].T @ c
            c2 = basis[: j + 1] @ w
            w -= basis[: j + 1].T @ c2
            projected[j, j] = c[j] + c2[j]
            beta = np.linalg.norm(w)
            values, vectors = np.linalg.eigh(projected[: j + 1, : j + 1])
            residual = beta * abs(vectors[-1, 0])
            if residual <= tol * max(1.0, abs(values[0])) or j + 1 == m:
                break
            projected[j + 1, j] = projected[j, j + 1] = beta
            basis[j + 1] = w / beta
        if residual <= tol * max(1.0, abs(values[0])):
            return values[0], (vectors[:, 0] @ basis[: j + 1]).reshape(x0.shape)
        keep = 1 + (m - 1) // 2  # k + (m - k) / 2 Ritz vectors, the residual after them
        kept = vectors[:, :keep].T @ basis[: j + 1]
        projected[:] = 0
        projected[np.arange(keep), np.arange(keep)] = values[:keep]
        projected[keep, :keep] = projected[:keep, keep] = beta * vectors[-1, :keep]
        basis[:keep] = kept
        basis[keep] = w / beta
        size = keep + 1


class NumpyEngine:
    """DMRG's steps on numpy arrays: opt_einsum, the Lanczos above, numpy.linalg.svd."""

    name = "numpy"

    def tensor(self, array):
        return np.ascontiguousarray(array)

    def array(self, t):
        return t

    def theta(self, a, b):
        return contract("asc,ctb->astb", a, b)

    def ground_state(self, left, w, right, theta, tol):
        def h_eff(x):
            return contract("awc,wvsu,vztr,curd,bzd->astb", left, w, w, x, right)

        return lanczos(h_eff, theta, tol)

    def split(self, theta, bond, cutoff, rightwards):
        a, s, t, b = theta.shape
        u, values, vt = np.linalg.svd(theta.reshape(a * s, t * b), full_matrices=False)
        squares = values**2
        dropped = np.cumsum(squares[::-1])  # the weight of the d smallest, d = 1, 2, ...
        droppable = int(np.searchsorted(dropped, cutoff * squares.sum(), side="right"))
        k = max(1, min(bond, len(values) - droppable))
        u, values, vt = u[:, :k].reshape(a, s, k), values[:k], vt[:k].reshape(k, t, b)
        if rightwards:
            return u, values[:, None, None] * vt
        return u * values, vt

    def left_environment(self, left, a, w):
        return contract("avc,asb,vwsu,cud->bwd", left, a, w, a)

    def right_environment(self, right, b, w):
        return contract("asb,wvsu,bvd,cud->awc", b, w, right, b)


def one_engine(args):
    dmrg = example()
    engine = NumpyEngine() if args.engine == "numpy" else dmrg.TenexEngine()
    energy, times, _ = dmrg.run_dmrg(engine, args.sites, args.bond, args.sweeps, report=lambda line: None)
    for t in times:
        print(f"sweep {t:.6f}")
    print(f"energy {energy:.15f}")


def run(command):
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"dmrg_sweeps.py: {' '.join(command)} failed:\n{done.stderr}")
    return done.stdout


def parse(output):
    times = [float(line.split()[1]) for line in output.splitlines() if line.startswith("sweep ")]
    energy = [float(line.split()[1]) for line in output.splitlines() if line.startswith("energy ")]
    return times, energy[0] if energy else None


def parse_cpp(output):
    times, energy = [], None
    for line in output.splitlines():
        if line.startswith("sweep "):
            times.append(float(line.split("(")[1].split(" s")[0]))
        if line.startswith("DMRG:"):
            energy = float(line.split("E0 = ")[1])
    return times, energy


def table(args):
    size = ["--sites", str(args.sites), "--bond", str(args.bond), "--sweeps", str(args.sweeps)]
    rows = {}
    for engine in ("tenex", "numpy"):
        rows[engine] = parse(run([sys.executable, __file__, "--engine", engine] + size))
    if args.cpp:
        rows["C++"] = parse_cpp(run([args.cpp] + size))
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    print(f"two-site DMRG, {args.sites} sites, bond {args.bond}, {args.sweeps} sweeps, {threads} threads "
          f"(opt_einsum: {'yes' if opt_einsum else 'no, numpy.einsum'})")
    print(f"{'':8} {'cold s':>9} {'steady s':>9} {'total s':>9}  energy")
    numpy_times = rows["numpy"][0]
    for name, (times, energy) in rows.items():
        steady = statistics.median(times[1:]) if len(times) > 1 else float("nan")
        print(f"{name:8} {times[0]:9.3f} {steady:9.3f} {sum(times):9.3f}  {energy:.12f}")
    for name in ("tenex", "C++"):
        if name in rows:
            times = rows[name][0]
            print(f"numpy / {name}: cold {numpy_times[0] / times[0]:.2f}x, steady "
                  f"{statistics.median(numpy_times[1:]) / statistics.median(times[1:]):.2f}x, total "
                  f"{sum(numpy_times) / sum(times):.2f}x; |dE| = {abs(rows[name][1] - rows['numpy'][1]):.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=40)
    parser.add_argument("--bond", type=int, default=128)
    parser.add_argument("--sweeps", type=int, default=4)
    parser.add_argument("--engine", choices=("numpy", "tenex"))
    parser.add_argument("--cpp", help="the C++ example (build/examples/dmrg)")
    args = parser.parse_args()
    if args.engine:
        one_engine(args)
    else:
        table(args)


if __name__ == "__main__":
    main()
