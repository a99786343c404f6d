package engine

import (
	"fmt"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// TensorDesc names a tensor argument: a view of a storage, or a
// zero-dimensional CPU tensor whose element bytes travel with it.
type TensorDesc struct {
	Addr    uint64
	Offset  int64
	DType   dispatch.DType
	Sizes   []int64
	Strides []int64
	CPU     bool
	Number  bool   // CPU only: a wrapped Python number, which promotes as a number
	Host    []byte // CPU only: the element
}

// Meta returns what a rule may know about the tensor without reading it.
func (t *TensorDesc) Meta() dispatch.TensorMeta {
	return dispatch.TensorMeta{Sizes: t.Sizes, DType: t.DType, ZeroDimCPU: t.CPU, Number: t.Number, Defined: t.Addr != 0 || t.CPU, Strides: t.Strides}
}

func (t *TensorDesc) view() view { return view{offset: t.Offset, sizes: t.Sizes, strides: t.Strides} }

// OutTensor is a new storage holding an op's result. Sizes is the storage's
// base shape: the result's sizes, permuted when the caller asked for a memory
// order other than the contiguous one (OpOnLaidOut).
type OutTensor struct {
	Addr   uint64
	NBytes int64
	DType  dispatch.DType
	Sizes  []int64
}

// Read implements dispatch.Reader: the value of a tensor argument.
func (e *Engine) Read(h any) *hlo.Value {
	t := h.(*TensorDesc)
	if t.CPU {
		if el := t.DType.Elem(); el.IsComplex() {
			half, part := len(t.Host)/2, t.DType.ToReal().Elem() // complex32's parts are float16
			re := e.Scalar(decodeScalar(t.Host[:half], part), el.Real())
			im := e.Scalar(decodeScalar(t.Host[half:], part), el.Real())
			return e.d.g.b.Complex(re, im)
		}
		if t.DType.IsIntegral(false) && len(t.Host) > 0 {
			return e.IntNumber(decodeInt64s(t.Host, t.DType)[0], t.DType.Elem())
		}
		return e.Scalar(decodeScalar(t.Host, t.DType.StoredElem()), t.DType.Elem())
	}
	if v, ok := e.padReads[t]; ok {
		return v // an argument read as held (pad_ops.go)
	}
	if v := e.captureRead(t); v != nil {
		return v
	}
	st, err := e.storageOf(t)
	if err != nil {
		panic(err)
	}
	if err := checkBounds(st, t); err != nil {
		panic(err)
	}
	if v, ok := e.readPaddedView(st, t); ok {
		return v
	}
	base := e.baseValue(st, t.DType)
	if e.windowAtRuntime(st) || st.pad == nil && st.pending != nil && e.offsetMoves(st, t, false) {
		// A window of a materialized storage (a batch sliced from a dataset
		// on the device, a row of a table), or one whose offset moved between
		// graphs (offsets.go), starts at runtime offsets, so the next window
		// reuses the program.
		return readViewWith(e.d.g.b, base, t.view(), e.windowStarts)
	}
	return readView(e.d.g.b, base, t.view())
}

// windowAtRuntime reports whether a view of st is read and written at
// runtime offsets: st holds a buffer, or a cold run records the op, whose
// one-op program then runs on st's buffer as a strict op's would (a storage
// pending in fused mode is sliced at its constant offsets, which XLA folds).
func (e *Engine) windowAtRuntime(st *Storage) bool {
	return st.pad == nil && (st.buf != nil && st.pending == nil || e.inColdRun())
}

// windowStarts returns runtime inputs holding the starts of a window read.
func (e *Engine) windowStarts(starts []int64) []*hlo.Value {
	vs := make([]*hlo.Value, len(starts))
	for i, s := range starts {
		buf := e.scalarBuffer(scalarKey{elem: hlo.S64, bits: uint64(s), exact: true})
		vs[i] = e.d.g.scalarParam(buf, hlo.T(hlo.S64))
	}
	return vs
}

// checkBounds rejects a view that reaches outside its storage.
func checkBounds(st *Storage, t *TensorDesc) error {
	if numel(t.Sizes) == 0 {
		return nil
	}
	hi := t.Offset
	for i, s := range t.Sizes {
		if t.Strides[i] < 0 {
			return fmt.Errorf("negative strides are not supported")
		}
		hi += (s - 1) * t.Strides[i]
	}
	if t.Offset < 0 || (hi+1)*int64(t.DType.Size()) > st.nbytes {
		return fmt.Errorf("a view of %s elements at offset %d reaches past its storage of %d bytes", dispatchShape(t.Sizes), t.Offset, st.nbytes)
	}
	return nil
}

func dispatchShape(s []int64) string { return fmt.Sprint(s) }

// baseValue returns st's whole value in the current graph, seen as dtype d,
// as rules compute d (stored.go). A storage never written reads as zeros.
func (e *Engine) baseValue(st *Storage, d dispatch.DType) *hlo.Value {
	b := e.d.g.b
	var v *hlo.Value
	if c := e.capture; c != nil && c.byStorage && !st.shaped {
		// A graph binds the storage: a later copy_ into it must be seen.
		if err := e.materialize(st, d); err != nil {
			panic(err)
		}
	}
	switch {
	case !st.shaped:
		return b.Constant(hlo.T(d.Elem(), st.nbytes/int64(d.Size())), 0)
	case st.pad != nil:
		v = cutTo(b, e.physValue(st), st.pad.dim, st.shape[st.pad.dim])
	case st.pending != nil:
		v = st.pending
	case st.buf != nil:
		v = e.d.g.param(st.buf, storedType(st.dtype, st.shape))
	default:
		v = b.Constant(storedType(st.dtype, st.shape), 0)
	}
	return load(b, reinterpret(b, v, st.dtype, d), d)
}

// reinterpret views the stored value v of dtype from as a stored value of
// dtype to, bit for bit. With different element sizes the result is flat
// (1-D) in units of to; PyTorch does this when it saves or loads a storage as
// raw bytes.
func reinterpret(b *hlo.Builder, v *hlo.Value, from, to dispatch.DType) *hlo.Value {
	if from == to {
		return v
	}
	if from == dispatch.ComplexHalf { // stored as float16 pairs
		return reinterpret(b, v, dispatch.Float16, to)
	}
	if to == dispatch.ComplexHalf {
		return halfPairs(b, reinterpret(b, v, from, dispatch.Float16))
	}
	if from == dispatch.Bool || to == dispatch.Bool {
		if from == dispatch.Bool {
			v, from = b.Convert(v, hlo.U8), dispatch.Uint8
		}
		if to == dispatch.Bool {
			u := reinterpret(b, v, from, dispatch.Uint8)
			return b.Compare(hlo.NE, u, b.BroadcastTo(b.Scalar(hlo.U8, 0), u.T.Shape))
		}
		return reinterpret(b, v, from, to)
	}
	if from.IsComplex() || to.IsComplex() {
		return reinterpretComplex(b, v, from, to)
	}
	if from.Size() == to.Size() {
		return b.BitcastConvert(v, to.StoredElem())
	}
	n := numel(v.T.Shape)
	flat := b.Reshape(v, n)
	if from.Size() > to.Size() {
		r := int64(from.Size() / to.Size())
		return b.Reshape(b.BitcastReshape(flat, hlo.T(to.StoredElem(), n, r)), n*r)
	}
	r := int64(to.Size() / from.Size())
	if n%r != 0 {
		panic(fmt.Errorf("viewing %d %s elements as %s leaves a partial element", n, from, to))
	}
	return b.BitcastReshape(b.Reshape(flat, n/r, r), hlo.T(to.StoredElem(), n/r))
}

// reinterpretComplex is reinterpret where from or to is complex. XLA has no
// bitcast of complex values, so a complex value becomes its (real, imag)
// pairs along a new trailing dimension of 2, which is also how view_as_real
// lays it out; the pairs then reinterpret as real bits.
func reinterpretComplex(b *hlo.Builder, v *hlo.Value, from, to dispatch.DType) *hlo.Value {
	if from.IsComplex() {
		shape := append(append([]int64{}, v.T.Shape...), 1)
		pair := b.Concatenate(len(shape)-1, b.Reshape(b.Real(v), shape...), b.Reshape(b.Imag(v), shape...))
		return reinterpret(b, pair, from.ToReal(), to)
	}
	parts := reinterpret(b, v, from, to.ToReal())
	shape := parts.T.Shape
	if len(shape) == 0 || shape[len(shape)-1] != 2 {
		n := numel(shape)
		if n%2 != 0 {
			panic(fmt.Errorf("viewing %d %s elements as %s leaves a partial element", n, to.ToReal(), to))
		}
		shape = []int64{n / 2, 2}
		parts = b.Reshape(parts, shape...)
	}
	k := len(shape) - 1
	start, limit, step := make([]int64, k+1), append([]int64{}, shape...), make([]int64, k+1)
	for i := range step {
		step[i] = 1
	}
	limit[k] = 1
	re := b.Reshape(b.Slice(parts, start, limit, step), shape[:k]...)
	start[k], limit[k] = 1, 2
	im := b.Reshape(b.Slice(parts, start, limit, step), shape[:k]...)
	return b.Complex(re, im)
}

// halfPairs shapes float16 values as complex32's stored pairs: along their
// last dimension when it is 2, else flat.
func halfPairs(b *hlo.Builder, v *hlo.Value) *hlo.Value {
	shape := v.T.Shape
	if len(shape) > 0 && shape[len(shape)-1] == 2 {
		return v
	}
	n := numel(shape)
	if n%2 != 0 {
		panic(fmt.Errorf("viewing %d float16 elements as complex32 leaves a partial element", n))
	}
	return b.Reshape(v, n/2, 2)
}

// write stores val (t's sizes and dtype) into the view t of its storage.
func (e *Engine) write(t *TensorDesc, val *hlo.Value) error {
	st, err := e.storageOf(t)
	if err != nil {
		return err
	}
	if err := checkBounds(st, t); err != nil {
		return err
	}
	e.unpad(st)
	st.grown = 0
	b := e.d.g.b
	if !st.shaped {
		if t.Offset == 0 && t.view().isContiguous() && numel(t.Sizes)*int64(t.DType.Size()) == st.nbytes {
			st.shaped, st.dtype, st.shape = true, t.DType, append([]int64{}, t.Sizes...)
			e.setPending(st, store(b, val, t.DType))
			return nil
		}
		st.shaped, st.dtype, st.shape = true, t.DType, []int64{st.nbytes / int64(t.DType.Size())}
	}
	var starts windowStarts
	if e.windowAtRuntime(st) || st.pad == nil && st.pending != nil && e.offsetMoves(st, t, true) {
		starts = e.windowStarts // as Read: a window of a materialized storage lands at runtime offsets
	}
	base := e.baseValue(st, t.DType)
	nb := reinterpret(b, store(b, writeViewWith(b, base, t.view(), val, starts), t.DType), t.DType, st.dtype)
	e.setPending(st, b.Reshape(nb, storedType(st.dtype, st.shape).Shape...))
	return nil
}
