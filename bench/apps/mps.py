#!/usr/bin/python3
"""numpy twin of app_mps (bench/apps/mps.cpp): an MPS environment update and a two-site
update with a gate, the same statements.

  /usr/bin/python3 bench/apps/mps.py [--bond 256] [--physical 4] [--iterations 10]
"""

import math
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from app_common import options, pattern, run_and_report  # noqa: E402


def main():
    values = options("mps.py", {"bond": 256, "physical": 4, "iterations": 10}, __doc__)
    chi, d = values["bond"], values["physical"]
    c, p = float(chi), float(d)
    A = pattern((chi, d, chi), 1.0, 1.0 / math.sqrt(c * p))
    B = pattern((chi, d, chi), 2.0, 1.0 / math.sqrt(c * p))
    G = pattern((d, d, d, d), 3.0, 1.0 / p)
    R = pattern((chi, chi), 4.0, 1.0 / math.sqrt(c))
    state = {"L": pattern((chi, chi), 5.0, 1.0 / c)}
    flops = (4.0 * c * c * c * p + 3.0 * c * c + 2.0 * c * c * c * p * p + 2.0 * c * c * p * p * p * p +
             4.0 * c * c * c * p * p + 2.0 * c * c * p * p)

    def iteration():
        M = np.einsum("ab,asx,bsy->xy", state["L"], A, A, optimize=True)
        M2 = np.einsum("ab,ab->", M, M, optimize=True)
        L = (1.0 / math.sqrt(M2)) * M
        state["L"] = L
        theta = np.einsum("asb,btc->astc", A, B, optimize=True)
        phi = np.einsum("uvst,astc->auvc", G, theta, optimize=True)
        psi = np.einsum("xa,auvc,cy->xuvy", L, phi, R, optimize=True)
        return np.einsum("xuvy,xuvy->", psi, psi, optimize=True)

    run_and_report("mps", values, flops, iteration)


if __name__ == "__main__":
    main()
