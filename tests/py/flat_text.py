"""Values as text, the same way for every reader the Zarr v3 checks compare: bytes as latin-1,
floats as the repr of a Python float (so NaN and every digit compare), times as numpy prints
them, other numpy scalars as their Python value."""

import numpy as np


def text(x):
    if isinstance(x, bytes):
        return x.decode("latin-1")
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, np.datetime64):
        return str(x)
    if isinstance(x, np.generic):
        return str(x.item())
    return str(x)


def flat(values):
    """Every element of `values`, flattened in C order, as text."""
    return [text(x) for x in np.asarray(values, dtype=object).ravel().tolist()]
