"""tenex.contract_path against opt_einsum (its test equations and its random networks), and
tenex.einsum's interleaved form and labels beyond the 52 letters against numpy.einsum."""
import math
import pathlib
import sys

import numpy as np
import pytest

import tenex

# The peers (docs: ../shared/peers/README.md) sit beside the repository; CI has them there too.
PEERS = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "peers"
if PEERS.is_dir() and str(PEERS) not in sys.path:
    sys.path.insert(0, str(PEERS))
try:
    import opt_einsum as oe
    from opt_einsum.testing import rand_equation
except ImportError:  # pragma: no cover - only where the peers are missing
    oe = None
needs_opt_einsum = pytest.mark.skipif(oe is None, reason=f"opt_einsum not found (looked in {PEERS})")

# Equations of opt_einsum's own test suite (tests/test_contract.py), and its extents.
OE_EQUATIONS = [
    "a,ab,abc->abc",
    "a,b,ab->ab",
    "ea,fb,gc,hd,abcd->efgh",
    "ea,fb,abcd,gc,hd->efgh",
    "abcd,ea,fb,gc,hd->efgh",
    "acdf,jbje,gihb,hfac,gfac,gifabc,hfac",
    "cd,bdhe,aidb,hgca,gc,hgibcd,hgac",
    "abhe,hidj,jgba,hiab,gab",
    "bde,cdh,agdb,hica,ibd,hgicd,hiac",
    "chd,bde,agbc,hiad,hgc,hgi,hiad",
    "chd,bde,agbc,hiad,bdi,cgh,agdb",
    "bdhe,acad,hiab,agac,hibd",
    "ab,ab,c->",
    "ab,ab,cd,cd->ac",
    "ab,ab,cd,cd,ef,ef->",
    "ab,cd,ef->abcdef",
    "ab,cd,de->be",
    "ab,bcd,cd->abd",
    "eb,cb,fb->cef",
    "dd,fb,be,cdb->cef",
    "bca,cdb,dbf,afc->",
    "dcc,fce,ea,dbf->ab",
    "fdf,cdd,ccd,afe->ae",
    "abcd,ad",
    "ed,fcd,ff,bcf->be",
    "baa,dcf,af,cde->be",
    "fff,fae,bef,def->abd",
    "efc,dbc,acf,fd->abe",
    "ab,ba",
    "abcd,cdef->feba",
    "aab,fa,df,ecc->bde",
    "ecb,fef,bad,ed->ac",
    "bbd,bda,fc,db->acf",
    "dba,ead,cad->bce",
    "aef,fbc,dca->bde",
    ",ab,->ab",
]
OE_SIZES = dict(zip("abcdefghijklmnopq", [2, 3, 4, 5, 4, 3, 2, 6, 5, 4, 3, 2, 5, 7, 4, 3, 2]))

RANDOM_CASES = [(n, seed) for n in (10, 20, 30, 40, 50, 60) for seed in (1, 2, 3)]


def shapes_of(eq, sizes):
    return [tuple(sizes[c] for c in term) for term in eq.split("->")[0].split(",")]


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def check_path(eq, shapes, **options):
    """Our path is valid and our info agrees with opt_einsum's scoring of it; returns our info."""
    path, info = tenex.contract_path(eq, *shapes, shapes=True, **options)
    n = len(shapes)
    assert len(path) == max(n - 1, 1), path
    for step, pair in enumerate(path):
        assert len(pair) == 2 and pair[0] != pair[1], pair
        assert all(0 <= i < n - step for i in pair), (step, pair)
    assert info.path == [tuple(p) for p in path]
    theirs = oe.contract_path(eq, *shapes, shapes=True, optimize=path)[1]
    assert relative(info.opt_cost, float(theirs.opt_cost)) <= 1e-9, (eq, info.opt_cost, theirs.opt_cost)
    assert relative(info.naive_cost, float(theirs.naive_cost)) <= 1e-9, (eq, info.naive_cost, theirs.naive_cost)
    assert relative(info.largest_intermediate, float(theirs.largest_intermediate)) <= 1e-9, eq
    assert info.eq == theirs.eq
    return info


