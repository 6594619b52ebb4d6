#!/usr/bin/python3
"""Contraction orders of tensor networks: tenex.contract_path against opt_einsum and cotengra.

    PYTHONPATH=build-test/python /usr/bin/python3 bench/networks/networks.py \
        [--quick] [--cases random,mps,peps,circuit] [--no-cotengra] [--no-contract] [--hyper SECONDS]

For each network it prints the number of tensors and the log2 of the flops (opt_einsum's
opt_cost, every path scored by opt_einsum.contract_path) of the path found by
  tenex         tenex.contract_path(eq, *shapes, shapes=True) (optimize="auto")
  greedy        opt_einsum's "greedy"
  rgreedy       opt_einsum.RandomGreedy(max_repeats=32)
  cotengra      cotengra.HyperOptimizer(methods=["greedy"], max_repeats=64, optlib="random")
and the search time of each. Networks (README.md): opt_einsum's random networks
rand_equation(n, 3, seed, d_max=2) and the published rand_equation(40, 5, seed=1, d_max=2); the
norms <psi|psi> of open MPS and of square PEPS; amplitudes <0|U|0> of random brick-wall circuits.
For the networks that fit in memory it also times the contraction itself, tenex.einsum against
opt_einsum.contract on numpy with cotengra's path (random-greedy's with --no-cotengra), cold
(the first call) and steady (best of 3), and checks that the values agree (relative 1e-8).
The last lines are a markdown table of the same figures (docs/networks.md).
The peers come from ../shared/peers (beside the repository).
"""
import argparse
import math
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PEERS = ROOT.parent / "shared" / "peers"
if PEERS.is_dir():
    sys.path.insert(0, str(PEERS))

import numpy as np  # noqa: E402
import opt_einsum as oe  # noqa: E402
from opt_einsum.testing import rand_equation  # noqa: E402


def import_tenex():
    try:
        import tenex
    except ImportError:
        for build in ("build-test", "build"):
            path = ROOT / build / "python"
            if (path / "tenex").is_dir():
                sys.path.insert(0, str(path))
                break
        import tenex
    return tenex


tenex = import_tenex()


class Network:
    """One contraction: its equation, the shapes, and how to make arrays for it."""

    def __init__(self, name, terms, output, size, contract=False, dtype=np.float64, arrays=None):
        self.name = name
        self.terms = terms            # per tensor, a list of symbols
        self.output = output
        self.size = size              # symbol -> extent
        self.contract = contract      # also time the contraction itself
        self.dtype = dtype
        self.make_arrays = arrays     # None: uniform random of dtype

    @property
    def eq(self):
        return ",".join("".join(t) for t in self.terms) + "->" + "".join(self.output)

    @property
    def shapes(self):
        return [tuple(self.size[s] for s in t) for t in self.terms]

    def arrays(self, rng):
        if self.make_arrays is not None:
            return self.make_arrays(rng)
        out = []
        for shape in self.shapes:
            a = rng.uniform(-1, 1, shape)
            if np.issubdtype(self.dtype, np.complexfloating):
                a = a + 1j * rng.uniform(-1, 1, shape)
            out.append(a.astype(self.dtype))
        return out


class Symbols:
    def __init__(self):
        self.next = 0

    def __call__(self):
        s = oe.get_symbol(self.next)
        self.next += 1
        return s


def random_network(n, reg, seed):
    eq, shapes = rand_equation(n, reg, seed=seed, d_max=2)
    inputs, output = eq.split("->")
    terms = [list(t) for t in inputs.split(",")]
    size = {s: d for t, sh in zip(terms, shapes) for s, d in zip(t, sh)}
    name = f"rand_equation({n}, {reg}, seed={seed})"
    return Network(name, terms, list(output), size)


