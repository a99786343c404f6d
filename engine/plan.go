package engine

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"iter"
	"math"
	"slices"
	"time"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Op plans. The first call of an op signature (opSignature) runs the op's
// rule, which checks the arguments and records the lowering; the engine then
// learns a plan from what the rule recorded. Later calls with the same
// signature replay the plan: no rule runs, no shape inference, no attribute
// text. Their rules passed the same checks the first time. One plan type
// serves both fast paths: strict mode adds the key of the op's program
// (plan_strict.go), fused mode the fragment cut out of the pending graph
// (plan_fused.go). Ops that read data to the host, draw random numbers or
// upload one-off inputs are never planned; value ranges a rule reports are
// kept in the plan (rangeOf).

// maxPlans bounds a device's plan table.
const maxPlans = 8192

// plans is one device's plan table, by op signature (recent: a loop of
// fewer than maxPlans/2 signatures keeps its plans however many other
// signatures the process used before it). A signature whose op cannot be
// planned is known with a nil plan, so it is not tried again.
type plans = recent[hlo.Hash, *plan]

// plan replays one op signature.
type plan struct {
	// sources says where each input comes from. Strict mode: each program
	// parameter in order. Fused mode: the argument storages whose values feed
	// the fragment's inputs, then the numbers behind the parameters it adds.
	sources []source
	writes  []planWrite   // the storages the op gives values, in order
	results []OutTensor   // functional results (shape and dtype; addresses are new each call)
	key     string        // strict mode: the program's key in e.cache
	frag    *hlo.Fragment // fused mode: the recorded ops
	refs    []hlo.Ref     // fused mode: the fragment value of each write
	ranges  []*intRange   // by write: the value range the rule reported for it (nil: none)
	uploads bool          // fused mode: a source is a one-off upload, so only a step tape may hold the plan
	seeded  bool          // a source is a seed: each replay uploads its call's seed
	program bool          // a deferred replay of a compiled program, held by step tapes only (program_tape.go)
	weight  int           // the ops the plan counts as (a program's captured ops; 0: one)
}

// rangeOf returns a copy of the value range plan p gives its write i, or nil.
// A rule's ranges follow from what the signature holds (shapes, Python
// numbers, the arguments' known ranges), so every replay of the signature
// gives its writes the ranges the first call did.
func (p *plan) rangeOf(i int) *intRange {
	if i >= len(p.ranges) || p.ranges[i] == nil {
		return nil
	}
	r := *p.ranges[i]
	return &r
}

// writeTarget returns the storage write w of an op on args gave a value:
// its new result's (outs) or its argument's.
func (e *Engine) writeTarget(args []dispatch.Arg, outs []OutTensor, w planWrite) *Storage {
	if w.result >= 0 {
		return e.storages[outs[w.result].Addr]
	}
	return e.argStorage(args, w.arg, w.idx)
}

// noteRanges records in p the value ranges the rule just gave p's writes
// (keepRanges), so that replays give them too.
func (e *Engine) noteRanges(p *plan, args []dispatch.Arg, outs []OutTensor) {
	for i, w := range p.writes {
		st := e.writeTarget(args, outs, w)
		if st == nil || st.known == nil {
			continue
		}
		if p.ranges == nil {
			p.ranges = make([]*intRange, len(p.writes))
		}
		r := *st.known
		p.ranges[i] = &r
	}
}

type srcKind uint8

const (
	srcArg    srcKind = iota // the value of an argument's storage
	srcScalar                // a cached number
	srcUpload                // a value the rule uploaded for this call alone
	srcSeed                  // the seed in argument arg, uploaded for each call
	srcConst                 // a compiled program's constant (buf), the same for every call
)

// source is where a plan input comes from.
type source struct {
	kind     srcKind
	arg, idx int // srcArg: argument and tensor index; srcSeed: argument
	scalar   scalarKey
	buf      *pjrt.Buffer // srcUpload, srcSeed: this call's buffer, valid until the graph reading it runs; srcConst: the constant
}

