package engine

import (
	"hash/maphash"
	"slices"
	"sync/atomic"

	"torchtpu/hlo"
)

// Offsets that move between programs. A window of a storage pending in the
// graph is read and written at constant offsets, which XLA folds; a window
// of a storage that holds a buffer lands at runtime offsets (Engine.Read).
// A loop that writes a step's token at the step's position of a tensor it
// computed in the same program (a beam search's running sequences) would
// then compile a program for every position. So the engine remembers, for
// each place a window lands (the op, the storage's shape and dtype, the
// window's sizes and strides), the offsets it took in earlier graphs: once
// a later graph takes one it never saw there, that place lands at runtime
// offsets from then on. Offsets that differ within one graph (the query,
// key and value of one projection) and repeat in the next do not count.

// graphSerial numbers the graphs a process records.
var graphSerial atomic.Uint64

// windowSite is what the engine remembers of a place a window lands.
type windowSite struct {
	graph  uint64  // the graph of the latest sighting
	now    []int64 // offsets seen in that graph
	before []int64 // offsets seen in earlier graphs
	varies bool    // a later graph took an offset an earlier one had not
}

// maxSiteOffsets bounds the offsets a site remembers: past it the site varies.
const maxSiteOffsets = 16

// maxWindowSites bounds the sites remembered; past it those that do not vary
// are forgotten.
const maxWindowSites = 4096

// offsetMoves reports whether the window t of the pending storage st lands
// at runtime offsets: its place took an offset in this graph that earlier
// graphs did not. write tells a write from a read.
func (e *Engine) offsetMoves(st *Storage, t *TensorDesc, write bool) bool {
	v := t.view()
	if v.offset == 0 && slices.Equal(v.sizes, st.shape) && v.isContiguous() || v.coversBase(st.shape) {
		return false
	}
	w := sigWriter{buf: e.sigBuf[:0]}
	w.bytes(e.curOp)
	w.u(uint64(st.dtype))
	w.u(uint64(t.DType))
	if write {
		w.u(1)
	}
	w.i64s(st.shape)
	w.i64s(v.sizes)
	w.i64s(v.strides)
	key := hlo.Hash{Lo: maphash.Bytes(sigSeed[0], w.buf), Hi: maphash.Bytes(sigSeed[1], w.buf)}
	e.sigBuf = w.buf
	if e.windowSites == nil {
		e.windowSites = map[hlo.Hash]*windowSite{}
	}
	s := e.windowSites[key]
	cur := e.d.g.serial
	if s == nil {
		if len(e.windowSites) >= maxWindowSites {
			e.forgetSites()
		}
		e.windowSites[key] = &windowSite{graph: cur, now: []int64{v.offset}}
		return false
	}
	if s.varies {
		return true
	}
	if s.graph != cur {
		for _, o := range s.now {
			if !slices.Contains(s.before, o) {
				s.before = append(s.before, o)
			}
		}
		s.graph, s.now = cur, s.now[:0]
	}
	if !slices.Contains(s.now, v.offset) {
		s.now = append(s.now, v.offset)
	}
	if len(s.before) > 0 && !slices.Contains(s.before, v.offset) || len(s.before)+len(s.now) > maxSiteOffsets {
		s.varies, s.now, s.before = true, nil, nil
	}
	return s.varies
}

// forgetSites forgets the sites whose offsets have not moved.
func (e *Engine) forgetSites() {
	for k, s := range e.windowSites {
		if !s.varies {
			delete(e.windowSites, k)
		}
	}
	if len(e.windowSites) >= maxWindowSites {
		clear(e.windowSites)
	}
}
