package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// capture is the state of a program being recorded: the ops of one captured
// graph (a torch.compile FX graph run once on its real inputs) go into the
// pending graph without any flush, and CaptureEnd turns that graph into a
// Program whose parameters are the inputs by position.
type capture struct {
	name    string // the compiled graph's name, for messages ("frame 0 graph 0 forward")
	device  int    // the device of the inputs: every op of the graph runs there
	inputs  []*TensorDesc
	seeds   map[*pjrt.Buffer]int // seed buffers of random ops, by order of first use
	sliding []bool               // inputs read at a runtime offset (see captureRead)
	offsets map[*pjrt.Buffer]int // offset buffers of sliding inputs, by input
	reads   map[int]*hlo.Value   // the value of each sliding input, once read
	// byStorage marks a graph capture (torch.tpu.graph): no positional
	// inputs; every storage the region reads or writes is bound by address
	// (graph_capture.go), and a sync inside the region is an error.
	byStorage bool
	// nodes and params are the pending graph's ops and parameters when the
	// capture began (none after its flush, unless a rule left some).
	nodes, params int
}

// ErrNotCaptured reports that a capture ended without a program; the recorded
// work ran as ordinary pending work, so the results are correct.
type ErrNotCaptured struct{ Reason string }

func (e *ErrNotCaptured) Error() string { return "torchtpu: graph not captured: " + e.Reason }

// capturing reports whether a capture holds the pending graph: ops must not
// flush it.
func (e *Engine) capturing() bool { return e.capture != nil }

// noteSeed records buf as the seed input of a random op when capturing.
func (e *Engine) noteSeed(buf *pjrt.Buffer) {
	if c := e.capture; c != nil {
		if _, ok := c.seeds[buf]; !ok {
			c.seeds[buf] = len(c.seeds)
		}
	}
}

// abortCapture ends the capture because the pending graph must run now (a
// read to the host, a CPU fallback, a sync); the graph then runs as usual.
func (e *Engine) abortCapture(reason string) {
	if c := e.capture; c != nil {
		e.capture = nil
		e.captureAborted = reason
		if c.byStorage {
			e.discardPending()
		}
	}
}

// flushReason says why the pending graph must run during a capture.
func (e *Engine) flushReason() string {
	if e.cur != nil {
		return e.curOp + " reads a value to the host (a data-dependent shape or value)"
	}
	return "the graph needed a value on the host (a CPU fallback, .item(), a copy to CPU) or a sync"
}

// CaptureBegin runs the pending work and starts capturing a program named
// name (for messages) whose positional inputs are inputs (tpu tensors). The
// program runs on the inputs' device (the current device when there are
// none); inputs on several devices run the graph eagerly (CaptureEnd then
// reports why).
func (e *Engine) CaptureBegin(name string, inputs []*TensorDesc) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	if e.capture != nil {
		return errors.New("torchtpu: a compiled graph is already being captured (nested capture)")
	}
	dev, first := e.dev.cur, -1
	for i, t := range inputs {
		if t.CPU {
			return fmt.Errorf("torchtpu: compiled graph input %d is a CPU tensor", i)
		}
		st, err := e.storageOf(t)
		if err != nil {
			return fmt.Errorf("torchtpu: compiled graph input %d: %w", i, err)
		}
		if first < 0 {
			dev, first = st.device, i
		} else if st.device != dev {
			e.captureAborted = fmt.Sprintf("input %d is on tpu:%d and input %d on tpu:%d (a program runs on one device)", first, dev, i, st.device)
			return nil
		}
	}
	if err := e.useDevice(dev); err != nil {
		return err
	}
	for _, t := range inputs {
		e.unpad(e.storages[t.Addr]) // an input is bound at its size
	}
	if err := e.flush(); err != nil {
		return err
	}
	for _, t := range inputs {
		if err := e.materialize(e.storages[t.Addr], t.DType); err != nil {
			return err
		}
	}
	if name == "" {
		name = "graph"
	}
	c := &capture{name: name, device: dev, inputs: inputs, seeds: map[*pjrt.Buffer]int{}, offsets: map[*pjrt.Buffer]int{}, reads: map[int]*hlo.Value{}}
	c.nodes, c.params = e.d.g.b.Len(), e.d.g.b.NumParams()
	for _, t := range inputs {
		st := e.storages[t.Addr]
		v := t.view()
		c.sliding = append(c.sliding, st.dtype == t.DType && v.isContiguous() && !v.coversBase(st.shape) && numel(t.Sizes) > 0)
	}
	e.capture = c
	e.captureAborted = ""
	return nil
}

