"""tenex.Tensor: views of numpy arrays without copies, memory of its own, shapes taken from the
first result, read-only and strided arrays."""
import ast
import gc
import pathlib

import numpy as np
import pytest

import tenex

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def rand(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dtype)


def tol(dtype):
    return {"rtol": 1e-4, "atol": 1e-5} if dtype in (np.float32, np.complex64) else {"rtol": 1e-12, "atol": 1e-12}


@pytest.mark.parametrize("dtype", DTYPES)
def test_operands_are_read_where_they_lie(dtype):
    rng = np.random.default_rng(1)
    a, b = rand(rng, (5, 4), dtype), rand(rng, (4, 3), dtype)
    A, B = tenex.Tensor(a), tenex.Tensor(b)
    assert not A.copied and A.dtype == np.dtype(dtype) and A.shape == (5, 4)
    assert np.shares_memory(np.asarray(A), a)
    C = tenex.Tensor()  # takes the dtype and shape of its first result
    C["i,j"] = A["i,k"] * B["k,j"]
    assert C.dtype == np.dtype(dtype)
    np.testing.assert_allclose(C.numpy(), a @ b, **tol(dtype))
    # no copy: writing the numpy array changes what the next statement reads
    a[0, :] = 7
    C["i,j"] = A["i,k"] * B["k,j"]
    np.testing.assert_allclose(C.numpy()[0], 7 * b.sum(axis=0), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_results_land_in_the_array(dtype):
    rng = np.random.default_rng(2)
    a = rand(rng, (3, 6), dtype)
    c = np.zeros((6, 3), dtype)
    C = tenex.Tensor(c)
    C["j,i"] = 2.0 * tenex.Tensor(a)["i,j"]
    np.testing.assert_allclose(c, 2 * a.T, **tol(dtype))
    assert np.asarray(C) is c  # numpy.asarray(t) is the array itself, not a copy
    assert C.numpy() is c


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_arrays_as_operands_and_targets(dtype):
    rng = np.random.default_rng(3)
    big = rand(rng, (8, 10), dtype)
    a = big[1:7:2, ::3]  # non-contiguous
    b = rand(rng, (4, 4), dtype).T  # transposed
    out_memory = np.zeros((6, 8), dtype)
    out = out_memory[::2, 1::2]  # a strided target
    A, B, O = tenex.Tensor(a), tenex.Tensor(b), tenex.Tensor(out)
    assert not A.copied and not O.copied
    O["i,j"] = A["i,k"] * B["k,j"]
    np.testing.assert_allclose(out, a @ b, **tol(dtype))
    assert np.count_nonzero(out_memory[1::2]) == 0  # nothing written between the rows


def test_negative_strides_are_copied():
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, (4, 4))
    flipped = a[::-1]
    F = tenex.Tensor(flipped)
    assert F.copied
    assert not np.shares_memory(np.asarray(F), a)
    C = tenex.Tensor()
    C["i,j"] = F["j,i"]
    np.testing.assert_array_equal(C.numpy(), flipped.T)


def test_misaligned_array_is_copied():
    raw = np.zeros(8 * 9 + 1, np.uint8)[1:].view(np.float64).reshape(3, 3)
    raw[...] = np.arange(9.0).reshape(3, 3)
    T = tenex.Tensor(raw)
    assert T.copied
    C = tenex.Tensor()
    C["i"] = T["i,i"]
    np.testing.assert_array_equal(C.numpy(), [0.0, 4.0, 8.0])


def test_read_only_array_is_an_operand_but_not_a_target():
    a = np.arange(6.0).reshape(2, 3)
    a.flags.writeable = False
    A = tenex.Tensor(a)
    C = tenex.Tensor()
    C["j,i"] = A["i,j"]
    np.testing.assert_array_equal(C.numpy(), a.T)
    with pytest.raises(ValueError, match="read-only"):
        A["i,j"] = C["j,i"]
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))


@pytest.mark.parametrize("dtype", DTYPES)
def test_own_memory(dtype):
    T = tenex.Tensor((2, 3), dtype=dtype)
    assert T.shape == (2, 3) and T.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(T.numpy(), np.zeros((2, 3)))
    T["i,j"] = T["i,j"] + 1.5
    np.testing.assert_array_equal(np.asarray(T), np.full((2, 3), 1.5))
    assert tenex.Tensor(4).shape == (4,)