// seedUpload is a seed a rule uploaded (Engine.Seed): its buffer and argument.
type seedUpload struct {
	buf *pjrt.Buffer
	arg int
}

// planWrite is a storage an op gives a value: new result result (when not
// negative) or the storage of argument arg's tensor idx, with the dtype and
// base shape it has afterwards (fused mode: a first write gives a storage its
// shape).
type planWrite struct {
	result, arg, idx int
	dtype            dispatch.DType
	shape            []int64
	pad              *padding // strict mode: the padding a new result is held with (pad.go)
	grown            int      // strict mode: a new result's append mark (Storage.grown)
}

// planMode says which fast path, if any, may plan the op about to run.
type planMode uint8

const (
	planNone planMode = iota
	planStrict
	planFused
)

// planFor returns the fast path that may plan an op now: strict mode when
// the device's graph is empty, fused mode unless TORCHTPU_FUSED_FAST_PATH=0;
// never while a program is being captured or for a rule that declares it
// cannot be planned.
func (e *Engine) planFor(r *dispatch.Rule) planMode {
	if e.capturing() || !r.Needs.Plannable() {
		return planNone
	}
	g := e.d.g
	switch {
	case e.mode == ModeStrict && g.ops == 0 && len(g.params) == 0 && len(g.pending) == 0:
		return planStrict
	case e.mode == ModeStrict && g.cold != nil && !e.noFusedPath:
		return planFused // a cold run records as fused mode does (cold_run.go)
	case e.mode == ModeFused && !e.noFusedPath:
		return planFused
	}
	return planNone
}

var sigSeed = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// opSignature hashes everything a rule's lowering may depend on: the op, every
// non-tensor argument by value (Python numbers included: a rule may derive
// other numbers from them), each tensor's view geometry and dtype, the state
// of its storage, the bytes of CPU scalars, and which arguments share a
// storage. Without pending, every storage must hold a buffer (the strict fast
// path binds buffers); with it, a storage may also hold a pending value or
// none, and its state is a part of the signature (the fused fast path reads
// values). A known integer range is a part of both (a rule may skip an index
// check for it). ok is false when the op cannot be
// planned.
func (e *Engine) opSignature(op string, args []dispatch.Arg, pending bool) (sig hlo.Hash, ok bool) {
	kind := sigStrict
	if pending {
		kind = sigFused
	}
	return e.signature(op, args, kind)
}

// sigKind says which fast path a signature is for.
type sigKind uint8

const (
	sigStrict sigKind = iota // the strict fast path: every storage holds a buffer
	sigFused                 // the fused fast path: a storage's state is a part of it
	sigSolo                  // the strict signature the op will have once its pending storages hold buffers (cold_run.go)
)

// signature is opSignature for the given kind.
func (e *Engine) signature(op string, args []dispatch.Arg, kind sigKind) (sig hlo.Hash, ok bool) {
	pending := kind == sigFused
	w := sigWriter{buf: e.sigBuf[:0]}
	w.bytes(op)
	switch { // the two fast paths share a table; a cold run's windows start at runtime offsets (windowAtRuntime)
	case pending && e.inColdRun():
		w.u(2)
	case pending:
		w.u(1)
	default:
		w.u(0)
	}
	var addrs []uint64
	for i, a := range args {
		w.u(uint64(a.Kind))
		if i+1 == e.sigSeed {
			w.u(0) // a new seed every call: a plan uploads it (srcSeed)
		} else {
			w.u(uint64(a.Int))
		}
		w.u(math.Float64bits(a.Double))
		w.i64s(a.Ints)
		w.u(uint64(len(a.Doubles)))
		for _, d := range a.Doubles {
			w.u(math.Float64bits(d))
		}
		w.bytes(a.Str)
		w.u(uint64(len(a.Handles)))
		for _, h := range a.Handles {
			t := h.(*TensorDesc)
			if !e.sigTensor(&w, t, kind) {
				return hlo.Hash{}, false
			}
			if t.CPU || t.Addr == 0 {
				continue
			}
			// Which earlier tensor argument shares this storage, if any.
			class := len(addrs)
			for k, a := range addrs {
				if a == t.Addr {
					class = k
					break
				}
			}
			w.u(uint64(class))
			addrs = append(addrs, t.Addr)
		}
	}
	layoutsKey(w.u, e.layouts)
	e.sigBuf = w.buf
	return hlo.Hash{Lo: maphash.Bytes(sigSeed[0], w.buf), Hi: maphash.Bytes(sigSeed[1], w.buf)}, true
}

