package engine

import (
	"bytes"
	"hash/maphash"
	"math"
	"slices"

	"torchtpu/dispatch"
	"torchtpu/pjrt"
)

// Step tapes (fused mode). A training loop records the same ops every step:
// the fused fast path (plan_fused.go) already pastes each op's fragment
// without running its rule, but the pasted graph is still built, hashed and
// looked up at every flush. A step tape records, for the ops of one segment
// (everything from an empty graph to the flush that runs it), a short key per
// op and where each parameter and output of the program the flush launched
// comes from and goes to. When a later segment's ops arrive with the same
// keys, nothing is recorded: results get storages, and the flush binds the
// segment's buffers and launches the tape's program (step_replay.go).
//
// An op's key holds what its lowering depends on: the op, its non-tensor
// arguments, each tensor's view and dtype, and the identity of each tensor's
// storage within the segment, its slot. A storage gets the next slot when
// the segment first sees it: a storage from before the segment (a parameter,
// optimizer state, a batch) with its state, dtype, shape and known range, or
// an op's new result. The key has two parts: the hard part (all of the above
// but numbers) and the soft part (Python numbers, seeds, view offsets and
// CPU scalars), which runtime inputs usually carry: an op whose soft part
// differs, or that uploads values of its own, runs its rule again, and keeps
// the replay when it records the same fragment. A declared seed is not a part
// of the key: the replay uploads the call's seed.

// maxTapes bounds a device's tape table.
const maxTapes = 64

// tapes is one device's step tapes, by the hash of their first op's hard key
// (recent: the tapes used last stay).
type tapes = recent[uint64, *tape]

var tapeSeed = maphash.MakeSeed()

// tape is a segment's ops and the program its flush launched.
type tape struct {
	ops     []tapeOp
	params  []paramSrc // while recording: the source of each graph parameter, in order
	key     string     // the program's key in e.cache
	args    []paramSrc // the source of each program parameter
	outs    []int32    // the slot each program output goes to
	slotOut []int32    // each slot's program output, or -1
	donated int        // the program's donation pairs
	inPlace []bool     // each program output that takes over its storage's buffer (donation)
}

// weight returns the ops t's segment counted (a compiled program's replay counts its ops).
func (t *tape) weight() int {
	n := 0
	for _, op := range t.ops {
		n += max(1, op.p.weight)
	}
	return n
}

// tapeOp is one op of a tape.
type tapeOp struct {
	hard, soft []byte
	p          *plan       // the fragment the op recorded, its sources and writes
	in         []int32     // the slot of each argument source of p, in order
	writes     []int32     // the slot each of p.writes gives a value
	known      []slotRange // the value ranges the op left on the storages it wrote
}

// slotRange is the known value range of a slot's storage.
type slotRange struct {
	slot int32
	r    intRange
}

// writtenRanges returns the value ranges the storages of slots writes hold now.
func (s *segment) writtenRanges(writes []int32) []slotRange {
	var rs []slotRange
	for _, slot := range writes {
		if k := s.slots[slot].known; k != nil && !slices.ContainsFunc(rs, func(r slotRange) bool { return r.slot == slot }) {
			rs = append(rs, slotRange{slot, *k})
		}
	}
	return rs
}

// applyRanges gives the storages te's op wrote the value ranges it left on them.
func (s *segment) applyRanges(te *tapeOp) {
	for _, slot := range te.writes {
		s.slots[slot].known = nil
	}
	for _, r := range te.known {
		k := r.r
		s.slots[r.slot].known = &k
	}
}

// paramSrc is where a program parameter comes from: the buffer slot idx held
// when the segment first saw it (op -1), or source idx among the sources
// after the argument ones of op's plan (a number or an upload). Op -2 is a
// parameter no op of the tape added (the first call of an op that asked for
// its outs to be resized records before it fails); no program of a tape
// may take one.
type paramSrc struct{ op, idx int32 }

// unknownParam is the source of a parameter no op of the tape added.
var unknownParam = paramSrc{op: -2}

// segment is the ops of one device since its last flush, as step tapes see
// them: a recording (rec) or a replay of a tape (tape), or neither once it can
// be neither.
type segment struct {
	epoch      uint64
	slots      []*Storage     // each slot's storage
	ext        []*pjrt.Buffer // each slot's buffer when first seen (nil for results)
	written    []bool         // slots that an op of the segment gave a value
	hard, soft []byte         // the running op's key (tapeKey)
	marks      []keyMark      // where the parts of hard start, under TORCHTPU_LOG=replays
	rec        *tape          // recording: the tape being made
	tape       *tape          // replaying: the tape the ops follow
	next       int            // replaying: the index of the tape op the next op must match
	opSlots    int            // the slots before the running op's
	retired    []*pjrt.Buffer // replaying: buffers to destroy once the segment has run
}