// leaveCaptureDevice ends the capture when an op is about to run on device d,
// not the capture's: a program runs on one device.
func (e *Engine) leaveCaptureDevice(d int) {
	if c := e.capture; c != nil && d != c.device {
		e.abortCapture(fmt.Sprintf("the graph runs ops on tpu:%d and tpu:%d (a program runs on one device)", c.device, d))
	}
}

// captureRead returns the value of t when t is a sliding input of the capture
// (a contiguous window of a larger storage, such as a batch sliced from a
// dataset) that the graph has not written: the program reads it at a runtime
// offset, so the next window replays the same program. It returns nil for
// every other tensor.
func (e *Engine) captureRead(t *TensorDesc) *hlo.Value {
	c := e.capture
	if c == nil {
		return nil
	}
	for i, in := range c.inputs {
		if !c.sliding[i] || in.Addr != t.Addr || in.Offset != t.Offset || in.DType != t.DType ||
			!slices.Equal(in.Sizes, t.Sizes) || !slices.Equal(in.Strides, t.Strides) {
			continue
		}
		if v, ok := c.reads[i]; ok {
			return v
		}
		st := e.storages[t.Addr]
		if st == nil || st.pending != nil || st.buf == nil {
			return nil
		}
		b := e.d.g.b
		off, err := e.client.BufferFromHost(encodeInt(t.Offset, hlo.S64), pjrt.S64, nil, 0)
		if err != nil {
			panic(fmt.Errorf("uploading an offset: %w", err))
		}
		e.d.g.retired = append(e.d.g.retired, off)
		c.offsets[off] = i
		// The window is cut from the stored value: a complex32 element is a float16 pair.
		flatT := storedType(st.dtype, []int64{numel(st.shape)})
		flat := b.Reshape(e.d.g.param(st.buf, storedType(st.dtype, st.shape)), flatT.Shape...)
		starts := []*hlo.Value{e.d.g.param(off, hlo.T(hlo.S64))}
		sizes := storedType(st.dtype, []int64{numel(t.Sizes)}).Shape
		if len(sizes) > 1 {
			starts = append(starts, b.ConstantInt(hlo.T(hlo.S64), 0))
		}
		win := b.DynamicSlice(flat, starts, sizes)
		v := load(b, b.Reshape(win, storedType(st.dtype, t.Sizes).Shape...), st.dtype)
		c.reads[i] = v
		return v
	}
	return nil
}

// materialize gives a storage never written (torch.empty) a zero buffer, so
// that it can be bound as a program input.
func (e *Engine) materialize(st *Storage, d dispatch.DType) error {
	if st.shaped {
		return nil
	}
	n := st.nbytes / int64(d.Size())
	ty := storedType(d, []int64{n})
	buf, err := e.client.BufferFromHost(make([]byte, n*int64(d.Size())), pjrtType(ty.Elem), ty.Shape, st.device)
	if err != nil {
		return fmt.Errorf("torchtpu: materializing an empty input: %w", err)
	}
	st.shaped, st.dtype, st.shape, st.buf = true, d, []int64{n}, buf
	return nil
}

// CaptureAbort ends a capture after the graph raised: the recorded work runs
// as ordinary pending work.
func (e *Engine) CaptureAbort() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.capture; c != nil && c.byStorage || e.captureAborted == errGraphInvalid {
		e.abortCapture("the region raised")
		return nil // a graph capture's work never runs (graph_capture.go)
	}
	e.abortCapture("the graph raised")
	if err := e.ready(); err != nil {
		return err
	}
	return e.flush()
}

