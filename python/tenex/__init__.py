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
