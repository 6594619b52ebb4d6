"""The algebra from Python against numpy: operators, scalars, mixed dtypes, element-wise
functions, reductions, decompositions (by their identities), matrix functions, sparse maps,
explain and the controls."""
import numpy as np
import pytest

import tenex

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
REAL = [np.float32, np.float64]


def is_complex(dtype):
    return np.issubdtype(dtype, np.complexfloating)


def rand(rng, shape, dtype, low=-1.0, high=1.0):
    x = rng.uniform(low, high, shape)
    if is_complex(dtype):
        x = x + 1j * rng.uniform(low, high, shape)
    return x.astype(dtype)


def tol(dtype):
    single = np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.complex64))
    return {"rtol": 2e-4, "atol": 2e-5} if single else {"rtol": 1e-11, "atol": 1e-12}


def run(expr, labels=None):
    """The value of an expression, in a Tensor that takes its shape and dtype (labels: its free
    labels; a product lists its summed ones too)."""
    out = tenex.Tensor()
    out[",".join(expr.labels) if labels is None else labels] = expr
    return out.numpy()


def hermitian_pd(rng, n, dtype):
    x = rand(rng, (n, n), dtype)
    return (x @ x.conj().T + n * np.eye(n)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_operators(dtype):
    rng = np.random.default_rng(10)
    a, b = rand(rng, (3, 4), dtype), rand(rng, (4, 3), dtype, 0.5, 1.5)
    A, B = tenex.Tensor(a), tenex.Tensor(b)
    t = tol(dtype)
    np.testing.assert_allclose(run(A["i,j"] + B["j,i"]), a + b.T, **t)
    np.testing.assert_allclose(run(A["i,j"] - B["j,i"]), a - b.T, **t)
    np.testing.assert_allclose(run(A["i,j"] / B["j,i"]), a / b.T, **t)
    np.testing.assert_allclose(run(A["i,k"] * B["k,j"], "i,j"), a @ b, **t)
    np.testing.assert_allclose(run(-A["i,j"]), -a, **t)
    np.testing.assert_allclose(run(+A["i,j"]), a, **t)
    # broadcast by label
    e = tenex.Tensor(rand(rng, (3,), dtype))
    np.testing.assert_allclose(run(A["i,j"] - e["i"]), a - np.asarray(e)[:, None], **t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [2, 0.5, np.float64(-1.5), np.float32(3.0), np.int64(2)])
def test_real_scalars_on_either_side(dtype, scalar):
    rng = np.random.default_rng(11)
    a = rand(rng, (2, 3), dtype, 0.5, 1.5)
    A = tenex.Tensor(a)
    s = float(scalar)
    t = tol(dtype)
    cases = [
        (A["i,j"] + scalar, a + s), (scalar + A["i,j"], s + a),
        (A["i,j"] - scalar, a - s), (scalar - A["i,j"], s - a),
        (A["i,j"] * scalar, a * s), (scalar * A["i,j"], s * a),
        (A["i,j"] / scalar, a / s), (scalar / A["i,j"], s / a),
    ]
    for expr, expected in cases:
        assert expr.dtype == np.dtype(dtype)
        np.testing.assert_allclose(run(expr), expected, **t)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [1.5 - 2j, np.complex64(0.5 + 1j), np.complex128(-1j)])
def test_complex_scalars_on_either_side(dtype, scalar):
    rng = np.random.default_rng(12)
    a = rand(rng, (2, 3), dtype, 0.5, 1.5)
    A = tenex.Tensor(a)
    s = complex(scalar)
    t = tol(np.complex64 if dtype in (np.float32, np.complex64) else np.complex128)
    cases = [
        (A["i,j"] + scalar, a + s), (scalar + A["i,j"], s + a),
        (A["i,j"] - scalar, a - s), (scalar - A["i,j"], s - a),
        (A["i,j"] * scalar, a * s), (scalar * A["i,j"], s * a),
        (A["i,j"] / scalar, a / s), (scalar / A["i,j"], s / a),
    ]
    for expr, expected in cases:
        assert is_complex(expr.dtype)  # a real expression becomes complex
        np.testing.assert_allclose(run(expr), expected, **t)