@needs_opt_einsum
@pytest.mark.parametrize("eq", OE_EQUATIONS)
@pytest.mark.parametrize("optimize", ["auto", "greedy", "dp"])
def test_opt_einsum_equations(eq, optimize):
    info = check_path(eq, shapes_of(eq, OE_SIZES), optimize=optimize)
    assert not info.sliced and info.slices == 1
    assert info.peak >= info.largest_intermediate


@needs_opt_einsum
@pytest.mark.parametrize("n,seed", RANDOM_CASES)
def test_random_networks_no_worse_than_greedy(n, seed):
    eq, shapes = rand_equation(n, 3, seed=seed, d_max=2)
    info = check_path(eq, shapes)
    greedy = float(oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")[1].opt_cost)
    assert info.opt_cost <= greedy * (1 + 1e-9), (n, seed, math.log2(info.opt_cost), math.log2(greedy))


@needs_opt_einsum
def test_published_network():
    # The network of the peers' README: opt_einsum's greedy needs 2^36.05 flops.
    eq, shapes = rand_equation(40, 5, seed=1, d_max=2)
    info = check_path(eq, shapes)
    greedy = float(oe.contract_path(eq, *shapes, shapes=True, optimize="greedy")[1].opt_cost)
    assert info.opt_cost <= greedy * (1 + 1e-9)
    assert len(set(eq) - set(",->")) > 52  # labels beyond the letters


def connected(eq):
    terms = [set(t) for t in eq.split("->")[0].split(",")]
    reached, frontier = {0}, [0]
    while frontier:
        k = frontier.pop()
        for j, t in enumerate(terms):
            if j not in reached and t & terms[k]:
                reached.add(j)
                frontier.append(j)
    return len(reached) == len(terms)


@needs_opt_einsum
@pytest.mark.parametrize("seed", range(1, 9))
def test_dp_no_worse_than_opt_einsum_dp(seed):
    # Both search the trees without outer products; tenex's scores opt_einsum's opt_cost exactly.
    eq, shapes = rand_equation(8 + seed % 4, 3, seed=seed, d_max=4)
    if not connected(eq):
        pytest.skip("a disconnected network")
    info = check_path(eq, shapes, optimize="dp")
    theirs = float(oe.contract_path(eq, *shapes, shapes=True, optimize="dp")[1].opt_cost)
    assert info.opt_cost <= theirs * (1 + 1e-9)
    _, optimal = tenex.contract_path(eq, *shapes, shapes=True, optimize="optimal")
    assert optimal.opt_cost == info.opt_cost


@needs_opt_einsum
def test_arrays_implicit_output_and_ellipsis():
    rng = np.random.default_rng(0)
    a, b, c = rng.random((8, 16)), rng.random((16, 4)), rng.random((4, 8))
    path, info = tenex.contract_path("ab,bc,cd", a, b, c)
    assert info.eq == "ab,bc,cd->ad"
    assert path == tenex.contract_path("ab,bc,cd", a.shape, b.shape, c.shape, shapes=True)[0]
    theirs = oe.contract_path("ab,bc,cd", a, b, c, optimize=path)[1]
    assert info.opt_cost == pytest.approx(float(theirs.opt_cost), rel=1e-12)
    # '...' axes get characters of their own, as opt_einsum gives them
    path, info = tenex.contract_path("ab...,b...c", (2, 3, 4), (3, 4, 5), shapes=True)
    assert path == [(0, 1)]
    assert info.eq == "abd,bdc->dac" and info.size_dict["d"] == 4
    np.testing.assert_allclose(np.einsum("...ij,jk", rng.random((3, 2, 4)), rng.random((4, 5))).shape, (3, 2, 5))


@needs_opt_einsum
def test_interleaved_form():
    shapes = [(2, 3), (3, 4), (4, 5)]
    path, info = tenex.contract_path((2, 3), [0, 1], (3, 4), [1, 2], (4, 5), [2, 3], [0, 3], shapes=True)
    assert info.eq == "AB,BC,CD->AD"
    assert info.opt_cost == pytest.approx(
        float(oe.contract_path("ab,bc,cd->ad", *shapes, shapes=True, optimize=path)[1].opt_cost))


def test_table():
    path, info = tenex.contract_path("ab,bc,cd->ad", (8, 16), (16, 16), (16, 8), shapes=True)
    text = str(info)
    assert text == repr(info)
    assert "Complete contraction:  ab,bc,cd->ad" in text
    for line in ("Naive FLOP count", "Optimized FLOP count", "Theoretical speedup", "Largest intermediate"):
        assert line in text
    assert f"{info.opt_cost:.3e}" in text and f"{info.naive_cost:.3e}" in text
    rows = text.split("-" * 80)[-1].strip().splitlines()
    assert len(rows) == 2 and rows[0].split()[0] == "3"
    assert info.scale_list == [3, 3] and len(info.size_list) == 2
    assert info.speedup == pytest.approx(info.naive_cost / info.opt_cost)
    assert info.shapes == ((8, 16), (16, 16), (16, 8))


@needs_opt_einsum
def test_memory_limit_slices_in_the_users_labels():
    eq, shapes = rand_equation(30, 3, seed=4, d_max=2)
    _, free = tenex.contract_path(eq, *shapes, shapes=True)
    limit = free.largest_intermediate / 8
    _, info = tenex.contract_path(eq, *shapes, shapes=True, memory_limit=limit)
    assert info.sliced, str(info)
    assert set(info.sliced) <= set(eq) - set(",->")
    assert info.largest_intermediate <= limit
    assert info.slices == math.prod(info.size_dict[c] for c in info.sliced)
    assert info.opt_cost >= free.opt_cost * (1 - 1e-9)
    assert "Sliced labels" in str(info)
    _, capped = tenex.contract_path(eq, *shapes, shapes=True, memory_limit="max_input")
    assert capped.largest_intermediate <= max(math.prod(s) for s in shapes)


def test_unicode_labels_beyond_the_letters():
    # opt_einsum.get_symbol's characters: 52 letters, then from U+00C0 on
    symbols = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(0xC0 + k) for k in range(40)]
    chain = [symbols[k] + symbols[k + 1] for k in range(len(symbols) - 1)]
    eq = ",".join(chain) + "->" + symbols[0] + symbols[-1]
    path, info = tenex.contract_path(eq, *[(2, 2)] * len(chain), shapes=True)
    assert len(path) == len(chain) - 1
    assert info.eq == eq
    assert info.largest_intermediate == 4


