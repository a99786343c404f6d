package engine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// FromHost writes contiguous host bytes (t's dtype and sizes) into the view t.
func (e *Engine) FromHost(t *TensorDesc, src []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	if !t.DType.Supported() {
		return fmt.Errorf("torchtpu: copy to device: dtype %s is not supported on tpu", t.DType)
	}
	st, err := e.storageOf(t)
	if err != nil {
		return err
	}
	if err := e.useDevice(st.device); err != nil {
		return err
	}
	if want := numel(t.Sizes) * int64(t.DType.Size()); int64(len(src)) != want {
		return fmt.Errorf("torchtpu: copying %d host bytes into a %v %s tensor (%d bytes)", len(src), t.Sizes, t.DType, want)
	}
	if err := checkBounds(st, t); err != nil {
		return fmt.Errorf("torchtpu: copy to device: %v", err)
	}
	whole := t.Offset == 0 && t.view().isContiguous() && int64(len(src)) == st.nbytes
	if s := e.d.seg; s != nil && (!whole || s.has(st)) {
		e.leaveTape(departOutside) // the write records outside an op, or changes a storage the segment holds
	}
	if !whole {
		if err := e.endColdRun(); err != nil { // the write records outside an op
			return err
		}
	}
	t0 := time.Now()
	ty := storedType(t.DType, t.Sizes)
	buf, err := e.client.BufferFromHost(src, pjrtType(ty.Elem), ty.Shape, st.device)
	if err != nil {
		return fmt.Errorf("torchtpu: copy to device: %w", err)
	}
	e.noteTransfer("h2d", int64(len(src)), t0, "tensor")
	if !e.capturing() && whole {
		// The whole storage is replaced: the new buffer becomes its value.
		e.dropBuffer(st.buf)
		st.buf, st.pending, st.pad, st.grown = buf, nil, nil, 0
		st.shaped, st.dtype, st.shape = true, t.DType, append([]int64{}, t.Sizes...)
		st.known = hostIntRange(src, t.DType)
		return nil
	}
	v := load(e.d.g.b, e.d.g.param(buf, ty), t.DType)
	e.d.g.retired = append(e.d.g.retired, buf)
	if err := e.write(t, v); err != nil {
		return err
	}
	if e.mode != ModeFused && !e.capturing() {
		e.why = whyHostWrite
		return e.flush()
	}
	return nil
}

// ToHost reads the view t into contiguous host bytes (t's dtype). It is a
// sync point: pending work runs first, and the call waits for the data.
func (e *Engine) ToHost(t *TensorDesc, dst []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.toHost(t, dst)
}

func (e *Engine) toHost(t *TensorDesc, dst []byte) error {
	if err := e.ready(); err != nil {
		return err
	}
	if !t.DType.Supported() {
		return fmt.Errorf("torchtpu: copy to host: dtype %s is not supported on tpu", t.DType)
	}
	if want := numel(t.Sizes) * int64(t.DType.Size()); int64(len(dst)) != want {
		return fmt.Errorf("torchtpu: copying a %v %s tensor (%d bytes) into %d host bytes", t.Sizes, t.DType, want, len(dst))
	}
	if len(dst) == 0 {
		return nil
	}
	st, done, err := e.hostSource(t, dst)
	if done || err != nil {
		return err
	}
	if e.pointValue(st, t, dst) {
		return nil
	}
	if err := e.useDevice(st.device); err != nil {
		return err
	}
	e.setWhy(whyToHost)
	if e.replayHolds(st) {
		// The value comes from the replayed step's program: it runs now.
		if err := e.flush(); err != nil {
			return err
		}
	}
	// A whole storage is read from its own buffer, after the flush that computes it when it is
	// pending: as an extra output, its value would be a second output of the graph, which XLA
	// fills by copying the first.
	whole := t.offsetFreeWhole(st.shape) || t.allInOrder(st) ||
		st.pad != nil && t.Offset == 0 && numel(t.Sizes) == numel(st.shape) && t.view().isContiguous()
	if (st.pending != nil || st.buf != nil) && st.dtype == t.DType && whole {
		if err := e.flush(); err != nil {
			return err
		}
		if st.buf != nil && st.pad != nil {
			return e.copyPaddedToHost(st, dst)
		}
		if st.buf != nil {
			return e.copyToHost(st.buf, dst, "tensor")
		}
	}
	if err := e.endColdRun(); err != nil { // the view is read from its storage's buffer
		return err
	}
	// Materialize the view as an extra output of the pending graph.
	e.leaveTape(departOutside)
	v := e.Read(t)
	if !slices.Equal(v.T.Shape, t.Sizes) {
		v = e.d.g.b.Reshape(v, t.Sizes...)
	}
	e.d.g.extra = append(e.d.g.extra, store(e.d.g.b, v, t.DType))
	bufs, err := e.flushExtra()
	if err != nil {
		return err
	}
	defer bufs[0].Destroy()
	return e.copyToHost(bufs[0], dst, "tensor")
}