// OutputRef says where a captured graph output comes from at replay.
type OutputRef struct {
	Kind  int // OutFresh: program result Index; OutInput: a view of input Index
	Index int
}

// Output kinds of OutputRef.
const (
	OutFresh = 0
	OutInput = 1
)

// CaptureEnd ends the capture: outputs (the graph's tensor results) and the
// inputs the graph wrote become the program's results; the program is
// compiled (or found in the compile cache) and run once on the capture's
// inputs. It returns the program's handle and where each output comes from,
// or *ErrNotCaptured when the graph could not become one program.
func (e *Engine) CaptureEnd(inputs, outputs []*TensorDesc) (int64, []OutputRef, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return 0, nil, err
	}
	c := e.capture
	if c == nil {
		reason := e.captureAborted
		if reason == "" {
			reason = "no capture in progress"
		}
		return 0, nil, &ErrNotCaptured{reason}
	}
	if len(inputs) != len(c.inputs) {
		e.abortCapture("the inputs changed")
		return 0, nil, errors.Join(&ErrNotCaptured{"the inputs changed"}, e.flush())
	}
	if err := e.useDevice(c.device); err != nil {
		return 0, nil, err
	}
	p, refs, reason := e.buildProgram(c, outputs)
	if reason != "" {
		e.abortCapture(reason)
		return 0, nil, errors.Join(&ErrNotCaptured{reason}, e.flush())
	}
	e.capture = nil
	if err := e.launchCaptured(p); err != nil {
		p.release()
		return 0, nil, err
	}
	return e.programs.add(p), refs, nil
}

// buildProgram makes the program of the pending graph. A non-empty reason
// says why the graph cannot be one program.
func (e *Engine) buildProgram(c *capture, outputs []*TensorDesc) (*Program, []OutputRef, string) {
	g := e.d.g
	p := &Program{nseeds: len(c.seeds), name: c.name, device: c.device}
	firstInput := map[uint64]int{}
	for i, t := range c.inputs {
		if _, ok := firstInput[t.Addr]; !ok {
			firstInput[t.Addr] = i
		}
		p.sig = append(p.sig, e.inputSig(t, firstInput[t.Addr]))
	}
	slot := map[*Storage]int{}
	var vals []*hlo.Value
	addSlot := func(st *Storage, r result) int {
		if k, ok := slot[st]; ok {
			return k
		}
		slot[st] = len(vals)
		vals = append(vals, st.pending)
		p.results = append(p.results, r)
		p.captured = append(p.captured, st)
		return slot[st]
	}
	refs := make([]OutputRef, len(outputs))
	for k, t := range outputs {
		if t.CPU {
			return nil, nil, fmt.Sprintf("output %d is a CPU tensor", k)
		}
		if j, ok := firstInput[t.Addr]; ok {
			refs[k] = OutputRef{OutInput, j}
			continue
		}
		st, err := e.storageOf(t)
		if err != nil {
			return nil, nil, fmt.Sprintf("output %d: %v", k, err)
		}
		if st.pending == nil {
			return nil, nil, fmt.Sprintf("output %d is not computed by the graph (a constant)", k)
		}
		if st.dtype != t.DType {
			return nil, nil, fmt.Sprintf("output %d views a %s storage as %s", k, st.dtype, t.DType)
		}
		refs[k] = OutputRef{OutFresh, addSlot(st, result{kind: resultFresh, dtype: st.dtype, shape: st.shape})}
	}
	// Inputs the graph wrote (in-place updates) take their new values.
	for i, t := range c.inputs {
		st := e.storages[t.Addr]
		if p.sig[i].alias == i && st != nil && st.pending != nil {
			if st.dtype != p.sig[i].stDType || !slices.Equal(st.shape, p.sig[i].stShape) {
				return nil, nil, fmt.Sprintf("input %d changes its storage's dtype or shape", i)
			}
			addSlot(st, result{kind: resultInput, index: i})
			p.sig[i].bound = true
			p.sig[i].written = true
		}
	}
	// Any other value still pending is computed too (nothing reads it at replay).
	for _, st := range g.pending {
		if st.pending != nil {
			addSlot(st, result{kind: resultDrop})
		}
	}
	bufInput := map[*pjrt.Buffer]int{}
	for i, t := range c.inputs {
		if st := e.storages[t.Addr]; st != nil && st.buf != nil && p.sig[i].alias == i {
			bufInput[st.buf] = i
			p.sig[i].bound = true
		}
	}
	aliases, donors := e.donateWritten(p, c, g, bufInput, vals)
	text, used := g.b.ModuleAliased(vals, aliases)
	p.text, p.summary = text, g.b.Summarize(vals)
	for _, u := range used { // the printer leaves out unused parameters
		if i, ok := donors[u]; ok {
			p.donated = append(p.donated, i)
		}
	}
	p.ops, p.first = g.ops, g.first
	if reason := e.bindCaptured(p, c, g, used, bufInput); reason != "" {
		return nil, nil, reason
	}
	e.makeDeferred(p, c, g, vals, used, p.captureArgs, bufInput)
	sum := sha256.Sum256([]byte(p.text))
	p.key = "c:" + hex.EncodeToString(sum[:16])
	return p, refs, ""
}

