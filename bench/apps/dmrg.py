#!/usr/bin/python3
"""numpy twin of app_dmrg (bench/apps/dmrg.cpp): two-site DMRG of the Heisenberg chain, the same
steps (Lanczos of m steps, truncated SVD, environments), each contraction by opt_einsum where it
is on the path (PYTHONPATH=../shared/peers), else numpy.einsum with optimize=True.

  /usr/bin/python3 bench/apps/dmrg.py [--sites 20] [--bond 64] [--lanczos 4] [--iterations 3]
"""

import math
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from app_common import options, pattern, run_and_report  # noqa: E402


try:  # opt_einsum where it is on the path (PYTHONPATH=../shared/peers), as a physicist runs it
    import opt_einsum

    def einsum(subscripts, *operands):
        return opt_einsum.contract(subscripts, *operands)
except ImportError:
    def einsum(subscripts, *operands):
        return np.einsum(subscripts, *operands, optimize=True)


def heisenberg_mpo():
    w = np.zeros((5, 5, 2, 2))
    w[0, 0] = [[1, 0], [0, 1]]
    w[1, 0] = [[0, 1], [0, 0]]
    w[2, 0] = [[0, 0], [1, 0]]
    w[3, 0] = [[0.5, 0], [0, -0.5]]
    w[4, 1] = [[0, 0], [0.5, 0]]
    w[4, 2] = [[0, 0.5], [0, 0]]
    w[4, 3] = [[0.5, 0], [0, -0.5]]
    w[4, 4] = [[1, 0], [0, 1]]
    return w


class Chain:
    def __init__(self, n, chi, m):
        self.n, self.chi, self.m = n, chi, m
        self.w = heisenberg_mpo()
        dims = [1] + [min(2 ** min(i, 20), 2 ** min(n - i, 20), chi) for i in range(1, n)] + [1]
        self.a = [pattern((dims[i], 2, dims[i + 1]), 1.0 + i, 0.5) for i in range(n)]
        for i in range(n - 1, 0, -1):  # right-canonical: QR of each site's transpose
            l, r = self.a[i].shape[0], self.a[i].shape[2]
            q, rr = np.linalg.qr(self.a[i].reshape(l, 2 * r).T)
            self.a[i] = q.T.reshape(q.shape[1], 2, r)
            self.a[i - 1] = einsum("asl,kl->ask", self.a[i - 1], rr)
        self.left = [None] * (n + 1)
        self.right = [None] * (n + 1)
        self.left[0] = np.zeros((1, 5, 1))
        self.left[0][0, 4, 0] = 1.0
        self.right[n] = np.zeros((1, 5, 1))
        self.right[n][0, 0, 0] = 1.0
        for i in range(n - 1, 0, -1):
            self.grow_right(i)
        self.energy = 0.0

    def grow_left(self, i):
        self.left[i + 1] = einsum("awx,asb,wvsp,xpy->bvy", self.left[i], self.a[i], self.w, self.a[i])

    def grow_right(self, i):
        self.right[i] = einsum("asb,wvsp,xpy,bvy->awx", self.a[i], self.w, self.a[i], self.right[i + 1])

    def apply(self, i, theta):
        return einsum("awx,wvsp,vutq,cuz,xpqz->astc", self.left[i], self.w, self.w, self.right[i + 2], theta)

    def ground_state(self, i, theta):
        v = [theta / math.sqrt(einsum("astc,astc->", theta, theta))]
        alpha, beta = [], []
        for j in range(self.m):
            y = self.apply(i, v[j])
            alpha.append(float(einsum("astc,astc->", y, v[j])))
            r = y - alpha[j] * v[j]
            if j > 0:
                r = r - beta[j - 1] * v[j - 1]
            b = math.sqrt(einsum("astc,astc->", r, r))
            if j + 1 == self.m or b < 1e-12:
                break
            beta.append(b)
            v.append((1.0 / b) * r)
        m = len(alpha)
        tri = np.diag(alpha) + np.diag(beta[:m - 1], 1) + np.diag(beta[:m - 1], -1)
        values, vectors = np.linalg.eigh(tri)
        self.energy = float(values[0])
        return sum(vectors[j, 0] * v[j] for j in range(m))

    def update(self, i, to_right):
        theta = einsum("asb,btc->astc", self.a[i], self.a[i + 1])
        psi = self.ground_state(i, theta)
        l, r = psi.shape[0], psi.shape[3]
        u, s, vt = np.linalg.svd(psi.reshape(2 * l, 2 * r), full_matrices=False)
        k = min(self.chi, len(s))
        u, s, vt = u[:, :k], s[:k], vt[:k]
        if to_right:
            self.a[i] = u.reshape(l, 2, k)
            self.a[i + 1] = (s[:, None] * vt).reshape(k, 2, r)
            self.grow_left(i)
        else:
            self.a[i] = (u * s[None, :]).reshape(l, 2, k)
            self.a[i + 1] = vt.reshape(k, 2, r)
            self.grow_right(i + 1)

    def sweep(self):
        for i in range(self.n - 1):
            self.update(i, True)
        for i in range(self.n - 2, -1, -1):
            self.update(i, False)
        return self.energy


def main():
    values = options("dmrg.py", {"sites": 20, "bond": 64, "lanczos": 4, "iterations": 3}, __doc__)
    chain = Chain(values["sites"], values["bond"], values["lanczos"])
    chi, n = float(values["bond"]), float(values["sites"])
    flops = 2.0 * n * values["lanczos"] * 8.0 * chi ** 3 * 2.0 * 5.0 * 2.0
    run_and_report("dmrg", values, flops, chain.sweep)


if __name__ == "__main__":
    main()