def test_shape_from_the_first_result_then_fixed():
    a = np.arange(12.0).reshape(3, 4)
    T = tenex.Tensor()
    assert T.shape == ()
    with pytest.raises(ValueError, match="no value"):
        T.numpy()
    with pytest.raises(ValueError, match="no value"):
        T["i"]
    T["j,i"] = tenex.Tensor(a)["i,j"]
    assert T.shape == (4, 3)
    memory = T.numpy()
    np.testing.assert_array_equal(memory, a.T)
    # from now on it views that array: results of the same shape land in it
    T["j,i"] = 2.0 * tenex.Tensor(a)["i,j"]
    assert T.numpy() is memory
    np.testing.assert_array_equal(memory, 2 * a.T)
    # a result of other extents raises and writes nothing
    with pytest.raises(tenex.Error):
        T["i,j"] = tenex.Tensor(a)["i,j"]
    np.testing.assert_array_equal(memory, 2 * a.T)


def test_adopted_memory_outlives_the_tensor():
    T = tenex.Tensor()
    T["i"] = tenex.Tensor(np.arange(5.0))["i"] * 3.0
    memory = T.numpy()
    del T
    gc.collect()
    np.testing.assert_array_equal(memory, 3 * np.arange(5.0))


def test_array_kept_alive_by_the_tensor():
    T = tenex.Tensor(np.arange(4.0) + 1)  # no other reference to the array
    gc.collect()
    C = tenex.Tensor()
    C[""] = T["i"] * T["i"]
    assert float(C.numpy()) == 1 + 4 + 9 + 16


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_arrays_are_operands_and_targets(dtype):
    # An array without elements has no two indices sharing an element, whatever its strides:
    # a target as numpy's einsum writes one.
    rng = np.random.default_rng(7)
    x = rand(rng, (3,), dtype)
    empty = np.zeros((0, 2), dtype)
    target = tenex.Tensor(np.zeros((2, 0), dtype))
    target["j,i"] = tenex.Tensor(empty)["i,j"]
    assert target.shape == (2, 0) and target.numpy().shape == (2, 0)
    outer = tenex.Tensor(np.zeros((3, 0), dtype))
    outer["i,k"] = tenex.Tensor(x)["i"] * tenex.Tensor(np.zeros(0, dtype))["k"]
    assert outer.numpy().shape == (3, 0)
    # summed over an empty mode: zeros over what the array held
    c = np.full((2, 2), 5, dtype)
    C = tenex.Tensor(c)
    C["i,k"] = tenex.Tensor(np.zeros((2, 0), dtype))["i,j"] * tenex.Tensor(empty)["j,k"]
    np.testing.assert_array_equal(c, np.einsum("ij,jk->ik", np.zeros((2, 0)), empty))
    D = tenex.Tensor()
    D["i,k"] = tenex.Tensor(np.zeros((2, 0), dtype))["i,j"] * tenex.Tensor(empty)["j,k"]
    np.testing.assert_array_equal(D.numpy(), np.zeros((2, 2)))
    assert D.dtype == np.dtype(dtype)
    S = tenex.Tensor()
    S[""] = tenex.Tensor(empty)["i,j"]
    assert float(abs(S.numpy())) == 0.0


def test_bad_input_raises():
    with pytest.raises(TypeError):
        tenex.Tensor(np.arange(3))  # integers
    with pytest.raises(TypeError):
        tenex.Tensor((2, 2), dtype=np.int32)
    with pytest.raises(TypeError):
        tenex.Tensor(np.zeros(2), dtype=np.float32)
    with pytest.raises(ValueError):
        tenex.Tensor((2, -1))
    a = tenex.Tensor(np.zeros((2, 3)))
    b = tenex.Tensor(np.zeros((4, 3)))
    with pytest.raises(tenex.Error, match="i"):
        a["i,j"] + b["i,j"]  # i is 2 on one side and 4 on the other
    c = tenex.Tensor()
    with pytest.raises(tenex.Error, match="rank 2"):
        c["i,j,k"] = a["i,j,k"]  # three labels for two modes
    assert not c.pending and c.shape == ()


def test_stubs_name_every_public_name():
    stubs = pathlib.Path(tenex.__file__).with_name("__init__.pyi")
    tree = ast.parse(stubs.read_text())
    named = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    public = {name for name in dir(tenex) if not name.startswith("_")}
    assert public - named == set()
    # and what the stubs promise exists
    assert named - set(dir(tenex)) == set()
