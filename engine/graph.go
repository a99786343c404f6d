package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// graph is the pending work of the device: ops recorded into one builder,
// whose parameters are device buffers.
type graph struct {
	b       *hlo.Builder
	params  []*pjrt.Buffer
	paramOf map[*pjrt.Buffer]*hlo.Value
	pending []*Storage     // storages given a pending value, in order
	retired []*pjrt.Buffer // destroyed after the next execution is launched
	extra   []*hlo.Value   // values wanted as extra outputs (reads to host)
	ops     int
	first   []string // the first ops recorded, for messages (events.go)
	// programs counts the compiled programs replayed into the graph
	// (program_defer.go): a graph holding one is not cut at backward boundaries.
	programs int
	cold     *coldRun // strict mode: the cold run the graph is, if it is one (cold_run.go)
	// stepBufs holds the cached numbers a cold run's steps bind that no parameter reads.
	stepBufs map[*pjrt.Buffer]bool
	// numbers holds the parameters the numbers of op numbersOp read (opNumber).
	numbers   map[*pjrt.Buffer]*hlo.Value
	numbersOp uint64
	// padCaps are the capacities of the padded storages the graph reads or
	// makes (pad.go), named by the compile logs as the program's bucket.
	padCaps []int64
	// serial numbers the graph among those the process records (offsets.go).
	serial uint64
}

// notePadCap notes that the graph reads or makes a value padded to capacity c.
func (g *graph) notePadCap(c int64) {
	if !slices.Contains(g.padCaps, c) {
		g.padCaps = append(g.padCaps, c)
	}
}

func newGraph() *graph {
	return &graph{b: hlo.NewBuilder(), paramOf: map[*pjrt.Buffer]*hlo.Value{}, serial: graphSerial.Add(1)}
}

// param returns the parameter fed by buffer b, adding it on first use.
func (g *graph) param(b *pjrt.Buffer, t hlo.Type) *hlo.Value {
	if v, ok := g.paramOf[b]; ok {
		return v
	}
	v := g.b.Param(t)
	g.params = append(g.params, b)
	g.paramOf[b] = v
	return v
}

// scalarParam returns a new parameter fed by the cached scalar buffer b.
// Unlike param it never reuses a position: two numbers that happen to be
// equal on one step (a learning rate that reaches 0, so 1 - lr*wd equals
// another 1) must not merge into one input and change the program.
func (g *graph) scalarParam(b *pjrt.Buffer, t hlo.Type) *hlo.Value {
	v := g.b.Param(t)
	g.params = append(g.params, b)
	if _, ok := g.paramOf[b]; !ok {
		g.paramOf[b] = v // so that dropBuffer retires it rather than destroying it
	}
	return v
}

// setPending gives st a new pending value.
func (e *Engine) setPending(st *Storage, v *hlo.Value) {
	if st.pending == nil {
		e.d.g.pending = append(e.d.g.pending, st)
	}
	st.pending, st.known = v, nil
	if e.fusedLog != nil {
		e.fusedLog.writes = append(e.fusedLog.writes, pendingWrite{st, v})
	}
}

type scalarKey struct {
	elem  hlo.Elem
	bits  uint64 // a float64's bits, or an exact int64's
	exact bool   // bits hold an int64 (Python integers beyond 2^53 stay exact)
}

// Scalar returns a rank-0 runtime input holding v: the device buffer for each
// distinct value is made once and kept, so a changing learning rate neither
// recompiles nor re-uploads (see constants.go for the policy).
func (e *Engine) Scalar(v float64, elem hlo.Elem) *hlo.Value {
	if embedAllScalars && (v >= 0 || !(elem == hlo.U8 || elem == hlo.U32 || elem == hlo.U64)) {
		return e.d.g.b.Scalar(elem, v)
	}
	buf := e.scalarBuffer(scalarKey{elem: elem, bits: math.Float64bits(v)})
	return e.opNumber(buf, hlo.T(elem))
}

// opNumber returns the parameter of the current graph that feeds the running
// op the cached number buffer b. An op that reads one number many times (a
// foreach op's scalar, once per tensor) reads one parameter: a buffer passed
// as many parameters of one launch costs the plugin time for each, and past
// a thousand uses of one buffer in one launch that time grows with the
// square of the uses. Different ops read different parameters, so that a
// fused graph's structure does not depend on which ops' numbers are equal;
// an op's plan and tape are keyed by its numbers' values, so sharing within
// an op never joins numbers that a later call may give apart.
func (e *Engine) opNumber(b *pjrt.Buffer, t hlo.Type) *hlo.Value {
	g := e.d.g
	if g.numbersOp != e.opSerial || g.numbers == nil {
		g.numbersOp, g.numbers = e.opSerial, map[*pjrt.Buffer]*hlo.Value{}
	}
	if v, ok := g.numbers[b]; ok && v.T.Equal(t) {
		return v
	}
	v := g.scalarParam(b, t)
	g.numbers[b] = v
	return v
}

