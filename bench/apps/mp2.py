#!/usr/bin/python3
"""numpy twin of app_mp2 (bench/apps/mp2.cpp): the demo's MP2 stage, the same statements.

  /usr/bin/python3 bench/apps/mp2.py [--nocc 20] [--nvirt 120] [--naux 400] [--iterations 5]
"""

import math
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from app_common import options, pattern, run_and_report  # noqa: E402


def main():
    values = options("mp2.py", {"nocc": 20, "nvirt": 120, "naux": 400, "iterations": 5}, __doc__)
    o, v, q = values["nocc"], values["nvirt"], values["naux"]
    B = pattern((q, o, v), 1.0, 0.3 / math.sqrt(q))
    eo = pattern((o,), 2.0, 0.25) - 1.0
    ev = pattern((v,), 3.0, 0.25) + 0.75
    ov = float(o) * float(v)
    flops = 2.0 * q * ov * ov + 8.0 * ov * ov

    def iteration():
        D = eo[:, None, None, None] - ev[None, :, None, None] + eo[None, None, :, None] - ev[None, None, None, :]
        V = np.einsum("Qia,Qjb->iajb", B, B, optimize=True)
        T = V / D
        return np.einsum("iajb,iajb->", T, 2.0 * V - V.transpose(0, 3, 2, 1), optimize=True)

    run_and_report("mp2", values, flops, iteration)


if __name__ == "__main__":
    main()
