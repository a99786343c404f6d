"""Known failures of the dtype sweep (test_sweep_dtypes.py): {case id: reason}, grouped by reason."""

EXPECTED = {
}
