#!/usr/bin/env python3
"""Two-site DMRG for the spin-1/2 Heisenberg chain from Python: examples/dmrg.cpp, statement for
statement. An MPO, environments, the effective Hamiltonian as one tenex statement, tenex.eigsh
for its ground state and tenex.svd over the label groups (a,s | t,b) with a Truncation for the
new bond; then a real-time step exp(-i dt H_eff) by tenex.expm_multiply, which must keep the
norm and the energy of a locally perturbed state.

    PYTHONPATH=build-test/python /usr/bin/python3 examples/python/dmrg.py [--sites 12] [--bond 64] [--sweeps 4]

Up to 14 sites the energy is checked against exact diagonalisation (the Sz = 0 sector, numpy's
eigvalsh); exits 1 when they differ by more than 1e-9. The sweep driver takes an engine: this
file's TenexEngine, or bench/apps/dmrg_sweeps.py's numpy + opt_einsum twin (same algorithm).
"""
import argparse
import sys
import time

import numpy as np

import tenex


def heisenberg_mpo():
    """W(w, v, s, u): w the left and v the right MPO bond, s the output and u the input spin."""
    w = np.zeros((5, 5, 2, 2))
    identity = np.eye(2)
    sp, sm, sz = np.array([[0, 1], [0, 0]]), np.array([[0, 0], [1, 0]]), np.diag([0.5, -0.5])
    w[0, 0], w[1, 0], w[2, 0], w[3, 0] = identity, sp, sm, sz
    w[4, 1], w[4, 2], w[4, 3], w[4, 4] = 0.5 * sm, 0.5 * sp, sz, identity
    return w


def initial_mps(sites, bond, seed=100):
    """A random MPS, right-canonical (QR from the right), as numpy arrays."""
    rng = np.random.default_rng(seed)
    bonds = [1] + [min(2 ** min(i, 30), 2 ** min(sites - i, 30), bond) for i in range(1, sites)] + [1]
    mps = [rng.uniform(-1, 1, (bonds[i], 2, bonds[i + 1])) for i in range(sites)]
    for i in range(sites - 1, 0, -1):
        a, s, b = mps[i].shape
        q, r = np.linalg.qr(mps[i].reshape(a, s * b).T)
        mps[i] = q.T.reshape(-1, s, b)
        mps[i - 1] = np.einsum("xta,ka->xtk", mps[i - 1], r)
    return mps


class TenexEngine:
    """DMRG's steps as tenex statements."""

    name = "tenex"

    def tensor(self, array):
        return tenex.Tensor(np.ascontiguousarray(array))

    def array(self, t):
        return np.asarray(t)

    def theta(self, a, b):
        t = tenex.Tensor()
        t["a,s,t,b"] = a["a,s,c"] * b["c,t,b"]
        return t

    def ground_state(self, left, w, right, theta, tol):
        def h_eff(x, y):
            y["a,s,t,b"] = left["a,w,c"] * w["w,v,s,u"] * w["v,z,t,r"] * x["c,u,r,d"] * right["b,z,d"]

        values, vectors = tenex.eigsh(h_eff, theta, k=1, which="smallest", tol=tol)
        return values[0], vectors[0]

    def split(self, theta, bond, cutoff, rightwards):
        u, s, vt = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
        truncation = tenex.Truncation(max_rank=bond, cutoff=cutoff)
        u["a,s,k"], s["k"], vt["k,t,b"] = tenex.svd(theta["a,s,t,b"], "a,s", truncation=truncation)
        moved = tenex.Tensor()
        if rightwards:
            moved["k,t,b"] = s["k"] * vt["k,t,b"]
            return u, moved
        moved["a,s,k"] = u["a,s,k"] * s["k"]
        return moved, vt

    def left_environment(self, left, a, w):
        out = tenex.Tensor()
        out["b,w,d"] = left["a,v,c"] * a["a,s,b"] * w["v,w,s,u"] * a["c,u,d"]
        return out

    def right_environment(self, right, b, w):
        out = tenex.Tensor()
        out["a,w,c"] = b["a,s,b"] * w["w,v,s,u"] * right["b,v,d"] * b["c,u,d"]
        return out