// bindCaptured records the source of each parameter the captured program
// takes (used, in order): an input's buffer, a seed, a view offset, or a
// constant the program keeps a copy of. A non-empty reason says why the
// program cannot be made.
func (e *Engine) bindCaptured(p *Program, c *capture, g *graph, used []int, bufInput map[*pjrt.Buffer]int) string {
	for _, u := range used {
		buf := g.params[u]
		switch {
		case hasKey(bufInput, buf):
			p.binds = append(p.binds, bind{kind: bindInput, index: bufInput[buf]})
		case hasKey(c.seeds, buf):
			p.binds = append(p.binds, bind{kind: bindSeed, index: c.seeds[buf]})
		case hasKey(c.offsets, buf):
			p.binds = append(p.binds, bind{kind: bindOffset, index: c.offsets[buf]})
			p.sig[c.offsets[buf]].sliding = true
		default:
			cp, err := e.copyBuffer(buf)
			if err != nil {
				return fmt.Sprintf("keeping a constant: %v", err)
			}
			p.binds = append(p.binds, bind{kind: bindConst, buf: cp})
		}
		p.captureArgs = append(p.captureArgs, buf)
	}
	return ""
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// copyBuffer returns a new buffer holding b's value (a program's own copy of a
// constant: scalar inputs and uploads are freed or evicted by the engine).
func (e *Engine) copyBuffer(b *pjrt.Buffer) (*pjrt.Buffer, error) {
	raw := make([]byte, b.Size())
	if err := b.ToHost(raw); err != nil {
		return nil, err
	}
	return e.client.BufferFromHost(raw, b.DType(), b.Dims(), b.Device())
}

// launchCaptured compiles p and runs it on the buffers the capture recorded;
// the results become the values of the storages that were pending.
func (e *Engine) launchCaptured(p *Program) error {
	g := e.d.g
	e.d.g = newGraph()
	defer func() {
		pjrt.DestroyBuffers(g.retired)
	}()
	for _, st := range g.pending {
		st.pending = nil
	}
	e.fl = p.flushCtx()
	e.lastProg = p.key
	exe, err := e.executable(p.text, p.summary)
	if err != nil {
		return err
	}
	p.exe = exe
	args := p.captureArgs
	p.captureArgs = nil
	_, err = e.execute(p.launch(), exe, args, func(results []*pjrt.Buffer) []*pjrt.Buffer {
		var replaced []*pjrt.Buffer
		for k, st := range p.captured {
			replaced = append(replaced, st.buf)
			st.buf = results[k]
		}
		return replaced
	})
	p.captured = nil
	if err != nil {
		return fmt.Errorf("torchtpu: executing compiled %s (%d ops) on tpu:%d: %w", p.name, g.ops, p.device, err)
	}
	return nil
}