@pytest.mark.parametrize("optimize", ["fast", "branch-2", True, None, 3])
def test_bad_optimize_names_the_choices(optimize):
    with pytest.raises(ValueError, match="'auto', 'greedy', 'dp'.*'hyper'"):
        tenex.contract_path("ab,bc", (2, 3), (3, 4), shapes=True, optimize=optimize)


@pytest.mark.parametrize("memory_limit", [0, -5, "big", True])
def test_bad_memory_limit(memory_limit):
    with pytest.raises(ValueError, match="memory_limit"):
        tenex.contract_path("ab,bc", (2, 3), (3, 4), shapes=True, memory_limit=memory_limit)


@pytest.mark.parametrize("subscripts,text", [
    ("ab,bc,cd", "3 operand"),
    ("ab,b#", "invalid subscript '#'"),
    ("ab,bc->ax", "'x' appears in no operand"),
    ("abc,bc", "has 2 axes"),
    ("ab,cc", "a diagonal needs equal extents"),
])
def test_bad_subscripts_are_short_shape_errors(subscripts, text):
    big = np.zeros((300, 400))
    with pytest.raises(tenex.ShapeError) as info:
        tenex.contract_path(subscripts, big, np.zeros((400, 300)))
    message = str(info.value)
    assert text in message, message
    assert "tenex.contract_path" in message and len(message) < 300 and "0." not in message


