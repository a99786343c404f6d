"""The representative slice of op_db variants that the ratchet test runs on every `make test`."""

SLICE = [
    # Elementwise.
    "abs", "add", "sub", "mul", "div.no_rounding_mode", "neg", "exp", "log",
    "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "pow", "maximum", "clamp", "where", "eq",
    "logical_not", "masked_fill", "lerp", "addcmul", "reciprocal", "floor", "erf", "remainder",
    # Reductions.
    "sum", "mean", "amax", "argmax", "prod", "var", "std", "logsumexp", "all", "max.reduction_with_dim",
    "cumsum",
    # Matmul.
    "mm", "bmm", "matmul", "addmm", "nn.functional.linear", "einsum", "baddbmm",
    # Indexing.
    "gather", "index_select", "scatter", "scatter_add", "index_add", "take_along_dim", "__getitem__",
    "index_put",
    # Shape ops.
    "reshape", "view", "permute", "transpose", "cat", "stack", "squeeze", "unsqueeze", "expand",
    "flatten", "split", "narrow", "select", "flip", "roll", "tril",
    # Softmax.
    "softmax", "log_softmax",
    # nn.functional.
    "nn.functional.relu", "nn.functional.gelu", "nn.functional.silu", "nn.functional.layer_norm",
    "nn.functional.cross_entropy", "nn.functional.mse_loss", "nn.functional.embedding",
    "nn.functional.conv2d", "nn.functional.max_pool2d", "nn.functional.grid_sample",
    # Linear algebra (loops over columns and Jacobi sweeps).
    "linalg.solve", "linalg.cholesky", "linalg.qr", "linalg.eigh", "linalg.svd",
    # Complex values and FFT.
    "fft.fft", "fft.irfft", "polar",
    # Special functions computed by loops.
    "special.chebyshev_polynomial_t", "igamma",
]