// IntNumber implements dispatch.Reader: Scalar for a Python integer stored
// in an integer element type, exactly (a float64 holds integers only up to
// 2^53), cached the same way.
func (e *Engine) IntNumber(v int64, elem hlo.Elem) *hlo.Value {
	if elem.IsFloat() || elem.IsComplex() || elem == hlo.Pred {
		return e.Scalar(float64(v), elem)
	}
	if embedAllScalars {
		return e.d.g.b.ConstantInt(hlo.T(elem), v)
	}
	buf := e.scalarBuffer(scalarKey{elem: elem, bits: uint64(v), exact: true})
	return e.opNumber(buf, hlo.T(elem))
}

// maxScalars bounds a device's number cache (scalarBuffer).
const maxScalars = 4096

// trimScalars empties the current device's number cache once it holds
// maxScalars values (buffers a pending graph reads are destroyed after its
// launch). Every op ends with it (opDone), and nothing else empties the
// cache: the numbers an op or a launch fetches stay cached while it uses
// them, so a plan made from an op's parameters, or a step replay's launch,
// finds every one of them.
func (e *Engine) trimScalars() {
	if len(e.d.scalars) < maxScalars {
		return
	}
	for key, b := range e.d.scalars {
		e.dropBuffer(b)
		delete(e.d.scalars, key)
		delete(e.d.scalarOf, b)
	}
}

// scalarBuffer returns the cached device buffer holding the number k,
// uploading it on first use.
func (e *Engine) scalarBuffer(k scalarKey) *pjrt.Buffer {
	if buf, ok := e.d.scalars[k]; ok {
		return buf
	}
	elem := k.elem
	t0 := time.Now()
	raw := encodeScalar(math.Float64frombits(k.bits), elem)
	if k.exact {
		raw = encodeInt(int64(k.bits), elem)
	}
	buf, err := e.client.BufferFromHost(raw, pjrtType(elem), nil, e.dev.cur)
	if err != nil {
		panic(fmt.Errorf("uploading a scalar: %w", err))
	}
	e.noteTransfer("h2d", int64(elem.Bits()/8), t0, "number")
	e.d.scalars[k] = buf
	e.d.scalarOf[buf] = k
	return buf
}

// Seed implements dispatch.Reader: the seed in argument arg as a runtime
// input uploaded for this call alone. A seed from the argument the rule
// declares (Needs.SeedArg) is noted for the op's plan, which uploads each
// later call's seed from the same argument (srcSeed).
func (e *Engine) Seed(arg int, v int64) *hlo.Value {
	n := e.ruleNeeds()
	if err := e.needed(n.Random, "draws random numbers"); err != nil {
		panic(err)
	}
	if err := e.needed(!n.Seeded || n.SeedArg == arg, fmt.Sprintf("takes a seed from argument %d", arg)); err != nil {
		panic(err)
	}
	buf := e.uploadSeed(v)
	e.d.g.retired = append(e.d.g.retired, buf)
	e.noteSeed(buf)
	if n.Seeded && n.SeedArg == arg {
		e.opSeeds = append(e.opSeeds, seedUpload{buf, arg})
	}
	return e.d.g.param(buf, hlo.T(hlo.S64))
}

// Int64Tensor implements dispatch.Reader: host integers as a runtime input.
func (e *Engine) Int64Tensor(vals []int64, shape []int64) *hlo.Value {
	if err := e.needed(e.ruleNeeds().Uploads, "uploads values computed on the host"); err != nil {
		panic(err)
	}
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		copy(raw[8*i:], encodeInt(v, hlo.S64))
	}
	t0 := time.Now()
	buf, err := e.client.BufferFromHost(raw, pjrt.S64, shape, e.dev.cur)
	if err != nil {
		panic(fmt.Errorf("uploading indices: %w", err))
	}
	e.noteTransfer("h2d", int64(len(raw)), t0, "indices")
	e.d.g.retired = append(e.d.g.retired, buf)
	return e.d.g.param(buf, hlo.T(hlo.S64, shape...))
}

// Version is the project's version; it is part of every cache key.
const Version = "0.1.0"

// Synchronize flushes pending work and waits for the device to finish.
func (e *Engine) Synchronize() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.ready(); err != nil {
		return err
	}
	e.why = whySynchronize
	if err := e.flushAll(); err != nil {
		return err
	}
	var first error
	for _, f := range e.events {
		if err := f.ev.Await(); err != nil && first == nil {
			first = err
		}
		e.release(f)
	}
	e.events = nil
	return first
}

// NaNError reports an op whose result holds a NaN (TORCHTPU_CHECK_NANS=1, debug mode).
type NaNError struct{ Op string }

func (e *NaNError) Error() string {
	return fmt.Sprintf("torchtpu: %s produced a NaN (TORCHTPU_CHECK_NANS=1 in debug mode)", e.Op)
}