// hostSource copies a CPU tensor t into dst (done), or returns the storage
// of the tpu tensor t after checking that t lies within it.
func (e *Engine) hostSource(t *TensorDesc, dst []byte) (st *Storage, done bool, err error) {
	if t.CPU {
		copy(dst, t.Host)
		return nil, true, nil
	}
	if st, err = e.storageOf(t); err != nil {
		return nil, false, err
	}
	if err := checkBounds(st, t); err != nil {
		return nil, false, fmt.Errorf("torchtpu: copy to host: %v", err)
	}
	return st, false, nil
}

// copyToHost copies b into dst, waiting for it, and counts the transfer.
func (e *Engine) copyToHost(b *pjrt.Buffer, dst []byte, what string) error {
	t0 := time.Now()
	err := b.ToHost(dst)
	e.noteTransfer("d2h", int64(len(dst)), t0, what)
	return err
}

func (t *TensorDesc) offsetFreeWhole(base []int64) bool {
	return t.Offset == 0 && slices.Equal(t.Sizes, base) && t.view().isContiguous()
}

// allInOrder reports whether the view t holds every element of the plain
// storage st in its buffer's order, whatever the shapes: a contiguous view at
// offset 0 of as many elements (a channels_last tensor made as a flat storage,
// seen in memory order), whose host bytes are the buffer's.
func (t *TensorDesc) allInOrder(st *Storage) bool {
	return st.pad == nil && st.shaped && t.Offset == 0 && numel(t.Sizes) == numel(st.shape) && t.view().isContiguous()
}

// Int64s implements dispatch.Reader: the values of an integer tensor, read to
// the host (a sync point). A declared host argument of the running rule was
// read before the rule started (needs.go).
func (e *Engine) Int64s(h any) ([]int64, error) {
	t := h.(*TensorDesc)
	if vals, ok := e.hostVals[t]; ok {
		return slices.Clone(vals), nil
	}
	if !t.DType.IsIntegral(true) {
		return nil, fmt.Errorf("expected an integer tensor, got %s", t.DType)
	}
	n := numel(t.Sizes)
	size := t.DType.Size()
	raw := make([]byte, n*int64(size))
	if e.cur != nil {
		if err := e.needed(e.declaredHostArg(t), "reads an argument's values to the host"); err != nil {
			return nil, err
		}
		if err := e.readWhileRecording(t, raw); err != nil {
			return nil, err
		}
	} else {
		e.why = whyRuleReads
		err := e.toHost(t, raw)
		e.why = ""
		if err != nil {
			return nil, err
		}
	}
	return decodeInt64s(raw, t.DType), nil
}

// Int64Values implements dispatch.Reader: an integer or bool value of the
// current graph, computed and read to the host. The graph is not consumed:
// the rule goes on recording into it.
func (e *Engine) Int64Values(v *hlo.Value) ([]int64, error) {
	d := dispatch.FromElem(v.T.Elem)
	if !d.IsIntegral(true) {
		return nil, fmt.Errorf("expected an integer value, got %s", d)
	}
	if err := e.needed(e.ruleNeeds().Results, "reads values it computed to the host"); err != nil {
		return nil, err
	}
	raw := make([]byte, numel(v.T.Shape)*int64(d.Size()))
	if err := e.evaluateToHost(v, raw); err != nil {
		return nil, err
	}
	return decodeInt64s(raw, d), nil
}

// decodeInt64s decodes host bytes of integer or bool dtype d.
func decodeInt64s(raw []byte, d dispatch.DType) []int64 {
	size := d.Size()
	out := make([]int64, len(raw)/size)
	for i := range out {
		b := raw[i*size : (i+1)*size]
		if d == dispatch.Int64 {
			out[i] = int64(binary.LittleEndian.Uint64(b))
		} else {
			out[i] = int64(decodeScalar(b, d.Elem()))
		}
	}
	return out
}

// StorageCopy copies the first nbytes of storage src into storage dst (for
// resize_, which moves a tensor to a larger storage).
func (e *Engine) StorageCopy(dst, src uint64, nbytes int64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	s, err := e.storage(src)
	if err != nil {
		return err
	}
	d, err := e.storage(dst)
	if err != nil {
		return err
	}
	if !s.shaped || nbytes == 0 {
		return nil
	}
	if s.device != d.device {
		return fmt.Errorf("torchtpu: storage copy between tpu:%d and tpu:%d", s.device, d.device)
	}
	if err := e.useDevice(s.device); err != nil {
		return err
	}
	e.leaveTape(departOutside)
	if err := e.endColdRun(); err != nil { // the copy records outside an op
		return err
	}
	size := int64(s.dtype.Size())
	n := min(nbytes, s.nbytes, d.nbytes) / size
	flat := e.d.g.b.Reshape(e.baseValue(s, s.dtype), numel(s.shape))
	part := e.d.g.b.Slice(flat, []int64{0}, []int64{n}, []int64{1})
	t := &TensorDesc{Addr: dst, DType: s.dtype, Sizes: []int64{n}, Strides: []int64{1}}
	if err := e.write(t, part); err != nil {
		return err
	}
	if e.mode != ModeFused && !e.capturing() {
		e.why = whyStorageCopy
		return e.flush()
	}
	return nil
}
