"""Expected failures of the error-input sweep (test_sweep_errors.py): case id -> reason, grouped by reason.

A case listed here that passes fails the sweep until it is removed; a failing case not listed fails it too.
"""

EXPECTED = {
}
