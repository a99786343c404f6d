package engine

// Python numbers reach rules as Scalar calls. The policy (DESIGN.md,
// "Python numbers"): every number is a runtime input, one cached device
// buffer per distinct value, so learning rates, bias corrections and other
// values that change between steps never recompile — including a schedule
// that passes through 0 or 1, which a value-based rule would turn into a new
// program. Where PyTorch's own kernels specialize on a number's value (pow by
// 2, 3, 0.5, -0.5, -1, -2, 0 and 1; add and sub with alpha 1) the op's rule
// reads the value and lowers the specialized form itself, so XLA never sees
// a power with a runtime exponent. TORCHTPU_EMBED_SCALARS=1 embeds every
// number as a constant instead (a program per distinct value: for inference
// loops whose numbers never change, and to measure what constants buy).
var embedAllScalars bool // TORCHTPU_EMBED_SCALARS=1 (readSettings)
