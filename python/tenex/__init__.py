"""tenex: tensor algebra in Einstein notation, evaluated by the tenex C++ library.

    import numpy as np, tenex
    a, b = tenex.Tensor(np.random.rand(3, 4)), tenex.Tensor(np.random.rand(4, 5))
    c = tenex.Tensor()                       # takes the shape of its first result
    c["i,j"] = a["i,k"] * b["k,j"]           # runs at once, the GIL released
    with tenex.lazy():                       # the block's statements run at its end
        ...
"""
from ._tenex import *  # noqa: F401,F403
from ._tenex import __version__  # noqa: F401
from . import _tenex as _native
import functools as _functools


def from_dlpack(x):
    """A Tensor viewing the memory of any DLPack producer on the CPU (a torch or jax CPU tensor, a
    numpy array, ...), without a copy: numpy.from_dlpack's array, wrapped."""
    import numpy

    return Tensor(numpy.from_dlpack(x))


def _operator_on_arrays(op, x0):
    """The user's operator, a function of tenex Tensors (y = op(x), or op(x, y) writing y), as a
    function of numpy arrays for the native solvers. x and y are the same two Tensors at every
    call (views of two arrays), so the operator's statements hit the plan cache."""
    import inspect
    import numpy

    try:
        parameters = [
            p
            for p in inspect.signature(op).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        writes_y = len(parameters) >= 2
    except (TypeError, ValueError):
        writes_y = False
    x_array = numpy.zeros_like(x0)
    x = Tensor(x_array)
    y = Tensor(numpy.zeros_like(x0)) if writes_y else None

    def matvec(values):
        x_array[...] = values
        if writes_y:
            op(x, y)
            return numpy.asarray(y)
        return numpy.asarray(op(x))

    return matvec


def _as_array(x):
    import numpy

    return numpy.array(x, copy=True, order="C")


def eigsh(op, x0, k=1, which="smallest", tol=1e-10, max_iter=300, krylov_dim=30):
    """The k eigenpairs of a Hermitian operator at one end of its spectrum (thick-restart Lanczos):
    (values, vectors), values a numpy array best first (which="smallest": ascending; "largest":
    descending), vectors a list of normalized Tensors of x0's shape. `op` is a function of tenex
    Tensors: y = op(x), or op(x, y) writing y with statements (y["a,s"] = H["a,s,b,t"] * x["b,t"]).
    tenex.Error when it does not converge in max_iter restarts; docs/krylov.md."""
    start = _as_array(x0)
    values, vectors = _native._eigsh(_operator_on_arrays(op, start), start, k, which, tol, max_iter, krylov_dim)
    return values, [Tensor(v) for v in vectors]


def expm_multiply(op, x, t, tol=1e-12):
    """exp(t A) x by a Krylov method, as a Tensor of x's shape; `op` as for eigsh. A complex t (a
    complex x: real ones are promoted) evolves in real time: expm_multiply(h, psi, -1j * dt)."""
    import numpy

    start = _as_array(x)
    if isinstance(t, complex) and not numpy.iscomplexobj(start):
        start = start.astype(numpy.complex128 if start.dtype == numpy.float64 else numpy.complex64)
    return Tensor(_native._expm_multiply(_operator_on_arrays(op, start), start, complex(t), tol))


def _described(value):
    """A call's argument in a message: the shape and dtype of an array, not its elements."""
    import numpy

    if isinstance(value, numpy.ndarray):
        return f"numpy.ndarray(shape={value.shape}, dtype={value.dtype})"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)} items"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _short_type_errors(function):
    """pybind11 answers a call that matches no overload with every argument's repr: the elements
    of every array given (hundreds of kilobytes for an MPS). The same TypeError, the arguments
    described instead."""

    @_functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except TypeError as e:
            text = str(e)
            if "incompatible function arguments" not in text:
                raise
            given = [_described(a) for a in args] + [f"{k}={_described(v)}" for k, v in kwargs.items()]
            raise TypeError(text.split("\nInvoked with:")[0] + "\nInvoked with: " + ", ".join(given)) from None

    return call


for _name, _value in list(vars(_native).items()):
    if type(_value).__name__ == "builtin_function_or_method" and not _name.startswith("_"):
        globals()[_name] = _short_type_errors(_value)
del _name, _value

# `from tenex import *` leaves Python's builtins alone: tenex.sum, max, min, abs and pow are
# reached through the module (tenex.sum(...)).
_BUILTIN_NAMES = {"sum", "max", "min", "abs", "pow", "slice"}
__all__ = sorted(
    name for name in dir() if not name.startswith("_") and name not in _BUILTIN_NAMES
)
