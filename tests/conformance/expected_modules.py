"""Known failures of the module sweep (test_sweep_modules.py): {case id: reason}, grouped by reason."""

EXPECTED = {
}