// sigTensor writes tensor argument t into a signature: its view, its host
// bytes, and its storage's shape, state and known range. It reports false
// when the op cannot be planned.
func (e *Engine) sigTensor(w *sigWriter, t *TensorDesc, kind sigKind) bool {
	pending := kind == sigFused
	w.u(uint64(t.Offset))
	w.u(uint64(t.DType))
	w.i64s(t.Sizes)
	w.i64s(t.Strides)
	var flags uint64
	if t.CPU {
		flags |= 1
	}
	if t.Number {
		flags |= 2
	}
	if t.Addr == 0 {
		flags |= 4
	}
	w.u(flags)
	w.u(uint64(len(t.Host)))
	w.buf = append(w.buf, t.Host...)
	if t.CPU || t.Addr == 0 {
		return true
	}
	st, found := e.storages[t.Addr]
	switch {
	case !found || st.pad != nil && kind != sigStrict: // a strict op binds a padded buffer as it is
		return false
	case kind == sigStrict && st.shaped && (st.buf == nil || st.pending != nil):
		return false // a new storage (unshaped) is fine: the op gives it its value, shape and dtype
	case kind == sigSolo && (!st.shaped || st.buf == nil && st.pending == nil):
		return false
	}
	w.u(uint64(st.nbytes))
	w.u(uint64(st.dtype))
	w.i64s(st.shape)
	w.u(uint64(st.grown))       // cat pads an append to an append
	if !pending && !st.shaped { // strict and solo signatures: a new storage the op gives its first value
		w.u(1)
	} else if !pending {
		w.u(0)
	}
	if st.pad != nil {
		w.u(uint64(st.pad.dim + 1))
		w.u(uint64(st.pad.cap))
	} else {
		w.u(0)
	}
	if pending {
		w.u(uint64(storageState(st)))
		if st.pending != nil {
			w.bytes(string(st.pending.T.Elem))
			w.i64s(st.pending.T.Shape)
		}
	}
	// A rule may skip an index check for a known range.
	if st.known != nil {
		w.u(1)
		w.u(uint64(st.known.lo))
		w.u(uint64(st.known.hi))
	} else {
		w.u(0)
	}
	return true
}

// sigWriter appends the parts of an op signature to a buffer.
type sigWriter struct{ buf []byte }

func (w *sigWriter) u(v uint64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, v) }

func (w *sigWriter) i64s(vs []int64) {
	w.u(uint64(len(vs)))
	for _, v := range vs {
		w.u(uint64(v))
	}
}

// bytes writes s with its length.
func (w *sigWriter) bytes(s string) {
	w.u(uint64(len(s)))
	w.buf = append(w.buf, s...)
}

// scalarSource returns the source of a parameter fed by buffer b: a cached
// number, the running op's seed, or not ok for a one-off upload (indices),
// which a plan cannot replay.
func (e *Engine) scalarSource(b *pjrt.Buffer) (source, bool) {
	if k, ok := e.d.scalarOf[b]; ok {
		return source{kind: srcScalar, scalar: k}, true
	}
	for _, s := range e.opSeeds {
		if s.buf == b {
			return source{kind: srcSeed, arg: s.arg, buf: b}, true
		}
	}
	return source{}, false
}

// seedBuffer uploads the seed in argument arg of args for a replay; it is
// destroyed once the graph or launch reading it has run.
func (e *Engine) seedBuffer(args []dispatch.Arg, arg int) *pjrt.Buffer {
	return e.uploadSeed(args[arg].Int)
}

