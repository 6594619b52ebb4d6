"""Property tests of tenex.einsum against numpy.einsum with Hypothesis (Debian's
python3-hypothesis): random subscripts over one to three operands (repeated labels, traces,
explicit and implicit outputs), the four dtypes, non-contiguous strides (steps, transposes,
reversals), out=, and empty dimensions. A failing case is shrunk to a small one and printed."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

import tenex  # noqa: E402

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
LABELS = "abcde"


def tolerance(dtype):
    single = np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    return {"rtol": 2e-4, "atol": 2e-4} if single else {"rtol": 1e-10, "atol": 1e-10}


@st.composite
def einsum_problems(draw, allow_empty=True):
    """(subscripts, operand shapes, extents): every label has one extent."""
    extents = {l: draw(st.integers(0 if allow_empty else 1, 4)) for l in LABELS}
    count = draw(st.integers(1, 3))
    inputs = [draw(st.lists(st.sampled_from(LABELS), min_size=0, max_size=4)) for _ in range(count)]
    used = sorted({l for term in inputs for l in term})
    if draw(st.booleans()):
        output = draw(st.permutations(used))
        output = output[: draw(st.integers(0, len(output)))]
        subscripts = ",".join("".join(t) for t in inputs) + "->" + "".join(output)
    else:
        subscripts = ",".join("".join(t) for t in inputs)
    return subscripts, [tuple(extents[l] for l in term) for term in inputs]


@st.composite
def arrays(draw, shape, dtype):
    """An array of `shape` with any of several memory layouts: contiguous, a strided slice of a
    larger array, a transpose, a reversal."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    layout = draw(st.sampled_from(["contiguous", "strided", "transposed", "reversed"]))

    def values(s):
        x = rng.uniform(-1, 1, s)
        if np.issubdtype(dtype, np.complexfloating):
            x = x + 1j * rng.uniform(-1, 1, s)
        return x.astype(dtype)

    if layout == "strided" and shape:
        big = values(tuple(2 * e for e in shape))
        return big[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "transposed" and len(shape) >= 2:
        return values(shape[::-1]).T
    if layout == "reversed" and shape:
        return values(shape)[::-1]
    return values(shape)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), problem=einsum_problems(), dtype=st.sampled_from(DTYPES))
def test_einsum_matches_numpy(data, problem, dtype):
    subscripts, shapes = problem
    operands = [data.draw(arrays(s, dtype)) for s in shapes]
    want = np.einsum(subscripts, *operands)
    got = tenex.einsum(subscripts, *operands)
    got = np.asarray(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, **tolerance(dtype))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), problem=einsum_problems(), dtype=st.sampled_from(DTYPES))
def test_einsum_out_matches_numpy(data, problem, dtype):
    subscripts, shapes = problem
    operands = [data.draw(arrays(s, dtype)) for s in shapes]
    want = np.einsum(subscripts, *operands)
    out = np.full(want.shape, 7, dtype=dtype)
    if data.draw(st.booleans()) and out.ndim >= 2:
        out = np.full(want.shape[::-1], 7, dtype=dtype).T  # a non-contiguous out=
    result = tenex.einsum(subscripts, *operands, out=out)
    np.testing.assert_allclose(out, want, **tolerance(dtype))
    assert np.shares_memory(np.asarray(result), out) or np.asarray(result) is out


@settings(max_examples=100, deadline=None)
@given(data=st.data(), problem=einsum_problems(allow_empty=False), dtypes=st.lists(st.sampled_from(DTYPES), min_size=3, max_size=3))
def test_mixed_dtypes_promote_as_numpy(data, problem, dtypes):
    subscripts, shapes = problem
    operands = [data.draw(arrays(s, dtypes[i])) for i, s in enumerate(shapes)]
    want = np.einsum(subscripts, *operands)
    got = np.asarray(tenex.einsum(subscripts, *operands))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, **tolerance(want.dtype))
