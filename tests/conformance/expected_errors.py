"""Expected failures of the error-input sweep (test_sweep_errors.py): case id -> reason, grouped by reason.

A case listed here that passes fails the sweep until it is removed; a failing case not listed fails it too.
"""

_MAX_DIMS = ("tpu tensors have at most 12 dimensions (TTPU_MAX_DIMS): the error inputs build a tensor of more "
             "than 64 dimensions on the device, which fails before the op runs, so the op's later error inputs "
             "are not built either")

EXPECTED = {
    # The device's dimension limit.
    "amax/build": _MAX_DIMS,
    "amin/build": _MAX_DIMS,
    "aminmax/build": _MAX_DIMS,
    "median/build": _MAX_DIMS,
}
