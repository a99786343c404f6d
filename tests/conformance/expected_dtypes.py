"""Known failures of the dtypes sweep (test_sweep_dtypes.py): {case id: reason}, grouped by reason."""

_CPU_NAN = (
    "CPU's half-precision matrix_exp overflows to NaN; tpu computes in float32 and gives finite values"
)
_HALF = (
    "half precision: a few elements differ from CPU's by more than the default tolerance (CPU rounds "
    'intermediate results of this op in its own order)'
)
_SPARSE = (
    'sparse CSR tensors have no tpu kernels'
)
_STRIDES_LSTSQ = (
    "linalg.lstsq's solution is laid out as CPU's LAPACK workspace leaves it (column-major, inside an "
    "max(m, n)-row buffer); there is no meta kernel to ask, so tpu's is row-major"
)
_TOL_COMPLEX64 = (
    "complex64: values differ from CPU's past the tolerance by a last-digit rounding "
    '(nn.functional.conv_transpose3d)'
)

EXPECTED = {
    # CPU's half-precision matrix_exp overflows to NaN; tpu computes in float32 and gives finite values
    'matrix_exp/bfloat16': _CPU_NAN,
    'matrix_exp/float16': _CPU_NAN,
    # half precision: a few elements differ from CPU's by more than the default tolerance (CPU rounds inte
    '_batch_norm_with_update/bfloat16': _HALF,
    '_batch_norm_with_update/float16': _HALF,
    '_native_batch_norm_legit/bfloat16': _HALF,
    '_native_batch_norm_legit/float16': _HALF,
    'addr/bfloat16': _HALF,
    'addr/float16': _HALF,
    'cross/float16': _HALF,
    'grid_sampler_2d/float16': _HALF,
    'grid_sampler_3d/float16': _HALF,
    'linalg.cross/float16': _HALF,
    'log_softmax/bfloat16': _HALF,
    'log_softmax/float16': _HALF,
    'logit/bfloat16': _HALF,
    'logit/float16': _HALF,
    'native_batch_norm/bfloat16': _HALF,
    'native_batch_norm/float16': _HALF,
    'nn.functional.adaptive_avg_pool3d/bfloat16': _HALF,
    'nn.functional.adaptive_avg_pool3d/float16': _HALF,
    'nn.functional.batch_norm/bfloat16': _HALF,
    'nn.functional.batch_norm/float16': _HALF,
    'nn.functional.conv_transpose2d/bfloat16': _HALF,
    'nn.functional.conv_transpose3d/bfloat16': _HALF,
    'nn.functional.embedding_bag/float16': _HALF,
    'nn.functional.grid_sample/float16': _HALF,
    'nn.functional.instance_norm/bfloat16': _HALF,
    'nn.functional.instance_norm/float16': _HALF,
    'nn.functional.interpolate.bicubic/float16': _HALF,
    'nn.functional.interpolate.linear/bfloat16': _HALF,
    'nn.functional.interpolate.linear/float16': _HALF,
    'nn.functional.interpolate.trilinear/bfloat16': _HALF,
    'nn.functional.interpolate.trilinear/float16': _HALF,
    'nn.functional.linear_cross_entropy.chunked_none/bfloat16': _HALF,
    # sparse CSR tensors have no tpu kernels
    'sparse.mm.reduce/bfloat16': _SPARSE,
    'sparse.mm.reduce/float16': _SPARSE,
    'sparse.mm.reduce/float64': _SPARSE,
    'sparse.sampled_addmm/complex128': _SPARSE,
    'sparse.sampled_addmm/complex64': _SPARSE,
    'sparse.sampled_addmm/float64': _SPARSE,
    # linalg.lstsq's solution is laid out as CPU's LAPACK workspace leaves it (column-major, inside an max
    'linalg.lstsq.grad_oriented/complex128': _STRIDES_LSTSQ,
    'linalg.lstsq.grad_oriented/complex64': _STRIDES_LSTSQ,
    'linalg.lstsq.grad_oriented/float64': _STRIDES_LSTSQ,
    'linalg.lstsq/complex128': _STRIDES_LSTSQ,
    'linalg.lstsq/complex64': _STRIDES_LSTSQ,
    'linalg.lstsq/float64': _STRIDES_LSTSQ,
    # complex64: values differ from CPU's past the tolerance by a last-digit rounding (nn.functional.conv_
    'nn.functional.conv_transpose3d/complex64': _TOL_COMPLEX64,
}
