"""What numpy users reach for: __version__, ndim, float() of a rank-0 Tensor, einsum's optimize."""
import re

import numpy as np
import pytest

import tenex


def test_version_is_the_library_version():
    assert isinstance(tenex.__version__, str)
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", tenex.__version__)


def test_ndim_follows_the_shape():
    assert tenex.Tensor(np.zeros((2, 3, 4))).ndim == 3
    assert tenex.Tensor(np.zeros(())).ndim == 0
    assert tenex.Tensor().ndim == 0  # no value yet


def test_size_and_len_as_numpy():
    for shape in [(2, 3, 4), (5,), (), (0, 3)]:
        t = tenex.Tensor(np.zeros(shape))
        assert t.size == np.zeros(shape).size
        if shape:
            assert len(t) == shape[0]
        else:
            with pytest.raises(TypeError):
                len(t)
    assert tenex.Tensor().size == 0
    c = tenex.Tensor()
    c["i,j"] = tenex.Tensor(np.ones((3, 4)))["i,j"] * 2.0
    assert c.size == 12 and len(c) == 3


def test_float_and_complex_of_one_element():
    a = tenex.Tensor(np.arange(6.0).reshape(2, 3))
    r = tenex.Tensor()
    r[""] = a["i,j"] * a["i,j"]
    assert float(r) == pytest.approx(float((np.arange(6.0) ** 2).sum()))
    assert complex(r) == pytest.approx(complex((np.arange(6.0) ** 2).sum()))
    z = tenex.Tensor(np.array(1.5 - 2j))
    assert complex(z) == 1.5 - 2j
    assert float(tenex.Tensor(np.array([2.5]))) == 2.5
    with pytest.raises(TypeError, match="one element"):
        float(a)
    with pytest.raises(TypeError, match="complex"):
        float(z)
    with pytest.raises(ValueError):
        float(tenex.Tensor())


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", "auto", "hyper", ["einsum_path", (0, 1), (0, 1)]])
def test_einsum_takes_numpy_optimize(optimize):
    rng = np.random.default_rng(3)
    a, b, c = rng.random((3, 4)), rng.random((4, 5)), rng.random((5, 2))
    expected = np.einsum("ij,jk,kl->il", a, b, c)
    got = tenex.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    got = tenex.einsum(a, [0, 1], b, [1, 2], c, [2, 3], [0, 3], optimize=optimize)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_einsum_refuses_an_unknown_optimize():
    a = np.ones((2, 2))
    with pytest.raises(ValueError, match="optimize='fastest'"):
        tenex.einsum("ij,jk", a, a, optimize="fastest")
    with pytest.raises(TypeError, match="optimize"):
        tenex.einsum("ij,jk", a, a, optimize=3.5)


def test_dlpack_both_ways_without_a_copy():
    base = np.arange(12.0).reshape(3, 4)
    t = tenex.from_dlpack(base)
    assert isinstance(t, tenex.Tensor) and t.shape == (3, 4)
    r = tenex.Tensor()
    r["i"] = t["i,j"]
    np.testing.assert_allclose(np.asarray(r), base.sum(axis=1))
    # numpy marks what it imports through DLPack read-only: an operand, not a target.
    with pytest.raises(ValueError, match="read-only"):
        t["i,j"] = t["i,j"] * 2.0
    np.testing.assert_array_equal(base, np.arange(12.0).reshape(3, 4))
    owned = tenex.Tensor(np.zeros((2, 2)))
    view = np.from_dlpack(owned)
    owned["i,j"] = tenex.Tensor(np.ones((2, 2)))["i,j"] * 5.0
    np.testing.assert_array_equal(view, np.full((2, 2), 5.0))  # the same memory, seen after the write
    assert np.shares_memory(view, np.asarray(owned))
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=1)


def test_pickle_and_deepcopy_keep_the_values_in_memory_of_their_own():
    import copy
    import pickle

    a = np.arange(6.0).reshape(2, 3) + 1j
    t = tenex.Tensor(a)
    for other in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert isinstance(other, tenex.Tensor)
        assert other.shape == (2, 3) and other.dtype == np.complex128
        np.testing.assert_array_equal(np.asarray(other), a)
        assert not np.shares_memory(np.asarray(other), a)
    r = tenex.Tensor()
    r["i,j"] = t["i,j"] * 3.0
    np.testing.assert_array_equal(np.asarray(pickle.loads(pickle.dumps(r))), a * 3.0)


def test_a_call_that_matches_no_signature_does_not_print_the_arrays():
    mps = [np.ones((16, 2, 16)) for _ in range(200)]
    with pytest.raises(TypeError) as e:
        tenex.svd(mps[0], mps)
    text = str(e.value)
    assert "incompatible function arguments" in text
    assert "numpy.ndarray(shape=(16, 2, 16), dtype=float64)" in text and "list of 200 items" in text
    assert len(text) < 1000
    with pytest.raises(TypeError) as e:
        tenex.einsum("ij->ij", np.ones((300, 300)), no_such_keyword=1)
    assert "no_such_keyword=1" in str(e.value) and len(str(e.value)) < 1000


def test_einsum_dtype_as_numpy():
    a32 = np.arange(6, dtype=np.float32).reshape(2, 3)
    b32 = np.ones((3, 2), dtype=np.float32)
    got = tenex.einsum("ij,jk->ik", a32, b32, dtype=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.einsum("ij,jk->ik", a32, b32, dtype=np.float64))
    got = tenex.einsum(a32, [0, 1], b32, [1, 2], dtype="complex128")
    assert got.dtype == np.complex128
    with pytest.raises(TypeError, match="safe"):
        tenex.einsum("ij,jk->ik", a32.astype(np.float64), b32, dtype=np.float32)


def test_plan_is_explain_as_data():
    a = tenex.Tensor(np.random.default_rng(0).random((2, 50)))
    b = tenex.Tensor(np.random.default_rng(1).random((50, 40)))
    c = tenex.Tensor(np.random.default_rng(2).random((40, 30)))
    e = a["i,j"] * b["j,k"] * c["k,l"]
    steps = tenex.plan(e)
    text = tenex.explain(e)
    assert [s["operation"] for s in steps] == ["contract", "contract", "output"]
    for s in steps:
        assert set(s) == {"operation", "kernel", "operands", "result", "flops", "bytes"}
        assert s["result"] in text
    assert steps[0]["flops"] == 2 * 2 * 50 * 40 and steps[0]["bytes"] == 2 * 40 * 8
    assert steps[1]["operands"][0].startswith("#1(")
    assert steps[-1]["result"].startswith("value(")
    r = tenex.Tensor()
    r["i,l"] = e  # nothing was evaluated by plan(): the expression still runs
    np.testing.assert_allclose(np.asarray(r), np.asarray(a) @ np.asarray(b) @ np.asarray(c))
