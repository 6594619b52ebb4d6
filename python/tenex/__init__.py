"""tenex: tensor algebra in Einstein notation, evaluated by the tenex C++ library."""
from ._tenex import *  # noqa: F401,F403
