package engine

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"

	"torchtpu/dispatch"
	"torchtpu/hlo"
)

// Padded storages (dispatch/padded.go). A storage may hold its value padded
// along one dimension: its shape stays the base shape PyTorch sees, while its
// buffer or pending value has pad.cap elements in dimension pad.dim, those
// past shape[pad.dim] zero. Only a rule that returns a padded result makes
// one (cat as an append, from the second append on: a first append's result
// is plain and only marked as grown), and only rules that ask for the padded
// form (ReadPadded) compute on it; the size then reaches the program as a
// runtime scalar, so a tensor that grows by a step at a time is read and
// appended to by one program per capacity instead of one per size.
// Everything else sees the storage at its size:
//
//   - a view of it that does not span its whole size along pad.dim (the
//     last token, the newest key) is read by dynamic_slice at runtime starts,
//     which serves every size as well;
//   - a whole read cuts the value to its size (a static slice);
//   - a host read of the whole storage copies the buffer and drops the
//     padding on the host;
//   - a write, a compiled program or graph binding it, or a collective first
//     turns it back into a plain storage (unpad).
//
// In strict mode plans cover ops that read or make padded storages (a padded
// argument's capacity is a part of the signature; plan_strict.go); fused
// plans and step tapes do not, so there the rule runs each time. The bytes
// past a storage's size are not counted as allocated (nor against
// TORCHTPU_MEMORY_LIMIT). TORCHTPU_PAD=0 turns padding off; capacities start
// at TORCHTPU_PAD_MIN (default 128) and double.

// padding says how a storage's value is padded.
type padding struct {
	dim int   // the padded dimension
	cap int64 // its length in the value
}

// defaultPadMin is the smallest capacity: a multiple of a TPU's 128 lanes.
const defaultPadMin = 128

// padSettings reads TORCHTPU_PAD and TORCHTPU_PAD_MIN.
func padSettings() (on bool, least int64) {
	on = os.Getenv("TORCHTPU_PAD") != "0"
	least = defaultPadMin
	if s := os.Getenv("TORCHTPU_PAD_MIN"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			least = n
		}
	}
	return on, least
}

// PadCapacity implements dispatch.PaddedReader: the least capacity, doubled
// until it holds n. Results are not padded in debug mode (its NaN checks
// read whole values), while a program is captured (its inputs are bound at
// their sizes) or with TORCHTPU_PAD=0.
func (e *Engine) PadCapacity(n int64) (int64, bool) {
	if !e.padOn || e.mode == ModeDebug || e.capturing() || n <= 0 {
		return 0, false
	}
	c := e.padMin
	for c < n {
		c *= 2
	}
	return c, true
}

// Grows implements dispatch.PaddedReader. A result grows when a result of
// its name had n-1 elements lately and a tensor held padded has size n (a
// decoding step's key positions beside its padding mask). Each name keeps
// its last 64 sizes; past 512 names the one used least recently is
// forgotten.
func (e *Engine) Grows(key string, n int64) bool {
	if err := e.needed(e.ruleNeeds().Grows, "asks whether its result grows"); err != nil {
		panic(err)
	}
	if e.lengths == nil {
		e.lengths = map[string]*lengths{}
	}
	e.lengthUses++
	l := e.lengths[key]
	if l == nil {
		if len(e.lengths) >= 512 {
			e.forgetLength()
		}
		l = &lengths{}
		e.lengths[key] = l
	}
	l.used = e.lengthUses
	grew := slices.Contains(l.sizes, n-1) && e.holdsPaddedSize(n)
	if i := slices.Index(l.sizes, n); i >= 0 {
		l.sizes = slices.Delete(l.sizes, i, i+1)
	} else if len(l.sizes) == 64 {
		l.sizes = l.sizes[1:]
	}
	l.sizes = append(l.sizes, n) // the most recent last
	return grew
}

// lengths are the recent sizes of results of one name (Grows).
type lengths struct {
	sizes []int64
	used  uint64 // Engine.lengthUses at the name's last use
}

// forgetLength forgets the name used least recently.
func (e *Engine) forgetLength() {
	var oldest string
	var at uint64
	for k, l := range e.lengths {
		if oldest == "" || l.used < at {
			oldest, at = k, l.used
		}
	}
	delete(e.lengths, oldest)
}

// holdsPaddedSize reports whether a storage held padded has size n along
// its padded dimension.
func (e *Engine) holdsPaddedSize(n int64) bool {
	if !e.padSeen || n <= 1 {
		return false
	}
	for _, st := range e.storages {
		if st.pad != nil && st.shape[st.pad.dim] == n {
			return true
		}
	}
	return false
}

// Appended implements dispatch.PaddedReader.
func (e *Engine) Appended(h any, dim int) bool {
	t := h.(*TensorDesc)
	if t.CPU || t.Addr == 0 || e.capturing() {
		return false
	}
	st := e.storages[t.Addr]
	return st != nil && st.grown == dim+1 && st.dtype == t.DType && t.offsetFreeWhole(st.shape)
}

// PaddedCap implements dispatch.PaddedReader.
func (e *Engine) PaddedCap(h any, dim int) (int64, bool) {
	st := e.paddedWhole(h.(*TensorDesc), dim)
	if st == nil {
		return 0, false
	}
	return st.pad.cap, true
}

// ReadPadded implements dispatch.PaddedReader.
func (e *Engine) ReadPadded(h any, dim int) (dispatch.Padded, bool) {
	st := e.paddedWhole(h.(*TensorDesc), dim)
	if st == nil {
		return dispatch.Padded{}, false
	}
	size := e.windowStarts([]int64{st.shape[dim]})[0]
	e.d.g.notePadCap(st.pad.cap)
	return dispatch.Padded{V: e.physValue(st), Dim: dim, Cap: st.pad.cap, Size: size}, true
}

