package dispatch

import "fmt"

// outDType says how an out= operator's CPU kernel treats an out tensor whose
// dtype differs from the result's.
type outDType struct {
	// msg formats the error from the result's and the out's dtypes; nil for
	// kernels that accept any out dtype (they compute in it).
	msg func(res, out DType) string
	// cast marks kernels that accept an out the result casts to safely and
	// raise TypeError otherwise (cat).
	cast bool
}

func exact(format string, name func(DType) string, outFirst bool) outDType {
	return outDType{msg: func(res, out DType) string {
		if outFirst {
			return fmt.Sprintf(format, name(out), name(res))
		}
		return fmt.Sprintf(format, name(res), name(out))
	}}
}

// The messages of CPU kernels that want out's dtype to equal the result's.
var (
	outStructured = exact("Expected out tensor to have dtype %s, but got %s instead", cppName, false)
	outUnary      = exact("Found dtype %s but expected %s", scalarTypeName, true)
	outScalarType = exact("expected scalar type %s but found %s", scalarTypeName, false)
	outAnyDType   = outDType{}
)

func fixed(msg string) outDType {
	return outDType{msg: func(res, out DType) string { return msg }}
}

// outDTypes lists the out= operators whose CPU kernel does not cast its
// result into any out dtype it casts to safely, as TensorIterator's kernels do.
var outDTypes = map[string]outDType{
	// Structured kernels outside TensorIterator: the out dtype must be the result's.
	"aten::addmm.out": outStructured, "aten::addmv.out": outStructured, "aten::aminmax.out": outStructured,
	"aten::baddbmm.out": outStructured, "aten::bmm.out": outStructured, "aten::mm.out": outStructured,
	"aten::linalg_cross.out": outStructured, "aten::gather.out": outStructured, "aten::index_add.out": outStructured,
	"aten::index_copy.out": outStructured, "aten::index_reduce.out": outStructured,
	"aten::scatter.src_out": outStructured, "aten::scatter.value_out": outStructured,
	"aten::scatter.reduce_out": outStructured, "aten::scatter.value_reduce_out": outStructured,
	"aten::scatter_add.out": outStructured, "aten::scatter_reduce.two_out": outStructured,
	"aten::linalg_cholesky_ex.L": outStructured, "aten::_linalg_det.result": outStructured,
	"aten::_linalg_eigh.eigenvalues": outStructured, "aten::linalg_inv_ex.inverse": outStructured,
	"aten::linalg_ldl_factor_ex.out": outStructured, "aten::linalg_ldl_solve.out": outStructured,
	"aten::linalg_lu.out": outStructured, "aten::linalg_lu_factor_ex.out": outStructured,
	"aten::linalg_lu_solve.out": outStructured, "aten::linalg_qr.out": outStructured,
	"aten::_linalg_slogdet.sign": outStructured, "aten::_linalg_solve_ex.result": outStructured,
	"aten::_linalg_svd.U": outStructured, "aten::linalg_vector_norm.out": outStructured,
	"aten::lu_unpack.out": outStructured, "aten::triangular_solve.X": outStructured,
	"aten::log_softmax.int_out": outStructured, "aten::softmax.int_out": outStructured,
	"aten::_log_softmax.out": outStructured, "aten::_softmax.out": outStructured,
	"aten::max.dim_max": outStructured, "aten::min.dim_min": outStructured, "aten::sort.values": outStructured,
	"aten::sort.values_stable": outStructured, "aten::topk.values": outStructured,
	"aten::avg_pool2d.out": outStructured, "aten::avg_pool3d.out": outStructured, "aten::renorm.out": outStructured,
	"aten::tril.out": outStructured, "aten::triu.out": outStructured, "aten::argmax.out": outStructured,
	"aten::argmin.out": outStructured, "aten::isin.Tensor_Tensor_out": outStructured,
	"aten::isin.Tensor_Scalar_out": outStructured, "aten::isin.Scalar_Tensor_out": outStructured,
	"aten::linear.out": outStructured, "aten::linalg_polar.out": outStructured,
	// Unary kernels that keep their input's dtype.
	"aten::abs.out": outUnary, "aten::ceil.out": outUnary, "aten::floor.out": outUnary, "aten::trunc.out": outUnary,
	"aten::frac.out": outUnary, "aten::neg.out": outUnary, "aten::round.out": outUnary,
	"aten::round.decimals_out": outUnary, "aten::sgn.out": outUnary, "aten::sign.out": outUnary,
	"aten::conj_physical.out": outUnary, "aten::bitwise_not.out": outUnary, "aten::gelu.out": outUnary,
	"aten::hardshrink.out": outUnary, "aten::softplus.out": outUnary, "aten::softshrink.out": outUnary,
	// Kernels with messages of their own.
	"aten::native_batch_norm.out": outScalarType, "aten::_native_batch_norm_legit.out": outScalarType,
	"aten::linalg_solve_triangular.out": outScalarType, "aten::log_sigmoid_forward.output": outScalarType,
	"aten::cummax.out":           exact("expected scalar_type %s but found %s", scalarTypeName, false),
	"aten::cummin.out":           exact("expected scalar_type %s but found %s", scalarTypeName, false),
	"aten::dot.out":              exact("result dtype %s does not match input dtype %s", scalarTypeName, true),
	"aten::vdot.out":             exact("result dtype %s does not match input dtype %s", scalarTypeName, true),
	"aten::amax.out":             exact("Expected the dtype for input and out to match, but got %s for input's dtype and %s for out's dtype.", scalarTypeName, false),
	"aten::amin.out":             exact("Expected the dtype for input and out to match, but got %s for input's dtype and %s for out's dtype.", scalarTypeName, false),
	"aten::complex.out":          exact("Expected object of scalar type %s but got scalar type %s for argument 'out'", scalarTypeName, false),
	"aten::polar.out":            exact("Expected object of scalar type %s but got scalar type %s for argument 'out'", scalarTypeName, false),
	"aten::histc.out":            exact("torch.histogram: input tensor and hist tensor should have the same dtype, but got input %s and hist %s", cppName, false),
	"aten::histogram.bin_ct_out": exact("torch.histogram: input tensor and hist tensor should have the same dtype, but got input %s and hist %s", cppName, false),
	"aten::mv.out": outDType{msg: func(res, out DType) string {
		return fmt.Sprintf("addmv input tensors must have the same dtype, but got %s, %s, and %s", scalarTypeName(out), scalarTypeName(res), scalarTypeName(res))
	}},
	"aten::addbmm.out":                exact("self and mat2 must have the same dtype, but got %s and %s", scalarTypeName, true),
	"aten::all.out":                   exact("all only supports bool tensor for result, got: %s", scalarTypeName, true),
	"aten::all.dims_out":              exact("all only supports bool tensor for result, got: %s", scalarTypeName, true),
	"aten::any.out":                   exact("any only supports bool tensor for result, got: %s", scalarTypeName, true),
	"aten::any.dims_out":              exact("any only supports bool tensor for result, got: %s", scalarTypeName, true),
	"aten::histogram.bins_tensor_out": exact("torch.histogram: input tensor and hist tensor should have the same dtype, but got input %s and hist %s", cppName, false),
	"aten::all.all_out":               exact("all only supports bool tensor for result, got: %s", scalarTypeName, true),
	"aten::any.all_out":               exact("any only supports bool tensor for result, got: %s", scalarTypeName, true),
	"aten::frexp.Tensor_out":          exact("torch.frexp() expects mantissa to have dtype %s but got %s", cppName, false),
	"aten::hash_tensor.out":           exact("Expected result to be of dtype uint64, but got %s", scalarTypeName, true),
	"aten::heaviside.out":             fixed("heaviside is not yet implemented for tensors with different dtypes."),
	"aten::index_select.out":          fixed("index_select(): self and result must have the same scalar type"),
	"aten::masked_select.out":         fixed("masked_select(): self and result must have the same scalar type"),
	"aten::isneginf.out":              fixed("isneginf does not support non-boolean outputs."),
	"aten::isposinf.out":              fixed("isposinf does not support non-boolean outputs."),
	"aten::signbit.out":               fixed("signbit does not support non-boolean outputs."),
	"aten::kthvalue.values":           fixed("output values must be of same type as input"),
	"aten::nan_to_num.out":            exact("nan_to_num: dtype of out: %s should be same as input: %s", scalarTypeName, true),
	"aten::nonzero.out":               exact("nonzero: Expected out tensor to have scalar type Long but got scalar type%s", scalarTypeName, true),
	"aten::ormqr.out":                 exact("torch.ormqr: Expected input and result to have the same dtype, but input has dtype%s and result has dtype %s", scalarTypeName, false),
	"aten::take.out":                  exact("take(): self and out expected to have the same dtype, but got self.dtype = %s and out.dtype = %s", scalarTypeName, false),
	"aten::where.self_out":            exact("Expected out type to be %s but got %s", scalarTypeName, false),
	"aten::searchsorted.Tensor_out":   exact("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype %s", scalarTypeName, true),
	"aten::searchsorted.Scalar_out":   exact("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype %s", scalarTypeName, true),
	"aten::bucketize.Tensor_out":      exact("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype %s", scalarTypeName, true),
	// Kernels that compute in the out dtype, whatever it is.
	"aten::bernoulli.out":       outAnyDType,
	"aten::bernoulli.float_out": outAnyDType, "aten::bernoulli.Tensor_out": outAnyDType,
	// cat's kernel casts, but raises TypeError for an unsafe cast.
	"aten::cat.out": {cast: true}, "aten::stack.out": {cast: true}, "aten::_chunk_cat.out": {cast: true},
}