def mps_norm(sites, physical=2, bond=16, contract=False):
    """<psi|psi> of an open MPS: ket A[k](l, p, r), bra the same with its own bonds, p shared."""
    sym = Symbols()
    size = {}

    def new(extent):
        s = sym()
        size[s] = extent
        return s

    phys = [new(physical) for _ in range(sites)]
    ket_bonds = [new(bond) for _ in range(sites - 1)]
    bra_bonds = [new(bond) for _ in range(sites - 1)]
    terms = []
    for bonds in (ket_bonds, bra_bonds):
        for k in range(sites):
            t = ([bonds[k - 1]] if k > 0 else []) + [phys[k]] + ([bonds[k]] if k < sites - 1 else [])
            terms.append(t)
    return Network(f"MPS {sites} sites, bond {bond}", terms, [], size, contract=contract)


def peps_norm(side, bond, physical=2, contract=False):
    """<psi|psi> of a square side x side PEPS: ket and bra layers, the physical index summed."""
    sym = Symbols()
    size = {}

    def new(extent):
        s = sym()
        size[s] = extent
        return s

    phys = {(i, j): new(physical) for i in range(side) for j in range(side)}
    terms = []
    for _layer in range(2):
        horizontal = {(i, j): new(bond) for i in range(side) for j in range(side - 1)}  # (i,j)-(i,j+1)
        vertical = {(i, j): new(bond) for i in range(side - 1) for j in range(side)}    # (i,j)-(i+1,j)
        for i in range(side):
            for j in range(side):
                t = [phys[i, j]]
                if j > 0:
                    t.append(horizontal[i, j - 1])
                if j < side - 1:
                    t.append(horizontal[i, j])
                if i > 0:
                    t.append(vertical[i - 1, j])
                if i < side - 1:
                    t.append(vertical[i, j])
                terms.append(t)
    return Network(f"PEPS {side}x{side}, bond {bond}", terms, [], size, contract=contract)


def random_unitary(rng, n):
    z = (rng.normal(size=(n, n)) + 1j * rng.normal(size=(n, n))) / math.sqrt(2)
    q, r = np.linalg.qr(z)
    return q * (np.diag(r) / abs(np.diag(r)))


def circuit_amplitude(qubits, depth, seed=0, contract=False):
    """<0|U|0> of a random brick-wall circuit: layer t applies random 2-qubit gates (rank-4
    tensors, out_a out_b in_a in_b) to the pairs (q, q+1) with q = t mod 2, 4, ...; the |0>
    and <0| vectors are rank-1 tensors."""
    sym = Symbols()
    size = {}

    def new():
        s = sym()
        size[s] = 2
        return s

    wire = [new() for _ in range(qubits)]
    terms = [[w] for w in wire]  # |0> on every qubit
    kinds = ["zero"] * qubits
    for t in range(depth):
        for q in range(t % 2, qubits - 1, 2):
            a, b = new(), new()
            terms.append([a, b, wire[q], wire[q + 1]])
            kinds.append("gate")
            wire[q], wire[q + 1] = a, b
    terms += [[w] for w in wire]  # <0| on every qubit
    kinds += ["zero"] * qubits

    def arrays(rng):
        zero = np.array([1.0, 0.0], dtype=np.complex128)
        return [zero if k == "zero" else random_unitary(rng, 4).reshape(2, 2, 2, 2) for k in kinds]

    return Network(f"circuit {qubits} qubits, depth {depth}", terms, [], size, contract=contract,
                   dtype=np.complex128, arrays=arrays)


def cases(kinds, quick):
    out = []
    if "random" in kinds:
        if quick:
            out += [random_network(10, 3, 1), random_network(20, 3, 1)]
        else:
            out += [random_network(n, 3, s) for n in (10, 20, 40, 60, 100, 200) for s in range(1, 6)]
        net = random_network(40, 5, 1)
        net.name = "rand_equation(40, 5, seed=1) (published)"
        out.append(net)
    if "mps" in kinds:
        out.append(mps_norm(100, contract=True))
        if not quick:
            out += [mps_norm(200), mps_norm(400)]
    if "peps" in kinds:
        if quick:
            out.append(peps_norm(4, 2))
        else:
            for side in range(4, 9):
                for bond in range(2, 6):
                    out.append(peps_norm(side, bond, contract=(side, bond) == (5, 3)))
    if "circuit" in kinds:
        if quick:
            out.append(circuit_amplitude(20, 8))
        else:
            out += [circuit_amplitude(20, 8), circuit_amplitude(24, 10, contract=True), circuit_amplitude(30, 10),
                    circuit_amplitude(40, 12), circuit_amplitude(50, 12), circuit_amplitude(60, 12)]
    return out


