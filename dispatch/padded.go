package dispatch

import "torchtpu/hlo"

// Padded storages. A tensor that grows by appending (generate()'s token ids,
// a key/value cache) gets a new size every step, and every program that
// reads it would be compiled anew for each size. The engine may instead hold
// such a tensor padded along the growing dimension to a capacity, with the
// elements past its size set to zero; a rule that knows how to compute on
// the padded form reads it with ReadPadded and takes the size as a runtime
// scalar, so one program serves every size up to the capacity. Every other
// rule reads the tensor at its own size, as before.

// Padded is a tensor argument read in padded form: V has the argument's
// sizes except Cap in dimension Dim, its elements past the argument's size
// in that dimension are zeros, and Size holds that size as a rank-0 S64
// runtime input.
type Padded struct {
	V    *hlo.Value
	Dim  int
	Cap  int64
	Size *hlo.Value
}

// PaddedReader is implemented by readers that may hold tensors padded
// (engine/pad.go).
type PaddedReader interface {
	// ReadPadded returns tensor argument h in padded form along dim when it
	// is held so, read whole; ok is false otherwise.
	ReadPadded(h any, dim int) (p Padded, ok bool)
	// PaddedCap returns the capacity of tensor argument h when ReadPadded
	// would read it in padded form along dim, recording nothing.
	PaddedCap(h any, dim int) (capacity int64, ok bool)
	// Appended reports whether tensor argument h, read whole, holds the
	// result of an append along dim (a result declared with AppendedAt).
	Appended(h any, dim int) bool
	// PadCapacity returns the capacity a result of size n along a growing
	// dimension gets; ok is false when results are not padded now.
	PadCapacity(n int64) (capacity int64, ok bool)
	// Grows notes that a result named key has n elements and reports
	// whether it is a growing tensor's next size: a result of that name had
	// n-1 elements lately, and a tensor held padded now has size n along its
	// padded dimension.
	Grows(key string, n int64) bool
}

// PadResult is a result a rule returns in padded form, with its size along
// Dim; or, with Plain, a result at its own size that is an append along Dim.
type PadResult struct {
	Dim   int
	Size  int64
	Plain bool
}

// PadResultAt declares that result i is returned in padded form along dim,
// with size elements there; the engine keeps it padded when it can and cuts
// it to size otherwise.
func (c *Ctx) PadResultAt(i, dim int, size int64) {
	if c.Pads == nil {
		c.Pads = map[int]PadResult{}
	}
	c.Pads[i] = PadResult{Dim: dim, Size: size}
}

// AppendedAt declares that result i, returned at its own size, is the
// result of an append along dim: an append to it starts padding.
func (c *Ctx) AppendedAt(i, dim int) {
	if c.Pads == nil {
		c.Pads = map[int]PadResult{}
	}
	c.Pads[i] = PadResult{Dim: dim, Plain: true}
}

// readPadded is ReadPadded through the context's reader, when it has one.
func (c *Ctx) readPadded(i, index, dim int) (Padded, bool) {
	pr, ok := c.R.(PaddedReader)
	if !ok {
		return Padded{}, false
	}
	return pr.ReadPadded(c.Args[i].Handles[index], dim)
}

// paddedCap is PaddedCap through the context's reader, when it has one.
func (c *Ctx) paddedCap(i, index, dim int) (int64, bool) {
	pr, ok := c.R.(PaddedReader)
	if !ok {
		return 0, false
	}
	return pr.PaddedCap(c.Args[i].Handles[index], dim)
}

// appended is Appended through the context's reader, when it has one.
func (c *Ctx) appended(index, dim int) bool {
	pr, ok := c.R.(PaddedReader)
	return ok && pr.Appended(c.Args[0].Handles[index], dim)
}

// padCapacity is PadCapacity through the context's reader, when it has one.
func (c *Ctx) padCapacity(n int64) (int64, bool) {
	pr, ok := c.R.(PaddedReader)
	if !ok {
		return 0, false
	}
	return pr.PadCapacity(n)
}

// padTo pads v with zeros along dim to capacity elements.
func padTo(b *hlo.Builder, v *hlo.Value, dim int, capacity int64) *hlo.Value {
	n := v.T.Shape[dim]
	if n == capacity {
		return v
	}
	lo, hi := make([]int64, v.T.Rank()), make([]int64, v.T.Rank())
	hi[dim] = capacity - n
	return b.Pad(v, b.Scalar(v.T.Elem, 0), lo, hi, make([]int64, v.T.Rank()))
}

// ValidMask returns a bool value of shape whose element is true where its
// index along dim is below size (a runtime S64 scalar).
func ValidMask(b *hlo.Builder, shape []int64, dim int, size *hlo.Value) *hlo.Value {
	idx := b.Iota(hlo.T(hlo.S64, shape...), dim)
	return b.Compare(hlo.LT, idx, b.BroadcastInDim(size, shape, nil))
}

// growingCapacity returns the capacity for a result named key of n elements
// when it grows step by step beside a padded tensor (Grows: an arange over a
// growing key/value cache's positions); ok is false otherwise.
func (c *Ctx) growingCapacity(key string, n int64) (int64, bool) {
	pr, ok := c.R.(PaddedReader)
	if !ok || !pr.Grows(key, n) {
		return 0, false
	}
	return pr.PadCapacity(n)
}