@needs_opt_einsum
def test_a_single_operand_is_one_step():
    # opt_einsum's path of one operand, [(0,)], which opt_einsum.contract runs
    x = np.arange(6.0).reshape(2, 3)
    path, info = tenex.contract_path("ab->a", x)
    assert path == [(0,)] and info.path == [(0,)]
    np.testing.assert_allclose(oe.contract("ab->a", x, optimize=path), x.sum(axis=1))


def test_shapes_must_be_shapes():
    with pytest.raises(TypeError, match="shape"):
        tenex.contract_path("ab,bc", (2, 3), "bc", shapes=True)
    with pytest.raises(TypeError):
        tenex.contract_path(3, (2, 3), shapes=True)


# ---- einsum: the interleaved form and labels beyond the letters


def pairwise_reference(terms, output, arrays):
    """numpy.einsum one pair at a time, left to right: each step's labels renamed to letters."""
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    terms, arrays = list(terms), list(arrays)
    while len(terms) > 1:
        a, b = terms.pop(0), terms.pop(0)
        x, y = arrays.pop(0), arrays.pop(0)
        rest = set(output).union(*terms) if terms else set(output)
        kept = [c for c in dict.fromkeys(a + b) if c in rest]
        names = {c: letters[i] for i, c in enumerate(dict.fromkeys(a + b))}
        step = "".join(names[c] for c in a) + "," + "".join(names[c] for c in b) + "->" + "".join(names[c] for c in kept)
        terms.insert(0, "".join(kept))
        arrays.insert(0, np.einsum(step, x, y))
    names = {c: letters[i] for i, c in enumerate(terms[0])}
    return np.einsum("".join(names[c] for c in terms[0]) + "->" + "".join(names[c] for c in output), arrays[0])


def test_einsum_more_than_52_labels():
    rng = np.random.default_rng(1)
    symbols = [chr(c) for c in range(ord("A"), ord("Z") + 1)] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    symbols += [chr(0xC0 + k) for k in range(30)] + ["京", "α", "β"]
    # an MPS-like ladder: two chains of 3-label tensors joined by rungs, 85 labels in all
    n = len(symbols) // 3
    top, bottom, rung = symbols[:n], symbols[n:2 * n], symbols[2 * n:3 * n]
    terms = []
    for k in range(n - 1):
        terms.append(top[k] + rung[k] + top[k + 1])
        terms.append(bottom[k] + rung[k] + bottom[k + 1])
    output = top[0] + bottom[-1]
    arrays = [rng.uniform(-1, 1, (2, 2, 2)) for _ in terms]
    eq = ",".join(terms) + "->" + output
    assert len(set(eq) - set(",->")) > 52
    got = tenex.einsum(eq, *arrays)
    np.testing.assert_allclose(got, pairwise_reference(terms, output, arrays), rtol=1e-10, atol=1e-12)
    # the implicit output: the labels used once, in character order (numpy's rule)
    implicit = tenex.einsum(",".join(terms), *arrays)
    once = sorted(c for c in set("".join(terms)) if "".join(terms).count(c) == 1)
    np.testing.assert_allclose(implicit, pairwise_reference(terms, "".join(once), arrays), rtol=1e-10, atol=1e-12)


def test_einsum_unicode_diagonal_and_errors():
    a = np.arange(9.0).reshape(3, 3)
    assert tenex.einsum("αα", a) == np.trace(a)
    np.testing.assert_allclose(tenex.einsum("αβ->βα", a), a.T)
    with pytest.raises(tenex.ShapeError, match="'γ' appears in no operand"):
        tenex.einsum("αβ->γ", a)


