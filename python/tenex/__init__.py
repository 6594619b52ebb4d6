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



def from_dlpack(x):
    """A Tensor viewing the memory of any DLPack producer on the CPU (a torch or jax CPU tensor, a
    numpy array, ...), without a copy: numpy.from_dlpack's array, wrapped."""
    import numpy

    return Tensor(numpy.from_dlpack(x))


# `from tenex import *` leaves Python's builtins alone: tenex.sum, max, min, abs and pow are
# reached through the module (tenex.sum(...)).
_BUILTIN_NAMES = {"sum", "max", "min", "abs", "pow", "slice"}
__all__ = sorted(
    name for name in dir() if not name.startswith("_") and name not in _BUILTIN_NAMES
)