# Scalars numpy 1.24 casts by value: Python, numpy and 0-d array scalars, real and complex,
# within float32's range (the expression keeps its precision) and past it (3.5e38, 1e300: 64-bit).
PROMOTED_SCALARS = [1 / 3, 1e38, 3.5e38, -1e300, 2, 2**40, np.int64(7), np.float32(3.0), np.float64(1 / 3),
                    np.float64(-3.5e38), 1 / 3 + 2j, complex(1e38, -1), complex(1, 3.5e38), np.complex64(1j),
                    np.complex128(1e300j), np.array(1 / 3), np.array(1e300), np.array(0.5, np.float32),
                    np.array(2 - 1e300j), np.array(0.25j, np.complex64)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", PROMOTED_SCALARS, ids=repr)
def test_scalar_promotion_matches_numpy(dtype, scalar):
    rng = np.random.default_rng(14)
    a = rand(rng, (2, 3), dtype, 0.5, 1.5)
    A = tenex.Tensor(a)
    cases = [
        (A["i,j"] + scalar, a + scalar), (scalar + A["i,j"], scalar + a),
        (A["i,j"] - scalar, a - scalar), (scalar - A["i,j"], scalar - a),
        (A["i,j"] * scalar, a * scalar), (scalar * A["i,j"], scalar * a),
        (A["i,j"] / scalar, a / scalar), (scalar / A["i,j"], scalar / a),
    ]
    for k, (expr, expected) in enumerate(cases):
        assert expr.dtype == expected.dtype == np.result_type(a, scalar), (k, expr.dtype, expected.dtype)
        np.testing.assert_allclose(run(expr), expected, **tol(expected.dtype))


def test_mixed_dtypes_promote():
    rng = np.random.default_rng(13)
    f32, f64 = rand(rng, (3,), np.float32), rand(rng, (3,), np.float64)
    c64, c128 = rand(rng, (3,), np.complex64), rand(rng, (3,), np.complex128)
    T = {k: tenex.Tensor(v) for k, v in dict(f32=f32, f64=f64, c64=c64, c128=c128).items()}
    for x, y, dtype in [("f32", "f64", np.float64), ("f32", "c64", np.complex64), ("f64", "c64", np.complex128),
                        ("f32", "c128", np.complex128), ("c64", "c128", np.complex128)]:
        expr = T[x]["i"] * T[y]["i"]
        assert expr.dtype == np.dtype(dtype), (x, y)
        expected = np.asarray(T[x]).astype(dtype) * np.asarray(T[y]).astype(dtype)
        np.testing.assert_allclose(run(expr), expected, **tol(np.float32 if "32" in x + y else dtype))
    # a narrower target: real from complex, float32 from float64 raise TypeError, nothing written
    target = np.zeros(3, np.float32)
    for source in ("f64", "c64"):
        with pytest.raises(TypeError):
            tenex.Tensor(target)["i"] = T[source]["i"]
    assert not target.any()
    # a wider target takes it
    wide = tenex.Tensor((3,), dtype=np.complex128)
    wide["i"] = T["f32"]["i"]
    np.testing.assert_allclose(wide.numpy(), f32.astype(np.complex128), rtol=1e-6)
    np.testing.assert_allclose(run(tenex.cast(T["c64"]["i"], np.complex128)), c64.astype(np.complex128), rtol=1e-6)
    with pytest.raises(TypeError):
        tenex.cast(T["c64"]["i"], np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_functions(dtype):
    rng = np.random.default_rng(14)
    a = rand(rng, (3, 4), dtype, 0.2, 1.0)
    A = tenex.Tensor(a)
    x = A["i,j"]
    t = tol(dtype)
    pairs = [
        (tenex.exp, np.exp), (tenex.log, np.log), (tenex.sqrt, np.sqrt), (tenex.square, np.square),
        (tenex.sin, np.sin), (tenex.cos, np.cos), (tenex.tanh, np.tanh), (tenex.reciprocal, np.reciprocal),
        (tenex.conj, np.conj), (tenex.abs, np.abs), (tenex.real, np.real), (tenex.imag, np.imag),
        (tenex.arg, np.angle),
    ]
    for ours, theirs in pairs:
        result = run(ours(x))
        np.testing.assert_allclose(result, theirs(a), err_msg=ours.__name__, **t)
    # real values of complex elements are real
    for f in (tenex.abs, tenex.real, tenex.imag, tenex.arg):
        assert not is_complex(f(x).dtype)
    np.testing.assert_allclose(run(tenex.power(x, 2.5)), a ** 2.5, **t)
    np.testing.assert_allclose(float(run(tenex.norm2(x))), np.linalg.norm(a), **t)


@pytest.mark.parametrize("dtype", REAL)
def test_real_only_functions(dtype):
    rng = np.random.default_rng(15)
    a, b = rand(rng, (3, 4), dtype), rand(rng, (3, 4), dtype)
    A, B = tenex.Tensor(a), tenex.Tensor(b)
    t = tol(dtype)
    np.testing.assert_allclose(run(tenex.sign(A["i,j"])), np.sign(a), **t)
    np.testing.assert_allclose(run(tenex.clamp(A["i,j"], -0.5, 0.25)), np.clip(a, -0.5, 0.25), **t)
    np.testing.assert_allclose(run(tenex.max(A["i,j"], B["i,j"])), np.maximum(a, b), **t)
    np.testing.assert_allclose(run(tenex.min(A["i,j"], B["i,j"])), np.minimum(a, b), **t)
    np.testing.assert_allclose(run(tenex.max_over(A["i,j"], "j")), a.max(axis=1), **t)
    np.testing.assert_allclose(run(tenex.min_over(A["i,j"], "i")), a.min(axis=0), **t)
    np.testing.assert_allclose(run(tenex.erf(A["i,j"])), [[__import__("math").erf(v) for v in r] for r in a], **t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_slice_chip(dtype):
    rng = np.random.default_rng(16)
    a = rand(rng, (3, 4, 5), dtype)
    A = tenex.Tensor(a)
    t = tol(dtype)
    np.testing.assert_allclose(run(tenex.sum(A["i,j,k"], "j,k")), a.sum(axis=(1, 2)), **t)
    np.testing.assert_allclose(run(tenex.slice(A["i,j,k"], [1, 0, 2], [3, 4, 5])), a[1:3, :, 2:5], **t)
    np.testing.assert_allclose(run(tenex.chip(A["i,j,k"], "j", 2)), a[:, 2, :], **t)
    # the trace: a label repeated
    m = rand(rng, (4, 4), dtype)
    trace = tenex.Tensor()
    trace[""] = tenex.Tensor(m)["i,i"]
    np.testing.assert_allclose(trace.numpy(), np.trace(m), **t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cholesky(dtype):
    rng = np.random.default_rng(17)
    a = hermitian_pd(rng, 5, dtype)
    L = tenex.Tensor()
    L["i,j"] = tenex.cholesky(tenex.Tensor(a)["i,j"])
    l = L.numpy()
    np.testing.assert_allclose(np.triu(l, 1), 0)
    np.testing.assert_allclose(l @ l.conj().T, a, **tol(dtype))
    np.testing.assert_allclose(l, np.linalg.cholesky(a), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigen_solve(dtype):
    rng = np.random.default_rng(18)
    h = rand(rng, (6, 6), dtype)
    h = ((h + h.conj().T) / 2).astype(dtype)
    H = tenex.Tensor(h)
    V, w = tenex.Tensor(), tenex.Tensor()
    V["i,k"], w["k"] = tenex.eigen_solve(H["i,j"])
    v, e = V.numpy(), w.numpy()
    assert V.dtype == np.dtype(dtype)
    assert not is_complex(w.dtype)  # Hermitian eigenvalues are real
    t = tol(dtype)
    np.testing.assert_allclose(e, np.linalg.eigvalsh(h), **t)
    np.testing.assert_allclose(h @ v, v * e, **t)
    np.testing.assert_allclose(v.conj().T @ v, np.eye(6), **t)


@pytest.mark.parametrize("dtype", REAL + [np.complex128])
def test_generalized_eigen_solve(dtype):
    rng = np.random.default_rng(19)
    a = rand(rng, (5, 5), dtype)
    a = ((a + a.conj().T) / 2).astype(dtype)
    b = hermitian_pd(rng, 5, dtype)
    C, e = tenex.Tensor(), tenex.Tensor()
    with tenex.lazy():  # both factors from one call
        C["m,n"], e["n"] = tenex.eigen_solve(tenex.Tensor(a)["m,n"], tenex.Tensor(b)["m,n"])
    c, w = C.numpy(), e.numpy()
    t = tol(dtype)
    np.testing.assert_allclose(a @ c, b @ c * w, **t)
    np.testing.assert_allclose(c.conj().T @ b @ c, np.eye(5), **t)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qr(dtype):
    rng = np.random.default_rng(20)
    a = rand(rng, (6, 4), dtype)
    Q, R = tenex.Tensor(), tenex.Tensor()
    Q["i,k"], R["k,j"] = tenex.qr(tenex.Tensor(a)["i,j"])
    q, r = Q.numpy(), R.numpy()
    assert q.shape == (6, 4) and r.shape == (4, 4)
    t = tol(dtype)
    np.testing.assert_allclose(q @ r, a, **t)
    np.testing.assert_allclose(q.conj().T @ q, np.eye(4), **t)
    np.testing.assert_allclose(np.tril(r, -1), 0, atol=t["atol"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_svd(dtype):
    rng = np.random.default_rng(21)
    a = rand(rng, (4, 7), dtype)
    U, S, Vt = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
    with tenex.lazy():
        U["i,k"], S["k"], Vt["k,j"] = tenex.svd(tenex.Tensor(a)["i,j"])
    u, s, vt = U.numpy(), S.numpy(), Vt.numpy()
    assert not is_complex(s.dtype)
    t = tol(dtype)
    np.testing.assert_allclose((u * s) @ vt, a, **t)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), **t)


@pytest.mark.parametrize("dtype", REAL)
def test_truncated_svd(dtype):
    rng = np.random.default_rng(22)
    a = (rand(rng, (8, 3), dtype) @ rand(rng, (3, 6), dtype)).astype(dtype)  # rank 3
    U, S, Vt = tenex.Tensor(), tenex.Tensor(), tenex.Tensor()
    with tenex.lazy():
        U["i,k"], S["k"], Vt["k,j"] = tenex.svd(tenex.Tensor(a)["i,j"], tenex.Truncation(max_rank=5, cutoff=1e-6))
    result = tenex.last_truncation()
    assert result.rank == 3 and S.shape == (3,)
    rank, weight = result
    assert rank == 3 and 0 <= weight < 1e-6
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ Vt.numpy(), a, **tol(dtype))
    assert tenex.Truncation(max_rank=2).max_rank == 2 and tenex.Truncation().cutoff == 0.0


@pytest.mark.parametrize("dtype", DTYPES)
def test_inverse_solve_pow(dtype):
    rng = np.random.default_rng(23)
    a = (rand(rng, (4, 4), dtype) + 4 * np.eye(4)).astype(dtype)
    b = rand(rng, (4, 2), dtype)
    A, B = tenex.Tensor(a), tenex.Tensor(b)
    t = tol(dtype)
    np.testing.assert_allclose(run(tenex.inverse(A["i,j"])), np.linalg.inv(a), **t)
    X = tenex.Tensor()
    X["j,k"] = tenex.solve(A["i,j"], B["i,k"])
    np.testing.assert_allclose(a @ X.numpy(), b, **t)
    np.testing.assert_allclose(run(tenex.pow(A["i,j"], 3)), a @ a @ a, **t)
    np.testing.assert_allclose(run(tenex.pow(A["i,j"], -1)), np.linalg.inv(a), **t)
    s = hermitian_pd(rng, 4, np.float64)
    half = run(tenex.pow(tenex.Tensor(s)["i,j"], 0.5))
    np.testing.assert_allclose(half @ half, s, rtol=1e-10)


def test_decomposition_errors_raise_on_read():
    not_pd = -np.eye(3)
    L = tenex.Tensor()
    with pytest.raises(tenex.Error, match="potrf|positive"):
        L["i,j"] = tenex.cholesky(tenex.Tensor(not_pd)["i,j"])
    with pytest.raises(tenex.Error):
        tenex.cholesky(tenex.Tensor(np.zeros((2, 3)))["i,j"])  # not square


@pytest.mark.parametrize("form", ["dict", "array"])
def test_sparse_map(form):
    rng = np.random.default_rng(24)
    n = 5
    a = rng.uniform(-1, 1, (n, n))
    b = rng.uniform(-1, 1, (n, n))
    allowed = {i: [j for j in range(n) if abs(i - j) <= 1] for i in range(n)}  # a band
    mask = np.zeros((n, n), bool)
    for i, js in allowed.items():
        mask[i, js] = True
    mapping = allowed if form == "dict" else np.array([(i, j) for i, js in allowed.items() for j in js])
    A = tenex.Tensor(a * mask)
    C = tenex.Tensor()
    C["i,k"] = A["i,j"].set_sparse_map("i", "j", mapping) * tenex.Tensor(b)["j,k"]
    np.testing.assert_allclose(C.numpy(), (a * mask) @ b, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        A["i,j"].set_sparse_map("i", "j", np.zeros((3, 3), int))  # three columns for two modes


def test_explain_and_controls():
    a = tenex.Tensor(np.ones((3, 4)))
    b = tenex.Tensor(np.ones((4, 5)))
    text = tenex.explain(a["i,k"] * b["k,j"])
    assert isinstance(text, str) and "contract" in text and "k=4" in text
    c = tenex.Tensor()
    c["i,j"] = a["i,k"] * b["k,j"]
    assert "contract" in tenex.explain()  # the last set run on this thread
    tenex.set_backend("cpu")
    tenex.set_backend("auto")
    with pytest.raises(ValueError, match="libtenex_backend_gpu.so"):
        tenex.set_backend("gpu")
    assert "cpu" in tenex.backend_names()
    tenex.set_backend("cpu")
    assert tenex.default_backend_name() == "cpu"
    tenex.set_backend("auto")
    if not tenex.cuda_available():
        with pytest.raises(tenex.Error):
            tenex.set_backend("cuda")
        tenex.set_backend("auto")
    tenex.set_memory_limit(64)  # 64 bytes: the 3x4 * 4x5 product needs more
    try:
        d = tenex.Tensor()
        with pytest.raises(tenex.Error, match="limit"):
            d["i,l"] = a["i,k"] * b["k,j"] * tenex.Tensor(np.ones((5, 6)))["j,l"]
    finally:
        tenex.set_memory_limit(0)
    np.testing.assert_array_equal(c.numpy(), np.full((3, 5), 4.0))


def test_factors_assigned_in_turn_run_as_one_set():
    rng = np.random.default_rng(25)
    h = rng.uniform(-1, 1, (5, 5))
    h = h + h.T
    V, w = tenex.Tensor(), tenex.Tensor()
    V["i,k"], w["k"] = tenex.eigen_solve(tenex.Tensor(h)["i,j"])
    assert not V.pending and not w.pending
    assert "2 results" in tenex.explain()  # one set, one eigensolver call
    assert tenex.explain().count("eigen_solve") == 1
    # a factor assigned while the other is held waits for it, or for the factors to be dropped
    vectors, values = tenex.eigen_solve(tenex.Tensor(h)["i,j"])
    V2 = tenex.Tensor()
    V2["i,k"] = vectors
    assert V2.pending
    del vectors, values
    assert not V2.pending
    np.testing.assert_allclose(np.abs(V2.numpy()), np.abs(V.numpy()), rtol=1e-12, atol=1e-12)
    # a read before that waits
    q_factor, _ = tenex.qr(tenex.Tensor(h)["i,j"])
    Q = tenex.Tensor()
    Q["i,k"] = q_factor
    np.testing.assert_allclose(Q.numpy().T @ Q.numpy(), np.eye(5), atol=1e-12)


def test_augmented_assignment():
    a = np.arange(6.0).reshape(2, 3)
    C = tenex.Tensor(a.copy())
    C["i,j"] += tenex.Tensor(a)["i,j"]
    C["i,j"] *= 3.0
    np.testing.assert_array_equal(C.numpy(), 6 * a)