// add gives st the segment's next slot.
func (s *segment) add(st *Storage) {
	st.seg, st.slot = s.epoch, int32(len(s.slots))
	s.slots = append(s.slots, st)
	s.ext = append(s.ext, st.buf)
	s.written = append(s.written, false)
}

// has reports whether st has a slot in the segment.
func (s *segment) has(st *Storage) bool { return st.seg == s.epoch }

// stepSegment returns the current device's segment for the op about to run,
// starting one when the graph is empty, or nil when step tapes do not apply:
// not fused mode, a capture, the fast paths off (TORCHTPU_STEP_REPLAY=0,
// TORCHTPU_FUSED_FAST_PATH=0), or a segment that can neither record nor
// replay.
func (e *Engine) stepSegment() *segment {
	if e.mode != ModeFused || e.noFusedPath || e.noStepTape || e.capturing() {
		return nil
	}
	if e.padSeen && e.d.seg == nil {
		e.padSeen = e.anyGrowing()
	}
	if e.padSeen {
		return nil
	}
	s := e.d.seg
	if s == nil {
		g := e.d.g
		if g.ops > 0 || g.b.Len() > 0 || len(g.params) > 0 || len(g.pending) > 0 || len(g.extra) > 0 {
			return nil
		}
		e.segments++
		s = &segment{epoch: e.segments, rec: &tape{}}
		e.d.seg = s
	}
	if s.rec == nil && s.tape == nil {
		return nil
	}
	return s
}

// anyGrowing reports whether a live storage is padded or marked as an
// append (pad.go): step tapes do not know padding, so they wait until none is.
func (e *Engine) anyGrowing() bool {
	for _, st := range e.storages {
		if st.pad != nil || st.grown != 0 {
			return true
		}
	}
	return false
}

// tapeKey writes the key of op on args into s.hard and s.soft, giving each
// tensor argument's storage a slot if it has none. It reports false when an
// argument's storage is unknown.
func (e *Engine) tapeKey(s *segment, op string, args []dispatch.Arg) bool {
	h, n := sigWriter{buf: s.hard[:0]}, sigWriter{buf: s.soft[:0]}
	s.marks = s.marks[:0]
	e.markKey(s, 0, -1, -1, 'o')
	h.bytes(op)
	h.u(uint64(dispatch.DefaultFloat()))
	for i, a := range args {
		e.markKey(s, len(h.buf), i, -1, 'a')
		h.u(uint64(a.Kind))
		h.i64s(a.Ints)
		h.bytes(a.Str)
		h.u(uint64(len(a.Doubles)))
		h.u(uint64(len(a.Handles)))
		if i+1 != e.sigSeed { // a replay uploads the call's seed (replayTapeOp)
			n.u(uint64(a.Int))
		}
		n.u(math.Float64bits(a.Double))
		for _, d := range a.Doubles {
			n.u(math.Float64bits(d))
		}
		for j, hd := range a.Handles {
			t := hd.(*TensorDesc)
			e.markKey(s, len(h.buf), i, j, 'v')
			h.u(uint64(t.DType))
			h.i64s(t.Sizes)
			h.i64s(t.Strides)
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
			h.u(flags)
			h.u(uint64(len(t.Host)))
			n.u(uint64(t.Offset))
			n.buf = append(n.buf, t.Host...)
			if t.CPU || t.Addr == 0 {
				continue
			}
			st, ok := e.storages[t.Addr]
			if !ok {
				return false
			}
			e.markKey(s, len(h.buf), i, j, 's')
			if s.has(st) {
				h.u(uint64(st.slot))
				continue
			}
			h.u(1<<63 | uint64(len(s.slots)))
			s.add(st)
			h.u(uint64(st.nbytes))
			h.u(uint64(storageState(st)))
			h.u(uint64(st.dtype))
			h.i64s(st.shape)
			if st.pending != nil {
				h.bytes(string(st.pending.T.Elem))
				h.i64s(st.pending.T.Shape)
			}
			if st.known != nil {
				h.u(1)
				h.u(uint64(st.known.lo))
				h.u(uint64(st.known.hi))
			} else {
				h.u(0)
			}
		}
	}
	e.markKey(s, len(h.buf), -1, -1, 'l')
	layoutsKey(h.u, e.layouts)
	s.hard, s.soft = h.buf, n.buf
	return true
}