// CastError is the error TensorIterator raises when a result of dtype res
// cannot be cast safely into a written tensor of dtype out.
func CastError(res, out DType) error {
	return Errorf("result type %s can't be cast to the desired output type %s", scalarTypeName(res), scalarTypeName(out))
}

// CheckOutDType applies the dtype rule of the out= operator running in c to
// its result i, of dtype res, written into an out tensor of dtype out. It returns
// whether the write may convert without PyTorch's safe-cast check (the kernel
// computes in out's dtype), or the error CPU raises.
func (c *Ctx) CheckOutDType(i int, res, out DType) (anyCast bool, err error) {
	if c.Op == "aten::abs.out" && c.Meta(0).DType.IsComplex() {
		return true, nil // CPU copies complex magnitudes into an out of any dtype
	}
	if c.Op == "aten::mode.values" && res != out {
		return false, Errorf("expected scalar type '%s' but got '%s' for %s output", scalarTypeName(res), scalarTypeName(out), []string{"values", "indices"}[i])
	}
	return CheckOutDType(c.Op, res, out)
}

// CheckOutDType is Ctx.CheckOutDType for out= operator op.
func CheckOutDType(op string, res, out DType) (anyCast bool, err error) {
	switch op {
	case "aten::nansum.out":
		if !out.IsFloat() && res.IsFloat() {
			return false, notImplemented("nansum_cpu", out)
		}
		return true, nil
	case "aten::normal.Tensor_Tensor_out", "aten::normal.Tensor_float_out", "aten::normal.float_Tensor_out",
		"aten::normal.float_float_out":
		if !out.IsFloat() {
			return false, notImplemented("normal_kernel_cpu", out)
		}
	}
	r, ok := outDTypes[op]
	switch {
	case !ok:
		return false, nil
	case r.cast:
		if !CanCast(res, out) {
			return false, TypeErrorf("torch.cat(): input types can't be cast to the desired output type %s", scalarTypeName(out))
		}
		return false, nil
	case r.msg == nil:
		return true, nil
	case res != out:
		return false, Errorf("%s", r.msg(res, out))
	}
	return false, nil
}

