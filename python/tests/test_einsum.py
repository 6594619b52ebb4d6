"""tenex.einsum against numpy.einsum: random subscripts, shapes, strides and dtypes (seeded)."""
import string

import numpy as np
import pytest

import tenex

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
# Tolerances relative to the largest |element| of the reference (sums of up to a few
# thousand products of numbers in [-1, 1)).
RTOL = {np.dtype(np.float32): 2e-4, np.dtype(np.complex64): 2e-4,
        np.dtype(np.float64): 1e-11, np.dtype(np.complex128): 1e-11}


def random_array(rng, shape, dtype):
    a = rng.uniform(-1, 1, shape)
    if np.issubdtype(np.dtype(dtype), np.complexfloating):
        a = a + 1j * rng.uniform(-1, 1, shape)
    return a.astype(dtype)


def strided(rng, a):
    """The same values, in memory that is not C-contiguous: transposed copy viewed back, or a slice."""
    if a.ndim == 0:
        return a
    kind = rng.integers(3)
    if kind == 0:
        axes = rng.permutation(a.ndim)
        inverse = np.argsort(axes)
        return np.ascontiguousarray(a.transpose(axes)).transpose(inverse)
    if kind == 1:
        bigger = np.zeros(tuple(2 * n + 1 for n in a.shape), dtype=a.dtype)
        index = tuple(slice(1, 1 + 2 * n, 2) for n in a.shape)
        bigger[index] = a
        return bigger[index]
    reversed_ = np.ascontiguousarray(a[(slice(None, None, -1),) * a.ndim])
    return reversed_[(slice(None, None, -1),) * a.ndim]


def check(subscripts, *operands, out=None):
    expected = np.einsum(subscripts, *operands)
    got = tenex.einsum(subscripts, *operands, out=out)
    if out is not None:
        assert got is out
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert got.shape == expected.shape, subscripts
    assert got.dtype == expected.dtype or out is not None, (subscripts, got.dtype, expected.dtype)
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    rtol = RTOL[np.dtype(got.dtype)]
    if expected.size:
        err = float(np.max(np.abs(got - expected)))
        assert err <= rtol * scale, f"{subscripts}: max error {err} > {rtol * scale}"


def random_subscripts(rng):
    """A random einsum over 1-4 operands: shared labels (contractions, Hadamard), labels on one
    operand only (summed or kept), repeated labels in one operand (diagonals, traces), '...',
    implicit or explicit output. Returns the subscripts and each label's extent."""
    n_operands = int(rng.integers(1, 5))
    pool = list(rng.choice(list(string.ascii_letters), size=6, replace=False))
    extents = {c: int(rng.integers(1, 5)) for c in pool}
    terms = []
    for _ in range(n_operands):
        rank = int(rng.integers(0, 4))
        labels = [str(rng.choice(pool)) for _ in range(rank)]
        terms.append(labels)
    use_ellipsis = rng.random() < 0.25
    ellipsis_rank = int(rng.integers(0, 3)) if use_ellipsis else 0
    used = [c for t in terms for c in t]
    texts = []
    for t in terms:
        text = "".join(t)
        if use_ellipsis and rng.random() < 0.7:
            at = int(rng.integers(0, len(t) + 1))
            text = text[:at] + "..." + text[at:]
        texts.append(text)
    subscripts = ",".join(texts)
    has_ellipsis = "..." in subscripts
    if rng.random() < 0.6:
        distinct = sorted(set(used), key=lambda c: rng.random())
        keep = distinct[: int(rng.integers(0, len(distinct) + 1))]
        output = "".join(keep)
        if has_ellipsis:
            at = int(rng.integers(0, len(output) + 1))
            output = output[:at] + "..." + output[at:]
        subscripts += "->" + output
    return subscripts, extents, ellipsis_rank


def operand_shapes(rng, subscripts, extents, ellipsis_rank):
    inputs = subscripts.split("->")[0].split(",")
    broadcast = [int(rng.integers(1, 4)) for _ in range(ellipsis_rank)]
    shapes = []
    for term in inputs:
        if "..." in term:
            before, after = term.split("...")
            own = broadcast[len(broadcast) - int(rng.integers(0, ellipsis_rank + 1)):] if ellipsis_rank else []
            # numpy's broadcasting: an axis of the '...' part may be 1 in one operand
            own = [1 if rng.random() < 0.2 else n for n in own]
            shapes.append([extents[c] for c in before] + own + [extents[c] for c in after])
        else:
            shapes.append([extents[c] for c in term])
    return shapes


