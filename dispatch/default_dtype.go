package dispatch

import "sync/atomic"

// defaultFloat is torch.get_default_dtype() as the shim last reported it.
var defaultFloat atomic.Int32

func init() { defaultFloat.Store(int32(Float32)) }

// DefaultFloat returns PyTorch's default floating dtype: the dtype integer
// operands become in true division and floating unary ops, and the dtype of a
// Python float in type promotion.
func DefaultFloat() DType { return DType(defaultFloat.Load()) }

// SetDefaultFloat records a new default floating dtype and reports whether it
// changed. Only the dtypes torch.set_default_dtype accepts are valid.
func SetDefaultFloat(d DType) (bool, error) {
	switch d {
	case Float32, Float64, Float16, BFloat16:
	default:
		return false, Errorf("the default dtype must be a floating dtype, not %s", d)
	}
	return DType(defaultFloat.Swap(int32(d))) != d, nil
}