// uploadSeed uploads seed v as an s64 buffer on the current device.
func (e *Engine) uploadSeed(v int64) *pjrt.Buffer {
	t0 := time.Now()
	buf, err := e.client.BufferFromHost(encodeInt(v, hlo.S64), pjrt.S64, nil, e.dev.cur)
	if err != nil {
		panic(fmt.Errorf("uploading a seed: %w", err))
	}
	e.noteTransfer("h2d", 8, t0, "integer")
	return buf
}

// writtenStorage returns the storage written by w: a new result from
// results, or the storage of an argument.
func (e *Engine) writtenStorage(results []*Storage, args []dispatch.Arg, w planWrite) *Storage {
	if w.result >= 0 {
		return results[w.result]
	}
	return e.argStorage(args, w.arg, w.idx)
}

// argStorage returns the storage of tensor idx of argument arg.
func (e *Engine) argStorage(args []dispatch.Arg, arg, idx int) *Storage {
	t := args[arg].Handles[idx].(*TensorDesc)
	return e.storages[t.Addr]
}

// argStorages yields, in argument order, each device storage the tensor
// arguments view, once, with the position (argument, tensor) of the first
// tensor viewing it; the storage is nil for an address the engine does not
// hold.
func (e *Engine) argStorages(args []dispatch.Arg) iter.Seq2[[2]int, *Storage] {
	return func(yield func([2]int, *Storage) bool) {
		seen := map[uint64]bool{}
		for i, a := range args {
			for j, h := range a.Handles {
				t := h.(*TensorDesc)
				if t.CPU || t.Addr == 0 || seen[t.Addr] {
					continue
				}
				seen[t.Addr] = true
				if !yield([2]int{i, j}, e.storages[t.Addr]) {
					return
				}
			}
		}
	}
}

// argPositions maps each tpu storage among args to its first (argument,
// tensor index).
func argPositions(args []dispatch.Arg) map[uint64][2]int {
	pos := map[uint64][2]int{}
	for i, a := range args {
		for j, h := range a.Handles {
			if t := h.(*TensorDesc); !t.CPU && t.Addr != 0 {
				if _, seen := pos[t.Addr]; !seen {
					pos[t.Addr] = [2]int{i, j}
				}
			}
		}
	}
	return pos
}

// resultShapes returns the shape and dtype of each functional result, and
// the result index of each result's address.
func resultShapes(outs []OutTensor) ([]OutTensor, map[uint64]int) {
	var rs []OutTensor
	index := map[uint64]int{}
	for i, o := range outs {
		index[o.Addr] = i
		rs = append(rs, OutTensor{NBytes: o.NBytes, DType: o.DType, Sizes: o.Sizes})
	}
	return rs, index
}

// newResults allocates a contiguous storage for each result a plan replays
// (shape and dtype from rs), or none when one allocation fails.
func (e *Engine) newResults(rs []OutTensor) (sts []*Storage, outs []OutTensor, err error) {
	sts, outs = make([]*Storage, 0, len(rs)), make([]OutTensor, 0, len(rs))
	for _, r := range rs {
		addr, err := e.newStorage(r.NBytes, e.dev.cur)
		if err != nil {
			for _, st := range sts {
				e.freeStorage(st)
			}
			return nil, nil, err
		}
		st := e.storages[addr]
		st.shaped, st.dtype, st.shape = true, r.DType, slices.Clone(r.Sizes)
		sts = append(sts, st)
		outs = append(outs, OutTensor{Addr: addr, NBytes: r.NBytes, DType: r.DType, Sizes: st.shape})
	}
	return sts, outs, nil
}

// freeStorage undoes newStorage for a result that was never handed out.
func (e *Engine) freeStorage(st *Storage) {
	delete(e.storages, st.addr)
	st.dead = true
	e.live--
	e.liveB -= st.nbytes
	e.dropBuffer(st.buf)
	e.addrs.release(st.addr, st.nbytes)
}
