"""Decompositions over label groups and the Krylov solvers from Python, against numpy: grouped
svd/qr/eigen_solve against the reshaped matrix's numpy.linalg results, eigsh against
numpy.linalg.eigh, expm_multiply against a dense exponential through eigh."""
import numpy as np
import pytest

import tenex

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def is_complex(dtype):
    return np.issubdtype(dtype, np.complexfloating)


def rand(rng, shape, dtype):
    x = rng.uniform(-1, 1, shape)
    if is_complex(dtype):
        x = x + 1j * rng.uniform(-1, 1, shape)
    return x.astype(dtype)


def tol(dtype):
    single = np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    return {"rtol": 2e-4, "atol": 2e-4} if single else {"rtol": 1e-10, "atol": 1e-11}


def hermitian(rng, n, dtype):
    m = rand(rng, (n, n), dtype)
    return (m + m.conj().T).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_grouped_svd(dtype):
    rng = np.random.default_rng(1)
    theta = rand(rng, (6, 2, 2, 5), dtype)
    U, S, Vt = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
    U["a,s,k"], S["k"], Vt["k,t,b"] = tenex.svd(tenex.Tensor(theta)["a,s,t,b"], "a,s")
    u, s, vt = U.numpy(), S.numpy(), Vt.numpy()
    assert u.shape == (6, 2, 10) and s.shape == (10,) and vt.shape == (10, 2, 5)
    np.testing.assert_allclose(np.einsum("ask,k,ktb->astb", u, s, vt), theta, **tol(dtype))
    np.testing.assert_allclose(s, np.linalg.svd(theta.reshape(12, 10), compute_uv=False), **tol(dtype))


def test_grouped_svd_permuted_and_truncated():
    rng = np.random.default_rng(2)
    theta = rand(rng, (6, 2, 3, 5), np.float64)
    U, S, Vt = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
    U["t,a,k"], S["k"], Vt["k,s,b"] = tenex.svd(
        tenex.Tensor(theta)["a,s,t,b"], "t,a", truncation=tenex.Truncation(max_rank=4)
    )
    matrix = theta.transpose(2, 0, 1, 3).reshape(18, 10)
    full = np.linalg.svd(matrix, compute_uv=False)
    np.testing.assert_allclose(S.numpy(), full[:4], rtol=1e-10)
    assert U.numpy().shape == (3, 6, 4) and Vt.numpy().shape == (4, 2, 5)
    assert tenex.last_truncation().rank == 4


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_grouped_qr_and_eigen_solve(dtype):
    rng = np.random.default_rng(3)
    theta = rand(rng, (3, 2, 4, 5), dtype)
    Q, R = tenex.Tensor(), tenex.Tensor()
    Q["a,s,k"], R["k,t,b"] = tenex.qr(tenex.Tensor(theta)["a,s,t,b"], "a,s")
    np.testing.assert_allclose(np.einsum("ask,ktb->astb", Q.numpy(), R.numpy()), theta, **tol(dtype))
    h = hermitian(rng, 12, dtype).reshape(3, 4, 3, 4)
    V, w = tenex.Tensor(), tenex.Tensor()
    V["a,b,k"], w["k"] = tenex.eigen_solve(tenex.Tensor(h)["a,b,c,d"], "a,b")
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(h.reshape(12, 12)), **tol(dtype))
    np.testing.assert_allclose(
        np.einsum("abcd,cdk->abk", h, V.numpy()), V.numpy() * w.numpy(), **tol(dtype)
    )


def test_grouped_errors():
    theta = tenex.Tensor(np.zeros((2, 3, 4)))
    with pytest.raises(tenex.ShapeError, match='"x"'):
        tenex.svd(theta["a,b,c"], "a,x")
    with pytest.raises(tenex.ShapeError, match="column"):
        tenex.qr(theta["a,b,c"], "a,b,c")


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("form", ["returns", "writes"])
def test_eigsh(dtype, form):
    rng = np.random.default_rng(4)
    h = hermitian(rng, 50, dtype)
    H = tenex.Tensor(h)
    if form == "returns":

        def op(x):
            y = tenex.Tensor()
            y["i"] = H["i,j"] * x["j"]
            return y

    else:

        def op(x, y):
            y["i"] = H["i,j"] * x["j"]

    x0 = rand(rng, (50,), dtype)
    exact = np.linalg.eigvalsh(h)
    values, vectors = tenex.eigsh(op, x0, k=2, which="smallest", tol=1e-10)
    np.testing.assert_allclose(values, exact[:2], rtol=1e-9, atol=1e-9)
    for value, vector in zip(values, vectors):
        v = np.asarray(vector)
        np.testing.assert_allclose(h @ v, value * v, atol=1e-7)
    top, _ = tenex.eigsh(op, tenex.Tensor(x0), k=1, which="largest")
    np.testing.assert_allclose(top, exact[-1:], rtol=1e-9)


def test_eigsh_errors():
    h = tenex.Tensor(np.eye(4))

    def op(x):
        y = tenex.Tensor()
        y["i"] = h["i,j"] * x["j"]
        return y

    with pytest.raises(ValueError, match="which"):
        tenex.eigsh(op, np.ones(4), which="middle")
    with pytest.raises(tenex.Error):
        tenex.eigsh(op, np.zeros(4))

    def failing(x):
        raise KeyError("the user's own")

    with pytest.raises(KeyError):
        tenex.eigsh(failing, np.ones(4))


@pytest.mark.parametrize("t", [0.3, -1.5, 2j, -0.7j])
def test_expm_multiply(t):
    rng = np.random.default_rng(5)
    dtype = np.complex128 if isinstance(t, complex) else np.float64
    h = hermitian(rng, 40, dtype)
    H = tenex.Tensor(h)

    def op(x, y):
        y["i"] = H["i,j"] * x["j"]

    x = rand(rng, (40,), np.float64)
    got = np.asarray(tenex.expm_multiply(op, x, t))
    w, v = np.linalg.eigh(h)
    want = v @ (np.exp(t * w) * (v.conj().T @ x))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.linalg.norm(want))