def run_dmrg(engine, sites, bond, sweeps, tol=1e-12, cutoff=1e-14, report=print):
    """Two-site DMRG sweeps (left to right and back): the final energy, the sweeps' times, and the
    state (the MPS, environments and MPO as the engine's tensors)."""
    w = engine.tensor(heisenberg_mpo())
    mps = [engine.tensor(a) for a in initial_mps(sites, bond)]
    boundary_left, boundary_right = np.zeros((1, 5, 1)), np.zeros((1, 5, 1))
    boundary_left[0, 4, 0] = boundary_right[0, 0, 0] = 1.0
    left = [engine.tensor(boundary_left)] + [None] * (sites - 1)
    right = [None] * (sites - 1) + [engine.tensor(boundary_right)]
    for i in range(sites - 1, 0, -1):
        right[i - 1] = engine.right_environment(right[i], mps[i], w)

    def update(i, rightwards):
        energy, theta = engine.ground_state(left[i], w, right[i + 1], engine.theta(mps[i], mps[i + 1]), tol)
        mps[i], mps[i + 1] = engine.split(theta, bond, cutoff, rightwards)
        if rightwards:
            left[i + 1] = engine.left_environment(left[i], mps[i], w)
        else:
            right[i] = engine.right_environment(right[i + 1], mps[i + 1], w)
        return energy

    times, energy = [], 0.0
    for sweep in range(sweeps):
        start = time.perf_counter()
        for i in range(sites - 1):
            energy = update(i, True)
        for i in range(sites - 2, -1, -1):
            energy = update(i, False)
        times.append(time.perf_counter() - start)
        report(f"sweep {sweep + 1}: E = {energy:.12f}  ({times[-1]:.3f} s)")
    return energy, times, (mps, left, right, w)


def exact_energy(sites):
    """The ground-state energy by exact diagonalisation in the Sz = 0 sector."""
    states = [b for b in range(1 << sites) if bin(b).count("1") * 2 == sites]
    index = {b: k for k, b in enumerate(states)}
    h = np.zeros((len(states), len(states)))
    for k, b in enumerate(states):
        for i in range(sites - 1):
            up_i, up_j = (b >> i) & 1, (b >> (i + 1)) & 1
            h[k, k] += 0.25 if up_i == up_j else -0.25
            if up_i != up_j:
                h[index[b ^ (3 << i)], k] += 0.5
    return np.linalg.eigvalsh(h)[0]


def real_time_step(state, center, dt=0.05, steps=4):
    """exp(-i dt H_eff) applied `steps` times to the ground state at bond (center, center + 1) with
    its left spin flipped by S+ + S-: the largest drift of the norm and of <H_eff>."""
    mps, left, right, w = state
    as_complex = [tenex.Tensor(np.asarray(t).astype(np.complex128)) for t in (left[center], w, right[center + 1])]
    l, wc, r = as_complex
    theta = tenex.Tensor()
    theta["a,s,t,b"] = mps[center]["a,s,c"] * mps[center + 1]["c,t,b"]
    flip = np.array([[0, 1], [1, 0]], dtype=np.complex128)
    phi = np.einsum("su,autb->astb", flip, np.asarray(theta).astype(np.complex128))
    phi = tenex.Tensor(phi / np.linalg.norm(phi))

    def h_eff(x, y):
        y["a,s,t,b"] = l["a,w,c"] * wc["w,v,s,u"] * wc["v,z,t,r"] * x["c,u,r,d"] * r["b,z,d"]

    def energy(x):
        y = tenex.Tensor(np.zeros_like(np.asarray(x)))
        h_eff(x, y)
        return np.vdot(np.asarray(x), np.asarray(y)).real

    start_energy, drift = energy(phi), 0.0
    for _ in range(steps):
        phi = tenex.expm_multiply(h_eff, phi, -1j * dt)
        drift = max(drift, abs(np.linalg.norm(np.asarray(phi)) - 1), abs(energy(phi) - start_energy))
    return drift


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=12)
    parser.add_argument("--bond", type=int, default=64)
    parser.add_argument("--sweeps", type=int, default=4)
    args = parser.parse_args()
    energy, _, state = run_dmrg(TenexEngine(), args.sites, args.bond, args.sweeps)
    print(f"DMRG: {args.sites} sites, bond {args.bond}: E0 = {energy:.12f}")
    status = 0
    drift = real_time_step(state, args.sites // 2 - 1)
    print(f"exp(-i dt H_eff), 4 steps: norm and energy drift {drift:.1e}")
    if drift > 1e-9:
        status = 1
    if args.sites <= 14 and args.sites % 2 == 0:
        exact = exact_energy(args.sites)
        print(f"exact diagonalisation: E0 = {exact:.12f} (|dE| = {abs(exact - energy):.1e})")
        if abs(exact - energy) > 1e-9:
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