@pytest.mark.parametrize("args", [
    lambda a, b, c: (a, [0, 1], b, [1, 2], [0, 2]),
    lambda a, b, c: (a, [0, 1], b, [1, 2]),                       # implicit output
    lambda a, b, c: (a, [0, 1], b, [1, 2], c, [2, 0], []),        # a trace of the chain
    lambda a, b, c: (a, (1, 0), b, [0, 2], [2, 1]),               # tuples, any order
    lambda a, b, c: (a, [np.int64(5), 7], b, [7, 30], [30, 5]),   # numpy integers, upper and lower
    lambda a, b, c: (a, [0, 0], []),                              # a diagonal
    lambda a, b, c: (np.ones((2, 3, 4)), [Ellipsis, 1], b, [1, 2], [Ellipsis, 2]),
    lambda a, b, c: (np.ones((2, 3, 4)), [Ellipsis, 1], b, [1, 2]),
])
def test_einsum_interleaved_against_numpy(args):
    rng = np.random.default_rng(2)
    a, b, c = rng.random((4, 4)), rng.random((4, 5)), rng.random((5, 4))
    operands = args(a, b, c)
    np.testing.assert_allclose(tenex.einsum(*operands), np.einsum(*operands), rtol=1e-12)


def test_einsum_interleaved_large_integers():
    rng = np.random.default_rng(3)
    a, b = rng.random((3, 4)), rng.random((4, 5))
    got = tenex.einsum(a, [100, 2000], b, [2000, 7], [7, 100])
    np.testing.assert_allclose(got, np.einsum(a, [0, 1], b, [1, 2], [2, 0]), rtol=1e-12)
    # the implicit output orders the integers as numpy does (7 before 100)
    np.testing.assert_allclose(tenex.einsum(a, [100, 2000], b, [2000, 7]), (a @ b).T, rtol=1e-12)


def test_einsum_interleaved_errors():
    a = np.ones((2, 3))
    with pytest.raises(TypeError, match="sublist"):
        tenex.einsum(a, [0, "x"])
    with pytest.raises(TypeError, match="sublist"):
        tenex.einsum(a, [0, 1], a, "ab")
    with pytest.raises(ValueError):
        tenex.einsum(a, [0, -1])
    with pytest.raises(tenex.ShapeError, match="has 2 axes"):
        tenex.einsum(a, [0, 1, 2])
    with pytest.raises(TypeError):
        tenex.einsum(a, a)
    out = np.zeros((2, 2))
    assert tenex.einsum(a, [0, 1], a, [2, 1], [0, 2], out=out) is out
    np.testing.assert_allclose(out, a @ a.T)


def test_einsum_a_network_whose_written_order_cannot_be_counted():
    # <psi|psi> of a 70-site MPS written kets first: ket0 * ket1 * ... would hold 2^70 elements
    sites, bond = 70, 3
    rng = np.random.default_rng(4)
    symbols = [chr(0xC0 + k) for k in range(3 * sites)]
    phys, ket, bra = symbols[:sites], symbols[sites:2 * sites - 1], symbols[2 * sites:3 * sites - 1]
    terms, arrays = [], []
    for bonds in (ket, bra):
        for k in range(sites):
            terms.append((bonds[k - 1] if k else "") + phys[k] + (bonds[k] if k < sites - 1 else ""))
    tensors = [rng.uniform(-1, 1, (1 if k == 0 else bond, 2, 1 if k == sites - 1 else bond)) for k in range(sites)]
    arrays = [t.reshape(tuple(e for e in t.shape if e != 1) or ()) for t in tensors] * 2
    got = tenex.einsum(",".join(terms) + "->", *arrays)
    transfer = np.ones((1, 1))
    for t in tensors:
        transfer = np.einsum("ab,apc,bpd->cd", transfer, t, t)
    np.testing.assert_allclose(got, transfer[0, 0], rtol=1e-10)