@pytest.mark.parametrize("seed", range(40))
def test_random_subscripts(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        subscripts, extents, ellipsis_rank = random_subscripts(rng)
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        shapes = operand_shapes(rng, subscripts, extents, ellipsis_rank)
        operands = [random_array(rng, s, dtype) for s in shapes]
        if rng.random() < 0.5:
            operands = [strided(rng, a) for a in operands]
        check(subscripts, *operands)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("subscripts,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("Ba", [(3, 4)]),
    ("bA", [(3, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("i,i", [(5,), (5,)]),
    ("i,i->i", [(5,), (5,)]),
    ("i,j", [(2,), (3,)]),
    ("i,j->ji", [(2,), (3,)]),
    ("i->", [(5,)]),
    ("ij->", [(2, 3)]),
    (",", [(), ()]),
    ("->", [()]),
    (",ij->ij", [(), (2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ij,jk,kl,lm->mi", [(2, 3), (3, 4), (4, 5), (5, 2)]),
    ("bij,bjk->bik", [(3, 2, 4), (3, 4, 5)]),
    ("ij,ji->", [(3, 4), (4, 3)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("...ij,...jk", [(2, 1, 3, 4), (3, 4, 5)]),
    ("i...->...", [(3, 2, 4)]),
    ("...", [(2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,ij->ij", [(1, 3), (4, 3)]),
    ("ij,ij->i", [(4, 1), (4, 3)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),
    ("abcd,dcbe->ae", [(2, 3, 2, 3), (3, 2, 3, 4)]),
    ("aa,ab,bc->c", [(3, 3), (3, 4), (4, 2)]),
])
def test_cases(dtype, subscripts, shapes):
    rng = np.random.default_rng(7)
    check(subscripts, *[random_array(rng, s, dtype) for s in shapes])


def test_strided_operands():
    rng = np.random.default_rng(3)
    a = random_array(rng, (6, 8), np.float64)
    b = random_array(rng, (10, 6), np.float64)
    check("ij,jk->ik", a[::2, 1::2], b[::3, ::2])
    check("ij,jk->ik", a.T, b.T[:, :8])
    check("ij,jk->ik", a[::-1], b[:8, ::-1])
    check("ii", a[:6, :6].T)


@pytest.mark.parametrize("first", DTYPES + [np.int32, np.int64, bool])
@pytest.mark.parametrize("second", DTYPES)
def test_mixed_dtypes(first, second):
    rng = np.random.default_rng(5)
    a = random_array(rng, (3, 4), np.float64).astype(first) if first is not bool else rng.random((3, 4)) < 0.5
    b = random_array(rng, (4, 2), second)
    got = tenex.einsum("ij,jk->ik", a, b)
    assert got.dtype == np.result_type(a, b)
    check("ij,jk->ik", a, b)


# (subscripts, the second operand's shape): a 0-d operand, one of one element that broadcasts,
# one of three elements.
PROMOTION_CASES = [("ij,->ij", ()), ("ij,->i", ()), (",ij->ji", ()),
                   ("ij,j->i", (1,)), ("ij,j->ij", (1,)), ("j,ij->ji", (1,)),
                   ("ij,j->i", (3,)), ("j,ij->ji", (3,))]


@pytest.mark.parametrize("first", DTYPES)
@pytest.mark.parametrize("second", DTYPES)
@pytest.mark.parametrize("subscripts,shape", PROMOTION_CASES)
@pytest.mark.parametrize("magnitude", [1 / 3, 1e300])
def test_promotion_matches_numpy_for_every_shape(first, second, subscripts, shape, magnitude):
    # numpy 1.24 casts by value 0-d operands only: a float64 of shape (1,) makes a float32 einsum
    # float64 (1/3 is not rounded to float32), a 0-d float64 leaves it float32 unless its value
    # needs float64's range (1e300).
    if magnitude > 1 and second not in (np.float64, np.complex128):
        pytest.skip("1e300 is no float32 value")
    rng = np.random.default_rng(17)
    a = random_array(rng, (2, 3), first)
    b = np.full(shape, magnitude, dtype=second)
    if np.issubdtype(np.dtype(second), np.complexfloating):
        b = b + np.array(1j * magnitude / 7, dtype=second)
    operands = (b, a) if subscripts.startswith(("j,", ",")) else (a, b)
    expected = np.einsum(subscripts, *operands)
    got = tenex.einsum(subscripts, *operands)
    assert got.dtype == expected.dtype == np.result_type(*operands), (got.dtype, expected.dtype)
    check(subscripts, *operands)


def test_scalars_and_lists():
    check("i,i->i", [1.0, 2.0, 3.0], np.arange(3.0))
    got = tenex.einsum(",i->i", 2.0, np.arange(3.0))
    np.testing.assert_allclose(got, [0.0, 2.0, 4.0])
    got = tenex.einsum("i,i", np.arange(3.0), np.arange(3.0))
    assert np.ndim(got) == 0 and got == 5.0
    assert isinstance(got, np.float64)


def test_integer_result_is_refused():
    a = np.arange(6).reshape(2, 3)
    with pytest.raises(TypeError, match="int64"):
        tenex.einsum("ij->ji", a)
    with pytest.raises(TypeError):
        tenex.einsum("i->i", np.array(["a", "b"]))
    # an integer operand with a float one promotes, as numpy does
    check("ij,j->i", a, np.ones(3, dtype=np.float32))
    # and integers into a float out
    out = np.zeros((3, 2))
    tenex.einsum("ij->ji", a, out=out)
    np.testing.assert_array_equal(out, a.T)


@pytest.mark.parametrize("dtype", DTYPES)
def test_out(dtype):
    rng = np.random.default_rng(11)
    a = random_array(rng, (3, 4), dtype)
    b = random_array(rng, (4, 5), dtype)
    out = np.full((3, 5), 7, dtype=dtype)
    check("ij,jk->ik", a, b, out=out)
    # a transposed out (Fortran order)
    big = np.full((3, 5), 9, dtype=dtype)
    assert tenex.einsum("ij,jk->ki", a, b, out=big.T) is not None
    np.testing.assert_allclose(big.T, np.einsum("ij,jk->ki", a, b), rtol=1e-4)
    # a sliced out: the columns between are untouched
    view = np.zeros((5, 6), dtype=dtype)
    tenex.einsum("ij,jk->ki", a, b, out=view[:, ::2])
    np.testing.assert_allclose(view[:, ::2], np.einsum("ij,jk->ki", a, b), rtol=1e-4)
    assert np.all(view[:, 1::2] == 0)


def test_out_casts_safely_only():
    a = np.ones((2, 2), dtype=np.float32)
    out = np.zeros((2, 2), dtype=np.float64)
    assert tenex.einsum("ij,jk->ik", a, a, out=out) is out
    np.testing.assert_array_equal(out, np.full((2, 2), 2.0))
    with pytest.raises(TypeError):
        tenex.einsum("ij->ij", np.ones((2, 2)), out=np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError):
        tenex.einsum("ij->ij", np.ones((2, 2)), out=np.zeros((2, 2), np.int64))
    with pytest.raises(TypeError):
        tenex.einsum("ij->ij", np.ones((2, 2)), out=[[0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="shape"):
        tenex.einsum("ij->ij", np.ones((2, 2)), out=np.zeros((2, 3)))
    read_only = np.zeros((2, 2))
    read_only.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tenex.einsum("ij->ij", np.ones((2, 2)), out=read_only)


def test_operands_unchanged_and_result_owned():
    a = np.arange(4.0).reshape(2, 2)
    before = a.copy()
    r = tenex.einsum("ij->ij", a)
    r[0, 0] = 100.0
    np.testing.assert_array_equal(a, before)
    r2 = tenex.einsum("ij->ij", a)
    assert r2[0, 0] == 0.0


def test_out_may_be_an_operand():
    a = np.arange(9.0).reshape(3, 3)
    expected = a @ a
    tenex.einsum("ij,jk->ik", a, a, out=a)
    np.testing.assert_allclose(a, expected)


def test_same_subscripts_other_ranks():
    # the parse cache is keyed by the ranks too
    check("...i,i", np.ones((2, 3)), np.arange(3.0))
    check("...i,i", np.ones((4, 2, 3)), np.arange(3.0))
    check("...i,i", np.ones(3), np.arange(3.0))


def test_zero_extents():
    check("ij,jk->ik", np.ones((2, 0)), np.ones((0, 3)))
    check("ij,jk->ik", np.ones((0, 2)), np.ones((2, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_arrays_are_operands_and_out(dtype):
    # numpy.einsum on empty shapes: transposes, contractions over an empty mode (zeros), outer
    # products with an empty mode; into a new array and into out (row-major, whose strides numpy
    # sets to 0, and strided).
    rng = np.random.default_rng(19)
    x, y = random_array(rng, (3,), dtype), random_array(rng, (2, 3), dtype)
    e02, e20, e30, e0 = (np.zeros(s, dtype) for s in [(0, 2), (2, 0), (3, 0), (0,)])
    cases = [("ij->ji", (e02,)), ("ij->ij", (e20,)), ("ij,jk->ik", (e20, e02)), ("ij,jk->ki", (e30, e02)),
             ("ij->i", (e30,)), ("ij->", (e20,)), ("i,i->", (e0, e0)), ("i,j->ij", (x, e0)),
             ("i,j->ji", (x, e0)), ("ij,k->ikj", (y, e0)), ("ij,jk->ijk", (e20, e02)), ("ij,ij->ji", (e20, e20))]
    for subscripts, operands in cases:
        expected = np.einsum(subscripts, *operands)
        check(subscripts, *operands)
        for out in (np.full(expected.shape, 7, dtype), np.full(expected.shape[::-1], 7, dtype).T):
            assert tenex.einsum(subscripts, *operands, out=out) is out
            np.testing.assert_array_equal(out, expected)
    out = np.zeros((2, 0), dtype)
    assert tenex.einsum("ij->ji", np.zeros((0, 2), dtype), out=out) is out
    sliced = np.zeros((4, 6), dtype)[:, 3:3]  # no elements, inside a larger array
    assert tenex.einsum("ij,jk->ik", np.ones((4, 5), dtype), np.ones((5, 0), dtype), out=sliced) is sliced


def test_non_native_byte_order():
    rng = np.random.default_rng(13)
    a = random_array(rng, (3, 4), np.float64)
    b = random_array(rng, (4, 2), np.complex64)
    got = tenex.einsum("ij,jk->ik", a.astype(">f8"), b.astype(">c8"))
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, np.einsum("ij,jk->ik", a, b), rtol=1e-6)
    with pytest.raises(TypeError, match="byte order"):
        tenex.einsum("ij->ij", a, out=np.zeros((3, 4), dtype=">f8"))


def test_many_operands_and_repeated_subscripts():
    # the same subscripts for other shapes and dtypes hit the parse cache; results must follow
    rng = np.random.default_rng(17)
    for n in (2, 3, 4, 5):
        for dtype in DTYPES:
            ops = [random_array(rng, (n, n), dtype) for _ in range(5)]
            check("ab,bc,cd,de,ef->af", *ops)
            check("ab,bc,cd,de,ea", *ops)


def test_threads_run_einsum_at_once():
    # the GIL is released while a set runs: several Python threads evaluate at the same time,
    # each getting its own right result
    import threading
    rng = np.random.default_rng(19)
    inputs = [(random_array(rng, (40, 50), np.float64), random_array(rng, (50, 30), np.float64)) for _ in range(4)]
    results = [None] * len(inputs)

    def work(i):
        a, b = inputs[i]
        for _ in range(20):
            results[i] = tenex.einsum("ij,jk->ik", a, b)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (a, b), r in zip(inputs, results):
        np.testing.assert_allclose(r, a @ b, rtol=1e-12, atol=1e-12)


def test_parse_cache_overflow():
    # more distinct subscripts than the parse cache keeps: it starts over, results stay right
    x = np.arange(3.0)
    for n in range(5000):
        assert tenex.einsum("i" + " " * n + ",i", x, x) == 5.0
    check("ij,jk", np.ones((2, 3)), np.ones((3, 2)))