// tapeFor returns the tape whose first op has hard key k, if any.
func (d *deviceState) tapeFor(k []byte) *tape {
	t, _ := d.tapes.get(maphash.Bytes(tapeSeed, k))
	if t == nil || !bytes.Equal(t.ops[0].hard, k) {
		return nil
	}
	return t
}

// noteTapeOp appends the op just recorded to the segment's tape: its key,
// plan p (nil: the op cannot be replayed, nor the segment), the slots it read
// and wrote, and the source of each graph parameter it added (the graph had
// n0 before it). outs are its new results.
func (e *Engine) noteTapeOp(s *segment, p *plan, args []dispatch.Arg, outs []OutTensor, n0 int) {
	if s.rec == nil || e.d.seg != s {
		return
	}
	if p == nil {
		s.rec = nil
		return
	}
	te := tapeOp{hard: bytes.Clone(s.hard), soft: bytes.Clone(s.soft), p: p}
	results := make([]*Storage, len(outs))
	for i, o := range outs {
		results[i] = e.storages[o.Addr]
		s.add(results[i])
	}
	for _, src := range p.sources {
		if src.kind == srcArg {
			te.in = append(te.in, e.argStorage(args, src.arg, src.idx).slot)
		}
	}
	for _, w := range p.writes {
		st := e.writtenStorage(results, args, w)
		// A replay reads a value the segment gave a storage as a value of its base type.
		if !s.has(st) || st.pending == nil || !st.pending.T.Equal(storedType(st.dtype, st.shape)) {
			s.rec = nil
			return
		}
		te.writes = append(te.writes, st.slot)
		s.written[st.slot] = true
	}
	te.known = s.writtenRanges(te.writes)
	if !e.noteParams(s, s.rec, &te, n0) {
		s.rec = nil
		return
	}
	s.rec.ops = append(s.rec.ops, te)
}

// noteParams appends to rec the source of each graph parameter te's op added
// (from position n0 on): an argument storage's buffer, or the next of the
// plan's other sources. It reports false when a parameter is neither.
func (e *Engine) noteParams(s *segment, rec *tape, te *tapeOp, n0 int) bool {
	for len(rec.params) < n0 {
		rec.params = append(rec.params, unknownParam)
	}
	extras := te.p.sources[len(te.in):]
	op, j := int32(len(rec.ops)), 0
next:
	for _, b := range e.d.g.params[n0:] {
		for _, slot := range te.in {
			if b != nil && s.ext[slot] == b {
				rec.params = append(rec.params, paramSrc{op: -1, idx: slot})
				continue next
			}
		}
		if j == len(extras) {
			return false
		}
		switch x := extras[j]; x.kind {
		case srcScalar:
			if k, ok := e.d.scalarOf[b]; !ok || k != x.scalar {
				return false
			}
		case srcUpload, srcSeed, srcConst:
			if x.buf != b {
				return false
			}
		default:
			return false
		}
		rec.params = append(rec.params, paramSrc{op: op, idx: int32(j)})
		j++
	}
	return j == len(extras)
}

// saveTape keeps the tape segment s recorded, now that its flush launched
// prog with graph g's storage outputs dst (aliases: its donation pairs,
// parameter to output), in the device's table; a segment some of whose ops or
// parameters the tape does not account for, or whose flush also read values
// to the host, is not kept.
func (e *Engine) saveTape(s *segment, g *graph, prog *program, dst []*Storage, aliases map[int]int) {
	if s == nil || s.rec == nil {
		return
	}
	t := s.rec
	if len(t.ops) == 0 || t.weight() != g.ops || len(t.params) > len(g.params) || len(g.extra) > 0 || e.lastProg == "" {
		return
	}
	t.args = make([]paramSrc, len(prog.used))
	for i, pos := range prog.used {
		if pos >= len(t.params) || t.params[pos] == unknownParam {
			return
		}
		t.args[i] = t.params[pos]
	}
	t.params = nil
	t.slotOut = slices.Repeat([]int32{-1}, len(s.slots))
	for k, st := range dst {
		if !s.has(st) {
			return
		}
		t.outs = append(t.outs, st.slot)
		t.slotOut[st.slot] = int32(k)
	}
	t.inPlace = make([]bool, len(dst))
	for _, k := range aliases {
		t.inPlace[k] = true
	}
	t.key, t.donated = e.lastProg, len(aliases)
	e.d.tapes.put(maphash.Bytes(tapeSeed, t.ops[0].hard), t)
}