def opt_cost(eq, shapes, path):
    return float(oe.contract_path(eq, *shapes, shapes=True, optimize=path)[1].opt_cost)


def log2(x):
    return math.log2(x) if x > 0 else float("-inf")


def search(net, use_cotengra, hyper_seconds=None):
    """Each optimizer's path, its log2 flops (opt_einsum's scoring) and its search time."""
    eq, shapes = net.eq, net.shapes
    found = {}
    t = time.perf_counter()
    path, info = tenex.contract_path(eq, *shapes, shapes=True)
    seconds = time.perf_counter() - t
    cost = opt_cost(eq, shapes, path)
    if abs(cost - info.opt_cost) > 1e-9 * cost:
        print(f"  note: tenex's opt_cost {info.opt_cost:.6e} differs from opt_einsum's scoring {cost:.6e}")
    found["tenex"] = (path, log2(cost), seconds, info.method)
    if hyper_seconds is not None:
        t = time.perf_counter()
        path, info = tenex.contract_path(eq, *shapes, shapes=True, optimize="hyper", seconds=hyper_seconds)
        found["hyper"] = (path, log2(opt_cost(eq, shapes, path)), time.perf_counter() - t, info.method)

    t = time.perf_counter()
    path = oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")[0]
    found["greedy"] = (path, log2(opt_cost(eq, shapes, path)), time.perf_counter() - t, "")

    t = time.perf_counter()
    path = oe.contract_path(eq, *shapes, shapes=True, optimize=oe.RandomGreedy(max_repeats=32))[0]
    found["rgreedy"] = (path, log2(opt_cost(eq, shapes, path)), time.perf_counter() - t, "")

    if use_cotengra:
        import cotengra as ctg

        inputs = ["".join(term) for term in net.terms]
        t = time.perf_counter()
        tree = ctg.HyperOptimizer(methods=["greedy"], max_repeats=64, optlib="random", progbar=False).search(
            inputs, "".join(net.output), net.size)
        seconds = time.perf_counter() - t
        path = tree.get_path()
        found["cotengra"] = (path, log2(opt_cost(eq, shapes, path)), seconds, "")
    return found


def best_of(fn, repeat):
    best = float("inf")
    value = None
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t)
    return best, value


