#!/usr/bin/python3
"""Writes a suite of random pairwise contractions in the TCCG table format, from a fixed seed.

    /usr/bin/python3 bench/random_cases.py [--count 200] [--seed 2026] > bench/random_cases.tsv

Each case is c = a * b with
  - operand ranks 2 to 6 (a's and b's), at least one contracted label and one free label on
    each side, so that every case is one GEMM of m (a's free extents), n (b's) and k;
  - labels in random order in a, b and the result;
  - a total of 2 m n k between 1e7 and 1e9 flops (log-uniform);
  - a shape class drawn evenly from square (m ~ n ~ k), skinny m, skinny n and skinny k (the
    skinny side between 8 and 32), so the suite covers both GEMM-friendly and thin cases;
  - the extents of a side split among its labels at random (each at least 2).
No operand or result exceeds 2^25 elements (256 MiB in double). The same seed gives the same
file on every machine (Python's random module, Mersenne Twister, is specified).
"""
import argparse
import math
import random

LETTERS = "abcdefghijklmnopqrstuvwxyz"
MAX_ELEMENTS = 1 << 25


def split_extent(rng, total, parts):
    """`parts` extents, each >= 2, whose product is close to `total`."""
    if parts == 0:
        return []
    logs = [rng.uniform(0.5, 1.5) for _ in range(parts)]
    scale = math.log(max(total, 2 ** parts)) / sum(logs)
    return [max(2, round(math.exp(x * scale))) for x in logs]


def make_case(rng, index):
    while True:
        k_modes = rng.randint(1, 3)
        a_free = rng.randint(1, 6 - k_modes)
        b_free = rng.randint(1, 6 - k_modes)
        if a_free + b_free > 6:  # keep the result's rank in the 2..6 range as well
            continue
        flops = 10 ** rng.uniform(7, 9)
        shape = rng.choice(["square", "skinny-m", "skinny-n", "skinny-k"])
        volume = flops / 2  # m n k
        if shape == "square":
            m = n = k = volume ** (1 / 3)
        else:
            thin = rng.randint(8, 32)
            wide = math.sqrt(volume / thin)
            m, n, k = {"skinny-m": (thin, wide, wide), "skinny-n": (wide, thin, wide),
                       "skinny-k": (wide, wide, thin)}[shape]
        # A skinny side cannot be split among more labels than it has factors of 2.
        if min(m, n, k) < 2 ** max(a_free, b_free, k_modes):
            continue
        labels = rng.sample(LETTERS, a_free + b_free + k_modes)
        la, lb, lk = labels[:a_free], labels[a_free:a_free + b_free], labels[a_free + b_free:]
        extent = {}
        for group, total in ((la, m), (lb, n), (lk, k)):
            for label, value in zip(group, split_extent(rng, total, len(group))):
                extent[label] = value
        size = lambda ls: math.prod(extent[x] for x in ls)  # noqa: E731
        M, N, K = size(la), size(lb), size(lk)
        gflop = 2 * M * N * K * 1e-9
        if not 0.005 <= gflop <= 2.0 or max(M * K, K * N, M * N) > MAX_ELEMENTS:
            continue
        a = la + lk
        b = lk + lb
        c = la + lb
        rng.shuffle(a)
        rng.shuffle(b)
        rng.shuffle(c)
        spec = f"{''.join(a)},{''.join(b)}->{''.join(c)}"
        extents = ",".join(f"{x}={extent[x]}" for x in sorted(extent))
        return f"rand{index:03d}\t{spec}\t{extents}\t{gflop:.3f}\t{shape}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    print(f"# {options.count} random contractions, bench/random_cases.py --count {options.count} "
          f"--seed {options.seed}")
    print("# name\teinsum\textents\tgflop\tshape")
    for index in range(options.count):
        print(make_case(rng, index))


if __name__ == "__main__":
    main()
