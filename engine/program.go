package engine

import (
	"fmt"
	"slices"
	"sync"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Program is one captured graph compiled to one executable. A replay binds
// the input tensors' buffers by position, launches the executable and hands
// back its results: no rule runs and no module text is rendered.
type Program struct {
	name    string // the compiled graph's name, for messages
	key     string // "c:" and a hash of text: the program's name in traces
	device  int    // the device it was captured on, where it runs
	ops     int    // ops captured
	first   []string
	text    string
	exe     *pjrt.Executable
	sig     []inputSig
	binds   []bind
	results []result
	nseeds  int
	donated []int        // inputs whose buffers the program takes over (donate.go)
	summary *hlo.Summary // what a recompile is explained by (recompile.go)
	stores  []uint64     // a graph capture's inputs: storages by address (graph_capture.go)
	// deferred is the captured graph as a fragment, for replays recorded
	// into the pending graph (program_defer.go); nil when it cannot be cut.
	deferred *deferred
	step     bool   // a replay opens a compiled step in strict mode (program_defer.go)
	tapeOp   string // its replays' op name in step tapes (program_tape.go)

	// bound holds a graph's storages as the last replay checked them in
	// full, for the next replay's boundHolds (graph_bound.go).
	bound *boundStorages
	// args holds a parameter list with the constants in place; vary lists
	// the parameters each launch binds anew (bindProgram).
	args []*pjrt.Buffer
	vary []int

	// Set between capture and the first launch only.
	captured    []*Storage
	captureArgs []*pjrt.Buffer
}

// inputSig is what a replay's input must match: the view the rules saw and
// the storage value the program reads.
type inputSig struct {
	dtype   dispatch.DType
	offset  int64
	sizes   []int64
	strides []int64
	alias   int // the first input sharing this input's storage (itself when none)
	stDType dispatch.DType
	stShape []int64
	bound   bool // the program reads the storage's buffer
	sliding bool // the program reads the view at a runtime offset
	written bool // the program writes the storage
}

// bind is the source of one executable parameter.
type bind struct {
	kind  int
	index int          // bindInput: the input; bindSeed: the seed
	buf   *pjrt.Buffer // bindConst: the program's own copy
}

const (
	bindInput = iota
	bindSeed
	bindConst
	bindOffset // the storage offset of a sliding input, in elements
)

// result is the destination of one executable result.
type result struct {
	kind  int
	index int // resultInput: the input whose storage takes the value
	dtype dispatch.DType
	shape []int64
}

const (
	resultFresh = iota // a new storage, returned to the caller
	resultInput        // the new value of an input's storage (an in-place update)
	resultDrop         // computed at capture only
)

func (e *Engine) inputSig(t *TensorDesc, alias int) inputSig {
	s := inputSig{dtype: t.DType, offset: t.Offset, sizes: slices.Clone(t.Sizes), strides: slices.Clone(t.Strides), alias: alias}
	if st := e.storages[t.Addr]; st != nil {
		s.stDType, s.stShape = st.dtype, slices.Clone(st.shape)
	}
	return s
}

// MismatchError reports replay inputs that differ from the captured ones in
// a way the program depends on; the caller captures another program.
type MismatchError struct{ Reason string }

func (e *MismatchError) Error() string {
	return "torchtpu: compiled program inputs differ: " + e.Reason
}

// flushCtx describes p for the messages and events of its compile.
func (p *Program) flushCtx() flushCtx {
	return flushCtx{reason: "compiled graph", ops: p.ops, first: p.first, compiled: p.name}
}

// launch describes a launch of p for the launch bookkeeping.
func (p *Program) launch() launch {
	return launch{key: p.key, what: "compiled " + p.name, ops: p.ops, device: p.device, donated: len(p.donated)}
}

// release frees the program's own buffers.
func (p *Program) release() { p.releaseWith((*pjrt.Buffer).Destroy) }

// releaseWith hands the program's own buffers to drop.
func (p *Program) releaseWith(drop func(*pjrt.Buffer)) {
	for _, b := range p.binds {
		if b.kind == bindConst {
			drop(b.buf)
		}
	}
	p.binds, p.bound, p.args, p.vary = nil, nil, nil, nil
	if p.deferred != nil {
		p.deferred.releaseWith(drop)
		p.deferred = nil
	}
}

// ProgramSeeds returns how many seeds a replay of program h takes (one per
// random op, drawn in op order from the device generator).
func (e *Engine) ProgramSeeds(h int64) int {
	if p := e.programs.get(h); p != nil {
		return p.nseeds
	}
	return 0
}

// ProgramText returns the StableHLO text program h was compiled from, and
// whether h names a live program.
func (e *Engine) ProgramText(h int64) (string, bool) {
	if p := e.programs.get(h); p != nil {
		return p.text, true
	}
	return "", false
}

// ProgramOutputs returns how many new storages a replay of program h returns.
func (e *Engine) ProgramOutputs(h int64) int {
	if p := e.programs.get(h); p != nil {
		return e.programOutputs(p)
	}
	return 0
}

func (e *Engine) programOutputs(p *Program) int {
	n := 0
	for _, r := range p.results {
		if r.kind == resultFresh {
			n++
		}
	}
	return n
}

// FreeProgram releases program h.
func (e *Engine) FreeProgram(h int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.programs.remove(h); p != nil {
		if p.deferred != nil {
			e.forgetDeferred()
		}
		p.releaseWith(e.dropBuffer) // a pending graph that pasted the program still reads its constants
		e.pin(p.stores, -1)
	}
}

// RunProgram replays program h on inputs with fresh seeds: in-place updates go
// to the inputs' storages and the other results come back as new storages.
func (e *Engine) RunProgram(h int64, inputs []*TensorDesc, seeds []int64, maxOuts int) ([]OutTensor, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return nil, err
	}
	p := e.programs.get(h)
	if p == nil {
		return nil, fmt.Errorf("torchtpu: no compiled program %d", h)
	}
	if e.capture != nil {
		return nil, fmt.Errorf("torchtpu: a compiled program cannot run while a graph is being captured")
	}
	graph := p.stores != nil && len(inputs) == 0
	var sts []*Storage // the inputs' storages, checked
	if graph && len(seeds) == p.nseeds && e.boundHolds(p) {
		sts = p.bound.sts
		e.m.GraphBoundReplays++
	} else if graph {
		var err error
		if inputs, err = e.graphInputs(p); err != nil {
			return nil, err
		}
	}
	if sts == nil && len(inputs) != len(p.sig) || len(seeds) != p.nseeds {
		return nil, &MismatchError{fmt.Sprintf("%d inputs and %d seeds, the program takes %d and %d", len(inputs), len(seeds), len(p.sig), p.nseeds)}
	}
	if n := e.programOutputs(p); n > maxOuts {
		return nil, fmt.Errorf("torchtpu: a compiled program gives %d results, the caller allows %d", n, maxOuts)
	}
	e.openStep(p)
	if sts == nil && e.defers(p) {
		if outs, ok, err := e.deferProgram(p, inputs, seeds); ok || err != nil {
			return outs, err
		}
	}
	if sts == nil {
		var err error
		if sts, err = e.programInputs(p, inputs); err != nil {
			return nil, err
		}
		if graph {
			p.keepBound(sts)
		}
	}
	if err := e.releaseDonors(p, sts); err != nil {
		return nil, err
	}
	args, uploaded, err := e.bindProgram(p, inputs, sts, seeds)
	defer func() {
		for _, b := range uploaded {
			b.Destroy()
		}
	}()
	if err != nil {
		return nil, err
	}
	return e.launchProgram(p, sts, args)
}