// paddedWhole returns the storage of t when t views it whole and the storage
// is padded along dim, else nil.
func (e *Engine) paddedWhole(t *TensorDesc, dim int) *Storage {
	if t.CPU || t.Addr == 0 || e.capturing() {
		return nil
	}
	st := e.storages[t.Addr]
	if st == nil || st.pad == nil || st.pad.dim != dim || st.dtype != t.DType || !t.offsetFreeWhole(st.shape) {
		return nil
	}
	return st
}

// physShape returns the shape of st's buffer or pending value.
func physShape(st *Storage) []int64 {
	if st.pad == nil {
		return st.shape
	}
	s := slices.Clone(st.shape)
	s[st.pad.dim] = st.pad.cap
	return s
}

// physValue returns st's value as held, padded (st has a value).
func (e *Engine) physValue(st *Storage) *hlo.Value {
	if st.pending != nil {
		return st.pending
	}
	if st.buf == nil {
		panic(fmt.Errorf("torchtpu: a padded storage holds no value"))
	}
	return e.d.g.param(st.buf, storedType(st.dtype, physShape(st)))
}

// cutTo returns v (padded along dim) cut to size elements there.
func cutTo(b *hlo.Builder, v *hlo.Value, dim int, size int64) *hlo.Value {
	if v.T.Shape[dim] == size {
		return v
	}
	rank := v.T.Rank()
	start, limit, step := make([]int64, rank), slices.Clone(v.T.Shape), make([]int64, rank)
	for i := range step {
		step[i] = 1
	}
	limit[dim] = size
	return b.Slice(v, start, limit, step)
}

// unpad turns a padded storage into a plain one: its pending value becomes
// its value cut to its size.
func (e *Engine) unpad(st *Storage) {
	if st == nil || st.pad == nil {
		return
	}
	v := cutTo(e.d.g.b, e.physValue(st), st.pad.dim, st.shape[st.pad.dim])
	st.pad = nil
	e.setPending(st, v)
}

// unpadDevice unpads every padded storage of the current device, in address
// order (before a graph capture, which binds storages by address).
func (e *Engine) unpadDevice() {
	var sts []*Storage
	for _, st := range e.storages {
		if st.pad != nil && st.device == e.dev.cur {
			sts = append(sts, st)
		}
	}
	slices.SortFunc(sts, func(a, b *Storage) int { return cmp.Compare(a.addr, b.addr) })
	for _, st := range sts {
		e.unpad(st)
	}
}

// unpadStorages unpads the storages at addrs, each on its own device (before
// a collective, which binds their buffers).
func (e *Engine) unpadStorages(addrs []uint64) error {
	cur := e.dev.cur
	for _, a := range addrs {
		if st := e.storages[a]; st != nil && st.pad != nil {
			if err := e.useDevice(st.device); err != nil {
				return err
			}
			e.unpad(st)
		}
	}
	return e.useDevice(cur)
}

// readPaddedView reads the view t of the padded storage st by dynamic_slice
// at runtime starts, when it is a unit-step slice that does not span st's
// whole size along the padded dimension; ok is false otherwise.
func (e *Engine) readPaddedView(st *Storage, t *TensorDesc) (*hlo.Value, bool) {
	if st.pad == nil || e.capturing() || st.dtype != t.DType || numel(t.Sizes) == 0 {
		return nil, false
	}
	v := t.view()
	p, ok := planSlice(st.shape, v)
	d := st.pad.dim
	if !ok || !unitSteps(p) || p.limit[d]-p.start[d] == st.shape[d] {
		return nil, false
	}
	sizes := make([]int64, len(p.start))
	for j := range sizes {
		sizes[j] = p.limit[j] - p.start[j]
	}
	b := e.d.g.b
	e.d.g.notePadCap(st.pad.cap)
	x := b.DynamicSlice(e.physValue(st), e.windowStarts(p.start), sizes)
	return placeSlice(b, x, p, v), true
}

// padResult places a rule's padded result r (pad, from dispatch.Ctx.Pads) of
// dtype d: it returns the value to keep and the padding of its storage, nil
// when the result cannot stay padded (a memory order other than the
// contiguous one, complex32's stored pairs) and is cut to its size instead.
func padResult(b *hlo.Builder, r *hlo.Value, pad dispatch.PadResult, order []int64, d dispatch.DType) (*hlo.Value, *padding) {
	if pad.Dim < 0 || pad.Dim >= r.T.Rank() {
		return r, nil
	}
	if order != nil || d == dispatch.ComplexHalf {
		return cutTo(b, r, pad.Dim, pad.Size), nil
	}
	return r, &padding{dim: pad.Dim, cap: r.T.Shape[pad.Dim]}
}

// copyPaddedToHost copies the whole value of the padded storage st (with a
// buffer) into dst, dropping the padding on the host.
func (e *Engine) copyPaddedToHost(st *Storage, dst []byte) error {
	phys := physShape(st)
	size := int64(st.dtype.Size())
	raw := make([]byte, numel(phys)*size)
	if err := e.copyToHost(st.buf, raw, "tensor"); err != nil {
		return err
	}
	d := st.pad.dim
	outer := numel(st.shape[:d])
	inner := numel(st.shape[d+1:]) * size
	row, prow := st.shape[d]*inner, phys[d]*inner
	for o := int64(0); o < outer; o++ {
		copy(dst[o*row:(o+1)*row], raw[o*prow:o*prow+row])
	}
	return nil
}
