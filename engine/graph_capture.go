package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// A graph capture (torch.tpu.graph, CUDA Graphs' API) is a capture with no
// positional inputs: the ops of a region of eager code go into the pending
// graph, and GraphCaptureEnd makes one program of it that binds every storage
// the region read by its address (its live buffer at replay) and writes every
// storage the region wrote (static outputs, parameters, optimizer state) back
// into that storage. As on CUDA the captured work does not run at capture:
// the written storages keep their values from before the region (new ones
// read as zeros) until the first replay. A replay draws one fresh seed per
// random op. The storages a graph binds are pinned: when PyTorch frees one
// while the graph lives, its record stays until the graph is freed.

// errGraphInvalid is the abort reason of a graph capture ended by a sync.
const errGraphInvalid = "a sync inside the region made the capture invalid"

// CaptureSyncError reports an operation that needs the host inside a graph
// capture, which CUDA refuses in the same way; the capture is invalid.
type CaptureSyncError struct{ What string }

func (e *CaptureSyncError) Error() string {
	return "torchtpu: operation not permitted when stream is capturing: " + e.What +
		" inside torch.tpu.graph (the capture is invalid; run it before or after the region)"
}

// syncInCapture is called where the pending graph must run now. A compile
// capture ends and its graph runs as usual; a graph capture ends as invalid
// (its recorded work dropped) and the operation fails.
func (e *Engine) syncInCapture() error {
	c := e.capture
	if c == nil {
		return nil
	}
	if !c.byStorage {
		e.abortCapture(e.flushReason())
		return nil
	}
	what := "a sync (" + e.why + ")"
	switch {
	case e.cur != nil:
		what = e.curOp + " reading a value to the host"
	case e.why == whyToHost:
		what = "a read to the host (.item(), .cpu(), .tolist(), printing a tensor)"
	case e.why == "" || e.why == whySynchronize:
		what = "a sync (torch.tpu.synchronize(), a host read or a CPU fallback)"
	}
	e.abortCapture(errGraphInvalid)
	e.why = ""
	return &CaptureSyncError{what}
}

// discardPending drops the pending graph of a graph capture: storages keep
// the values they had before the region, and forget the value ranges the
// region's rules gave them.
func (e *Engine) discardPending() {
	g := e.d.g
	e.d.g = newGraph()
	for _, st := range g.pending {
		st.pending, st.known = nil, nil
	}
	pjrt.DestroyBuffers(g.retired)
}

// GraphCaptureBegin runs the pending work and starts a graph capture on the
// current device.
func (e *Engine) GraphCaptureBegin() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	if e.capture != nil {
		return errors.New("torchtpu: a graph is already being captured (nested capture)")
	}
	e.unpadDevice() // the graph binds storages by address, at their sizes
	if err := e.flushAll(); err != nil {
		return err
	}
	e.capture = &capture{name: "graph", device: e.dev.cur, byStorage: true, seeds: map[*pjrt.Buffer]int{},
		offsets: map[*pjrt.Buffer]int{}, reads: map[int]*hlo.Value{}}
	e.captureAborted = ""
	return nil
}

// GraphCaptureEnd ends a graph capture: the region becomes one compiled
// program, not run, whose handle it returns.
func (e *Engine) GraphCaptureEnd() (int64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return 0, err
	}
	c := e.capture
	if c == nil || !c.byStorage {
		reason := e.captureAborted
		if reason == "" {
			reason = "no graph capture in progress"
		}
		return 0, fmt.Errorf("torchtpu: graph capture failed: %s", reason)
	}
	if err := e.useDevice(c.device); err != nil {
		return 0, err
	}
	c.inputs = e.graphStorages(c)
	for range c.inputs {
		c.sliding = append(c.sliding, false)
	}
	p, _, reason := e.buildProgram(c, nil)
	if reason != "" {
		e.abortCapture(reason)
		return 0, fmt.Errorf("torchtpu: graph capture failed: %s", reason)
	}
	e.capture = nil
	g := e.d.g
	e.discardPending()
	for _, t := range c.inputs {
		p.stores = append(p.stores, t.Addr)
	}
	e.fl = p.flushCtx()
	e.lastProg = p.key
	exe, err := e.executable(p.text, p.summary)
	p.captured, p.captureArgs = nil, nil
	if err != nil {
		p.release()
		return 0, err
	}
	p.exe = exe
	// The storages the region made (static outputs) get a buffer of zeros,
	// so that a later capture or read binds them like any other.
	for _, st := range g.pending {
		if e.storages[st.addr] == st && st.buf == nil && st.shaped {
			if err := e.zeroBuffer(st); err != nil {
				p.release()
				return 0, err
			}
		}
	}
	e.pin(p.stores, 1)
	return e.programs.add(p), nil
}

// graphStorages returns a whole-storage description of each storage of the
// capture's device that the pending graph reads (its buffer is a parameter)
// or writes, by address.
func (e *Engine) graphStorages(c *capture) []*TensorDesc {
	g := e.d.g
	var ts []*TensorDesc
	for _, st := range e.storages {
		if st.device != c.device || !st.shaped {
			continue
		}
		_, read := g.paramOf[st.buf]
		if st.pending == nil && (st.buf == nil || !read) {
			continue
		}
		ts = append(ts, &TensorDesc{Addr: st.addr, DType: st.dtype, Sizes: slices.Clone(st.shape), Strides: contiguousStrides(st.shape)})
	}
	slices.SortFunc(ts, func(a, b *TensorDesc) int { return cmp.Compare(a.Addr, b.Addr) })
	return ts
}

// zeroBuffer gives the shaped storage st a buffer of zeros.
func (e *Engine) zeroBuffer(st *Storage) error {
	ty := storedType(st.dtype, st.shape)
	buf, err := e.client.BufferFromHost(make([]byte, numel(st.shape)*int64(st.dtype.Size())), pjrtType(ty.Elem), ty.Shape, st.device)
	if err != nil {
		return fmt.Errorf("torchtpu: a graph's output storage: %w", err)
	}
	st.buf = buf
	return nil
}

// graphInputs returns the whole-storage descriptions of program p's bound
// storages, now: a replay binds their live buffers.
func (e *Engine) graphInputs(p *Program) ([]*TensorDesc, error) {
	ts := make([]*TensorDesc, len(p.stores))
	for i, a := range p.stores {
		st, ok := e.storages[a]
		if !ok || !st.shaped {
			return nil, fmt.Errorf("torchtpu: a storage the graph binds is gone (address 0x%x)", a)
		}
		ts[i] = &TensorDesc{Addr: a, DType: st.dtype, Sizes: st.shape, Strides: contiguousStrides(st.shape)}
	}
	return ts, nil
}

// pin adds d to the pin count of each address; a storage whose count drops
// to zero after PyTorch freed it is freed now.
func (e *Engine) pin(addrs []uint64, d int) {
	if e.pins == nil {
		e.pins, e.orphans = map[uint64]int{}, map[uint64]bool{}
	}
	for _, a := range addrs {
		e.pins[a] += d
		if e.pins[a] > 0 {
			continue
		}
		delete(e.pins, a)
		if e.orphans[a] {
			delete(e.orphans, a)
			if st, ok := e.storages[a]; ok {
				e.freeStorage(st)
			}
		}
	}
}