// programInputs returns the storages of a compiled program's inputs, each
// with a buffer of its base dtype, after checking them against the captured
// inputs; it selects the program's device.
func (e *Engine) programInputs(p *Program, inputs []*TensorDesc) ([]*Storage, error) {
	sts := make([]*Storage, len(inputs))
	for i, t := range inputs {
		st, err := e.storageOf(t)
		if err != nil {
			return nil, fmt.Errorf("torchtpu: compiled program input %d: %w", i, err)
		}
		if st.device != p.device {
			return nil, &MismatchError{fmt.Sprintf("input %d is on tpu:%d, the program was captured on tpu:%d", i, st.device, p.device)}
		}
		sts[i] = st
	}
	if err := e.useDevice(p.device); err != nil {
		return nil, err
	}
	for i, t := range inputs {
		e.unpad(sts[i]) // bound at its size
		if sts[i].pending != nil || e.replayHolds(sts[i]) {
			if err := e.flush(); err != nil {
				return nil, err
			}
		}
		if err := e.materialize(sts[i], t.DType); err != nil {
			return nil, err
		}
	}
	if s := e.d.seg; s != nil && slices.ContainsFunc(sts, s.has) {
		e.leaveTape(departProgram) // the program gives storages of the segment new buffers
	}
	first := map[uint64]int{}
	for i, t := range inputs {
		if _, ok := first[t.Addr]; !ok {
			first[t.Addr] = i
		}
		if err := p.sig[i].check(i, t, sts[i], first[t.Addr]); err != nil {
			return nil, err
		}
	}
	return sts, nil
}

