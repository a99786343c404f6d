"""Known failures of the module sweep (test_sweep_modules.py): {case id: reason}, grouped by reason.

None are known: every sample of module_db passes in strict mode (with its channels_last variants), and in
fused and debug mode. Samples CPU itself rejects are excluded, not listed (NLLLoss with channels_last
inputs: CPU's backward requires a contiguous grad_input).
"""

EXPECTED = {
}
