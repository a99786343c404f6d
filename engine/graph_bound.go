package engine

import (
	"slices"

	"torchtpu/dispatch"
)

// A graph's replay binds every storage the capture holds by address: each
// one is looked up, checked against the capture and made ready (flushed,
// unpadded, materialized), which costs a map lookup and an allocation per
// storage. After a replay that passed those checks, the program keeps the
// storages it resolved (Program.bound); the next replay of the graph takes
// them as they are when boundHolds finds every condition the full checks
// would act on unchanged, and runs the full checks (and their errors)
// otherwise.

// boundStorages is what a graph replay checked in full: its storages, and
// the dtype and shape each held then (equal to the capture's, as the checks
// passed), kept side by side so that boundHolds reads little memory.
type boundStorages struct {
	sts    []*Storage
	dtypes []dispatch.DType
	shapes [][]int64 // slices of one array
}

// boundHolds reports whether p's bound storages can be bound again without
// the full checks of graphInputs and programInputs. It holds when every
// bound storage is still the engine's record at its address (no Free or
// freeStorage removed it: dead is false), is shaped with the dtype and shape
// the checked replay saw, is on p's device, holds a buffer and no pending
// value, is not padded, and is not held by the step segment of p's device.
// For such a storage the full path finds the same record (storageOf), does
// not flush, unpad, materialize or leave a tape, and its checks pass: the
// description graphInputs builds is the storage itself, at offset 0 with
// contiguous strides, and the addresses are distinct, so each input aliases
// itself.
func (e *Engine) boundHolds(p *Program) bool {
	b := p.bound
	if b == nil || p.device != e.dev.cur {
		return false
	}
	seg := e.d.seg
	for i, st := range b.sts {
		if st.dead || !st.shaped || st.buf == nil || st.pending != nil || st.pad != nil || st.device != p.device ||
			st.dtype != b.dtypes[i] || !slices.Equal(st.shape, b.shapes[i]) || seg != nil && seg.has(st) {
			return false
		}
	}
	return true
}

// keepBound records sts, the storages a graph replay of p resolved and
// checked in full, for the next replay's boundHolds. Programs whose
// parameters read a view's offset keep nothing: the fast path has no
// descriptions to read it from.
func (p *Program) keepBound(sts []*Storage) {
	for _, b := range p.binds {
		if b.kind == bindOffset {
			return
		}
	}
	n := 0
	for _, st := range sts {
		n += len(st.shape)
	}
	b := &boundStorages{sts: sts, dtypes: make([]dispatch.DType, len(sts)), shapes: make([][]int64, len(sts))}
	dims := make([]int64, 0, n)
	for i, st := range sts {
		k := len(dims)
		dims = append(dims, st.shape...)
		b.dtypes[i], b.shapes[i] = st.dtype, dims[k:len(dims):len(dims)]
	}
	p.bound = b
}