// bindProgram returns the buffer of each of p's parameters: input buffers,
// the program's constants, and seeds and view offsets uploaded now (returned
// in uploaded, for the caller to destroy). The list is p's own, reused by
// each launch (the engine's lock is held from binding to launch).
func (e *Engine) bindProgram(p *Program, inputs []*TensorDesc, sts []*Storage, seeds []int64) (args, uploaded []*pjrt.Buffer, err error) {
	if p.args == nil {
		p.args = make([]*pjrt.Buffer, len(p.binds))
		for k, b := range p.binds {
			if b.kind == bindConst {
				p.args[k] = b.buf
			} else {
				p.vary = append(p.vary, k)
			}
		}
	}
	args = p.args
	for _, k := range p.vary {
		switch b := &p.binds[k]; b.kind {
		case bindInput:
			args[k] = sts[b.index].buf
		case bindSeed, bindOffset:
			var v int64
			if b.kind == bindOffset {
				v = inputs[b.index].Offset
			} else {
				v = seeds[b.index]
			}
			buf, err := e.client.BufferFromHost(encodeInt(v, hlo.S64), pjrt.S64, nil, p.device)
			if err != nil {
				return nil, uploaded, fmt.Errorf("torchtpu: uploading a scalar input: %w", err)
			}
			uploaded = append(uploaded, buf)
			args[k] = buf
		}
	}
	return args, uploaded, nil
}

// launchProgram runs p on args: fresh results get new storages, written
// inputs their new buffers.
func (e *Engine) launchProgram(p *Program, sts []*Storage, args []*pjrt.Buffer) ([]OutTensor, error) {
	var fresh []OutTensor
	for _, r := range p.results {
		if r.kind == resultFresh {
			fresh = append(fresh, OutTensor{NBytes: numel(r.shape) * int64(r.dtype.Size()), DType: r.dtype, Sizes: r.shape})
		}
	}
	freshSts, outs, err := e.newResults(fresh)
	if err != nil {
		return nil, err
	}
	_, err = e.execute(p.launch(), p.exe, args, func(results []*pjrt.Buffer) []*pjrt.Buffer {
		replaced := make([]*pjrt.Buffer, 0, len(p.results))
		n := 0
		for k, r := range p.results {
			switch r.kind {
			case resultFresh:
				freshSts[n].buf = results[k]
				n++
			case resultInput:
				st := sts[r.index]
				replaced = append(replaced, st.buf)
				st.buf, st.known = results[k], nil // values the program computed
			default:
				replaced = append(replaced, results[k])
			}
		}
		return replaced
	})
	if err != nil {
		for _, st := range freshSts {
			e.freeStorage(st)
		}
		return nil, fmt.Errorf("torchtpu: executing compiled %s on tpu:%d: %w", p.name, p.device, err)
	}
	return outs, nil
}

// check compares replay input i with the captured one.
func (s *inputSig) check(i int, t *TensorDesc, st *Storage, alias int) error {
	switch {
	case t.CPU:
		return &MismatchError{fmt.Sprintf("input %d is a CPU tensor", i)}
	case alias != s.alias:
		return &MismatchError{fmt.Sprintf("input %d shares a storage with input %d, captured with input %d", i, alias, s.alias)}
	case t.DType != s.dtype || !slices.Equal(t.Sizes, s.sizes):
		return &MismatchError{fmt.Sprintf("input %d is %s%v, captured as %s%v", i, t.DType, t.Sizes, s.dtype, s.sizes)}
	case s.sliding && !s.written && (!slices.Equal(t.Strides, s.strides) || t.Offset+numel(t.Sizes) > numel(st.shape)):
		return &MismatchError{fmt.Sprintf("input %d has strides %v, captured with %v, or reaches past its storage", i, t.Strides, s.strides)}
	case (!s.sliding || s.written) && (t.Offset != s.offset || !slices.Equal(t.Strides, s.strides)):
		return &MismatchError{fmt.Sprintf("input %d has offset %d and strides %v, captured with %d and %v", i, t.Offset, t.Strides, s.offset, s.strides)}
	case s.bound && (st.dtype != s.stDType || !slices.Equal(st.shape, s.stShape)):
		return &MismatchError{fmt.Sprintf("input %d's storage holds %s%v, captured as %s%v", i, st.dtype, st.shape, s.stDType, s.stShape)}
	}
	return nil
}

// programTable holds the live programs by handle.
type programTable struct {
	mu   sync.Mutex
	next int64
	m    map[int64]*Program
}

func (t *programTable) add(p *Program) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[int64]*Program{}
	}
	t.next++
	t.m[t.next] = p
	return t.next
}

func (t *programTable) get(h int64) *Program {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[h]
}

func (t *programTable) remove(h int64) *Program {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m[h]
	delete(t.m, h)
	return p
}
