package engine

import (
	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// OpOnLaidOut is OpOn where the caller names the memory order of the op's new
// results: layouts[k], when it is a permutation of result k's dimensions,
// lists them from the outermost in memory to the innermost, as PyTorch's
// strides for that result order them. The result's storage then holds the
// value transposed into that order (its base shape is the permuted sizes, as
// OutTensor.Sizes reports), so the caller's tensor views it with PyTorch's
// strides and every later read resolves as a transpose XLA fuses. Results
// without a layout, or with an identity one, stay contiguous. The layouts are
// a part of the fast paths' op signatures.
func (e *Engine) OpOnLaidOut(op string, device int, args []dispatch.Arg, layouts [][]int64) ([]OutTensor, error) {
	return e.opOn(op, device, args, layouts)
}

// outputOrder returns the memory order asked for new result k of rank n, or
// nil when it is contiguous or not a permutation of n dimensions.
func (e *Engine) outputOrder(k, n int) []int64 {
	if k >= len(e.layouts) {
		return nil
	}
	perm := e.layouts[k]
	if len(perm) != n || isIdentity(perm) {
		return nil
	}
	seen := make([]bool, n)
	for _, d := range perm {
		if d < 0 || int(d) >= n || seen[d] {
			return nil
		}
		seen[d] = true
	}
	return perm
}

func isIdentity(perm []int64) bool {
	for i, d := range perm {
		if d != int64(i) {
			return false
		}
	}
	return true
}

// laidOut transposes result r into the memory order perm (nil: r as it is).
func laidOut(b *hlo.Builder, r *hlo.Value, perm []int64) *hlo.Value {
	if perm == nil {
		return r
	}
	return b.Transpose(r, perm...)
}

// layoutsKey appends the asked layouts to an op signature.
func layoutsKey(u func(uint64), layouts [][]int64) {
	u(uint64(len(layouts)))
	for _, l := range layouts {
		u(uint64(len(l)))
		for _, d := range l {
			u(uint64(d))
		}
	}
}