// Resize modes of out= arguments, as bridge/torchtpu.h's TTPU_RESIZE_*.
const (
	ResizeWarn        = 0 // contiguous, with PyTorch's resize warning (resize_output)
	ResizeQuiet       = 1 // contiguous, no warning (the kernel calls resize_ itself)
	ResizeColumnMajor = 2 // with the warning, then batched column-major strides
)

// outResize lists, per out= argument, the out= operators whose CPU kernel
// resizes a wrongly sized out otherwise than resize_output does.
var outResize = map[string][]int{
	"aten::arange.out": {ResizeQuiet}, "aten::arange.start_out": {ResizeQuiet},
	"aten::linspace.out": {ResizeQuiet}, "aten::linspace.Tensor_Tensor_out": {ResizeQuiet},
	"aten::linspace.Tensor_Scalar_out": {ResizeQuiet}, "aten::linspace.Scalar_Tensor_out": {ResizeQuiet},
	"aten::logspace.out": {ResizeQuiet}, "aten::logspace.Tensor_Tensor_out": {ResizeQuiet},
	"aten::logspace.Tensor_Scalar_out": {ResizeQuiet}, "aten::logspace.Scalar_Tensor_out": {ResizeQuiet},
	"aten::eye.out": {ResizeQuiet}, "aten::eye.m_out": {ResizeQuiet}, "aten::addbmm.out": {ResizeQuiet},
	"aten::log_sigmoid_forward.output": {ResizeQuiet, ResizeQuiet}, "aten::multinomial.out": {ResizeQuiet},
	"aten::bernoulli.out": {ResizeQuiet}, "aten::bernoulli.float_out": {ResizeQuiet},
	"aten::bernoulli.Tensor_out": {ResizeQuiet},
	// LAPACK-backed results: matrices in column-major order.
	"aten::linalg_cholesky_ex.L":        {ResizeColumnMajor, ResizeWarn},
	"aten::linalg_inv_ex.inverse":       {ResizeColumnMajor, ResizeWarn},
	"aten::_linalg_eigh.eigenvalues":    {ResizeWarn, ResizeColumnMajor},
	"aten::linalg_ldl_factor_ex.out":    {ResizeColumnMajor, ResizeWarn, ResizeWarn},
	"aten::linalg_lu_factor_ex.out":     {ResizeColumnMajor, ResizeWarn, ResizeWarn},
	"aten::_linalg_solve_ex.result":     {ResizeColumnMajor, ResizeColumnMajor, ResizeWarn, ResizeWarn},
	"aten::linalg_qr.out":               {ResizeColumnMajor, ResizeColumnMajor},
	"aten::triangular_solve.X":          {ResizeColumnMajor, ResizeColumnMajor},
	"aten::linalg_solve_triangular.out": {ResizeColumnMajor},
	"aten::linalg_ldl_solve.out":        {ResizeColumnMajor},
	"aten::linalg_lu_solve.out":         {ResizeColumnMajor},
}

// OutResizeMode returns how out= argument k of op is resized when its size is
// wrong (one of the Resize* modes).
func OutResizeMode(op string, k int) int {
	if m := outResize[op]; k < len(m) {
		return m[k]
	}
	return ResizeWarn
}