def contract(net, path, rng):
    """tenex.einsum against opt_einsum.contract on numpy with `path`: cold, steady, agreement."""
    arrays = net.arrays(rng)
    eq = net.eq
    cold_tenex, value_tenex = best_of(lambda: tenex.einsum(eq, *arrays), 1)
    steady_tenex, _ = best_of(lambda: tenex.einsum(eq, *arrays), 3)
    cold_oe, value_oe = best_of(lambda: oe.contract(eq, *arrays, optimize=path), 1)
    steady_oe, _ = best_of(lambda: oe.contract(eq, *arrays, optimize=path), 3)
    difference = abs(complex(value_tenex) - complex(value_oe)) / max(abs(complex(value_oe)), 1e-300)
    return cold_tenex, steady_tenex, cold_oe, steady_oe, difference


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few small cases (a smoke run)")
    parser.add_argument("--cases", default="random,mps,peps,circuit",
                        help="comma-separated: random, mps, peps, circuit")
    parser.add_argument("--no-cotengra", action="store_true", help="leave cotengra out")
    parser.add_argument("--no-contract", action="store_true", help="search only: time no contraction")
    parser.add_argument("--hyper", type=float, metavar="SECONDS",
                        help='also tenex.contract_path(optimize="hyper", seconds=SECONDS), column "hyper"')
    args = parser.parse_args()
    kinds = set(args.cases.split(","))
    unknown = kinds - {"random", "mps", "peps", "circuit"}
    if unknown:
        parser.error(f"unknown --cases {sorted(unknown)}; the choices are random, mps, peps, circuit")
    use_cotengra = not args.no_cotengra
    names = ["tenex"] + (["hyper"] if args.hyper is not None else []) + ["greedy", "rgreedy"]
    names += ["cotengra"] if use_cotengra else []

    threads = os.environ.get("OMP_NUM_THREADS", "(OpenMP's default: %d cores)" % os.cpu_count())
    print(f"# threads: OMP_NUM_THREADS={threads} (tenex and numpy's OpenBLAS alike)")
    header = f"{'case':<44} {'n':>4} " + " ".join(f"{k:>9}" for k in names) + "   search s: " + " ".join(
        f"{k:>8}" for k in names) + "  tenex method"
    print(header)
    rows, timings = [], []
    rng = np.random.default_rng(7)
    for net in cases(kinds, args.quick):
        found = search(net, use_cotengra, args.hyper)
        costs = " ".join(f"{found[k][1]:9.2f}" for k in names)
        seconds = " ".join(f"{found[k][2]:8.3f}" for k in names)
        print(f"{net.name:<44} {len(net.terms):>4} {costs}   search s: {seconds}  {found['tenex'][3]}", flush=True)
        rows.append((net, found))
        if net.contract and not args.no_contract:
            path = found["cotengra" if use_cotengra else "rgreedy"][0]
            try:
                result = contract(net, path, rng)
            except Exception as error:  # reported, and the other networks still run
                print(f"  contraction failed: {type(error).__name__}: {str(error)[:300]}", flush=True)
                timings.append((net, (math.nan,) * 4 + (math.inf,)))
                continue
            timings.append((net, result))
            cold_t, steady_t, cold_o, steady_o, diff = result
            print(f"  contraction: tenex cold {cold_t:.3f} s, steady {steady_t:.3f} s; opt_einsum+numpy cold "
                  f"{cold_o:.3f} s, steady {steady_o:.3f} s; relative difference {diff:.1e}"
                  + ("" if diff <= 1e-8 else "  ** VALUES DISAGREE **"), flush=True)

    peers = [k for k in names if k not in ("tenex", "hyper")]
    worse = [(net.name, k) for net, found in rows for k in peers if found["tenex"][1] > found[k][1] + 1e-9]
    print()
    print("| network | tensors | " + " | ".join(f"{k} log2 flops" for k in names) + " | "
          + " | ".join(f"{k} s" for k in names) + " |")
    print("|---|---:|" + "---:|" * (2 * len(names)))
    for net, found in rows:
        print(f"| {net.name} | {len(net.terms)} | " + " | ".join(f"{found[k][1]:.2f}" for k in names) + " | "
              + " | ".join(f"{found[k][2]:.3f}" for k in names) + " |")
    if timings:
        reference = "cotengra's path" if use_cotengra else "random-greedy's path"
        print()
        print(f"| network | tenex cold s | tenex steady s | opt_einsum+numpy ({reference}) cold s | steady s "
              "| relative difference |")
        print("|---|---:|---:|---:|---:|---:|")
        for net, (cold_t, steady_t, cold_o, steady_o, diff) in timings:
            print(f"| {net.name} | {cold_t:.3f} | {steady_t:.3f} | {cold_o:.3f} | {steady_o:.3f} | {diff:.1e} |")
    print()
    if worse:
        print("tenex's path costs more than a peer's on: " + "; ".join(f"{n} ({k})" for n, k in worse))
    else:
        print("tenex's path costs no more than any peer's on every network")
    disagree = [net.name for net, r in timings if not r[4] <= 1e-8]
    if disagree:
        print("values disagree on: " + ", ".join(disagree))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
