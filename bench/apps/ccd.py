#!/usr/bin/python3
"""numpy twin of app_ccd (bench/apps/ccd.cpp): CCD iterations, the same statements.

  /usr/bin/python3 bench/apps/ccd.py [--nocc 20] [--nvirt 100] [--iterations 10]
"""

import math
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from app_common import options, pattern, run_and_report  # noqa: E402


def main():
    values = options("ccd.py", {"nocc": 20, "nvirt": 100, "iterations": 10}, __doc__)
    o, v = values["nocc"], values["nvirt"]
    od, vd = float(o), float(v)
    Voovv = pattern((o, o, v, v), 1.0, 0.5)
    Vvvvv = pattern((v, v, v, v), 2.0, 1.0 / vd)
    Woooo = pattern((o, o, o, o), 3.0, 1.0 / od)
    Vovvo = pattern((o, v, v, o), 4.0, 0.5 / math.sqrt(od * vd))
    eo = pattern((o,), 5.0, 0.25) - 1.0
    ev = pattern((v,), 6.0, 0.25) + 0.75
    D = eo[:, None, None, None] + eo[None, :, None, None] - ev[None, None, :, None] - ev[None, None, None, :]
    quadratic = 1.0 / (od * vd)
    oo, vv = od * od, vd * vd
    flops = (2.0 * oo * vv * vv + 2.0 * oo * oo * vv + 2.0 * oo * od * vv * vd + 4.0 * oo * oo * vv +
             4.0 * oo * od * vv * vd + 14.0 * oo * vv + 4.0 * oo * vv)
    state = {"T": Voovv / D}  # the MP2 amplitudes start the iteration

    def iteration():
        T = state["T"]
        X = np.einsum("ikac,kbcj->ijab", T, Vovvo, optimize=True)
        R = (Voovv + 0.5 * np.einsum("abcd,ijcd->ijab", Vvvvv, T, optimize=True) +
             0.5 * np.einsum("klij,klab->ijab", Woooo, T, optimize=True) + X - X.transpose(1, 0, 2, 3) -
             X.transpose(0, 1, 3, 2) + X.transpose(1, 0, 3, 2) +
             quadratic * np.einsum("klcd,ijcd,klab->ijab", Voovv, T, T, optimize=True) +
             quadratic * np.einsum("ikac,klcd,ljdb->ijab", T, Voovv, T, optimize=True))
        T = R / D
        state["T"] = T
        return np.einsum("ijab,ijab->", T, 2.0 * Voovv - Voovv.transpose(0, 1, 3, 2), optimize=True)

    run_and_report("ccd", values, flops, iteration)


if __name__ == "__main__":
    main()
