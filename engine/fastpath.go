package engine

import (
	"encoding/binary"
	"hash/maphash"
	"math"

	"torchtpu/dispatch"
	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// The strict fast path. In strict mode every op is a program of its own; an
// op whose signature (opSignature) was seen before launches that program
// directly from a plan recorded the first time: which argument storage or
// cached number feeds each parameter, and which storage each result goes to.
// No rule runs, no builder records, no text is printed. The first call of a
// signature takes the full path, so its rule still checks the arguments and
// raises at the call site; later calls with the same signature passed the same
// checks. Ops that read data to the host, draw random numbers or upload
// one-off inputs are never planned.

// maxPlans bounds the plan table; it is cleared when full.
const maxPlans = 8192

type srcKind uint8

const (
	srcArg    srcKind = iota // the buffer of an argument's storage
	srcScalar                // a cached number
)

// paramSrc says where a program parameter comes from.
type paramSrc struct {
	kind     srcKind
	arg, idx int // srcArg: argument and tensor index
	scalar   scalarKey
}

// outDst says where a program result goes: a new storage (result >= 0) or
// the storage of a mutated argument.
type outDst struct {
	result   int
	arg, idx int
}

// opPlan replays one op signature.
type opPlan struct {
	key     string // the program's key in e.cache
	params  []paramSrc
	outs    []outDst
	results []OutTensor // functional results (shape and dtype; addresses are new each call)
}

var sigSeed = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// opSignature hashes everything a rule's lowering may depend on: the op, every
// non-tensor argument by value (Python numbers included: a rule may derive
// other numbers from them), each tensor's view geometry and dtype, the state
// of its storage, the bytes of CPU scalars, and which arguments share a
// storage. Without pending, every storage must hold a buffer (the strict fast
// path binds buffers); with it, a storage may also hold a pending value or
// none, and its state and known integer range are a part of the signature
// (the fused fast path reads values). ok is false when the op cannot be
// planned.
func (e *Engine) opSignature(op string, args []dispatch.Arg, pending bool) (sig hlo.Hash, ok bool) {
	buf := e.sigBuf[:0]
	u := func(v uint64) { buf = binary.LittleEndian.AppendUint64(buf, v) }
	i64s := func(vs []int64) {
		u(uint64(len(vs)))
		for _, v := range vs {
			u(uint64(v))
		}
	}
	buf = append(buf, op...)
	var addrs []uint64
	for _, a := range args {
		u(uint64(a.Kind))
		u(uint64(a.Int))
		u(math.Float64bits(a.Double))
		i64s(a.Ints)
		u(uint64(len(a.Doubles)))
		for _, d := range a.Doubles {
			u(math.Float64bits(d))
		}
		u(uint64(len(a.Str)))
		buf = append(buf, a.Str...)
		u(uint64(len(a.Handles)))
		for _, h := range a.Handles {
			t := h.(*TensorDesc)
			u(uint64(t.Offset))
			u(uint64(t.DType))
			i64s(t.Sizes)
			i64s(t.Strides)
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
			u(flags)
			u(uint64(len(t.Host)))
			buf = append(buf, t.Host...)
			if t.CPU || t.Addr == 0 {
				continue
			}
			st, found := e.storages[t.Addr]
			if !found {
				return hlo.Hash{}, false
			}
			if !pending && (!st.shaped || st.buf == nil || st.pending != nil) {
				return hlo.Hash{}, false
			}
			u(uint64(st.nbytes))
			u(uint64(st.dtype))
			i64s(st.shape)
			if pending {
				u(uint64(storageState(st)))
				if st.pending != nil {
					u(uint64(len(st.pending.T.Elem)))
					buf = append(buf, st.pending.T.Elem...)
					i64s(st.pending.T.Shape)
				}
				if st.known != nil {
					u(1)
					u(uint64(st.known.lo))
					u(uint64(st.known.hi))
				} else {
					u(0)
				}
			}
			// Which earlier tensor argument shares this storage, if any.
			class := len(addrs)
			for k, a := range addrs {
				if a == t.Addr {
					class = k
					break
				}
			}
			u(uint64(class))
			addrs = append(addrs, t.Addr)
		}
	}
	layoutsKey(u, e.layouts)
	e.sigBuf = buf
	return hlo.Hash{Lo: maphash.Bytes(sigSeed[0], buf), Hi: maphash.Bytes(sigSeed[1], buf)}, true
}

// writtenStorage returns the storage a replayed op writes: new result
// result when it is not negative, else tensor idx of argument arg.
func (e *Engine) writtenStorage(results []*Storage, args []dispatch.Arg, result, arg, idx int) *Storage {
	if result >= 0 {
		return results[result]
	}
	return e.argStorage(args, arg, idx)
}

// argStorage returns the storage of tensor idx of argument arg.
func (e *Engine) argStorage(args []dispatch.Arg, arg, idx int) *Storage {
	t := args[arg].Handles[idx].(*TensorDesc)
	return e.storages[t.Addr]
}

// makePlan records how the op just lowered into e.g (before its flush) maps
// onto its arguments, or returns nil when it cannot be replayed.
func (e *Engine) makePlan(args []dispatch.Arg, outs []OutTensor, execsBefore int64) *opPlan {
	g := e.g
	if e.m.Executions != execsBefore || len(g.extra) > 0 {
		return nil // the rule read data to the host
	}
	byBuf := map[*pjrt.Buffer]paramSrc{}
	byAddr := map[uint64][2]int{}
	for i, a := range args {
		for j, h := range a.Handles {
			t := h.(*TensorDesc)
			if t.CPU || t.Addr == 0 {
				continue
			}
			if _, seen := byAddr[t.Addr]; !seen {
				byAddr[t.Addr] = [2]int{i, j}
			}
			if st := e.storages[t.Addr]; st != nil && st.buf != nil {
				if _, seen := byBuf[st.buf]; !seen {
					byBuf[st.buf] = paramSrc{kind: srcArg, arg: i, idx: j}
				}
			}
		}
	}
	p := &opPlan{}
	for _, b := range g.params {
		if src, ok := byBuf[b]; ok {
			p.params = append(p.params, src)
			continue
		}
		k, ok := e.scalarOf[b]
		if !ok {
			return nil // a one-off upload (seeds, indices)
		}
		p.params = append(p.params, paramSrc{kind: srcScalar, scalar: k})
	}
	results := map[uint64]int{}
	for i, o := range outs {
		results[o.Addr] = i
		p.results = append(p.results, OutTensor{NBytes: o.NBytes, DType: o.DType, Sizes: o.Sizes})
	}
	for _, st := range g.pending {
		if st.pending == nil {
			continue
		}
		if r, ok := results[st.addr]; ok {
			p.outs = append(p.outs, outDst{result: r})
			continue
		}
		ai, ok := byAddr[st.addr]
		if !ok {
			return nil
		}
		p.outs = append(p.outs, outDst{result: -1, arg: ai[0], idx: ai[1]})
	}
	return p
}

// replay runs plan p on args: it binds the parameters, allocates the new
// results and launches the cached program. It reports ok=false when the
// program has left the cache (the caller then takes the full path).
func (e *Engine) replay(p *opPlan, args []dispatch.Arg) (outs []OutTensor, ok bool, err error) {
	x, found := e.cache.Get(p.key)
	if !found {
		return nil, false, nil
	}
	prog := x.(*program)
	bufs := make([]*pjrt.Buffer, len(prog.used))
	for i, pi := range prog.used {
		src := p.params[pi]
		if src.kind == srcScalar {
			bufs[i] = e.scalarBuffer(src.scalar)
		} else {
			bufs[i] = e.argStorage(args, src.arg, src.idx).buf
		}
	}
	sts, outs, err := e.newResults(p.results)
	if err != nil {
		return nil, true, err
	}
	l := launch{key: p.key, ops: 1, device: e.dev.cur, donated: prog.donated}
	_, err = e.execute(l, prog.exe, bufs, func(results []*pjrt.Buffer) []*pjrt.Buffer {
		var replaced []*pjrt.Buffer
		for i, d := range p.outs {
			st := e.writtenStorage(sts, args, d.result, d.arg, d.idx)
			replaced = append(replaced, st.buf)
			st.buf = results[i]
		}
		return replaced
	})
	if err != nil {
		for _, st := range sts {
			e.freeStorage(st)
		}
		return nil, true, err
	}
	e.m.CacheHits++
	e.m.FastPathHits++
	e.m.OpsRecorded++
	return outs, true, nil
}

// newResults allocates a contiguous storage for each result a plan replays
// (shape and dtype from rs), or none when one allocation fails.
func (e *Engine) newResults(rs []OutTensor) (sts []*Storage, outs []OutTensor, err error) {
	for _, r := range rs {
		addr, err := e.newStorage(r.NBytes, e.dev.cur)
		if err != nil {
			for _, st := range sts {
				e.freeStorage(st)
			}
			return nil, nil, err
		}
		st := e.storages[addr]
		st.shaped, st.dtype, st.shape = true, r.DType, append([]int64{}, r.Sizes...)
		sts = append(sts, st)
		outs = append(outs, OutTensor{Addr: addr, NBytes: r.NBytes, DType: r.DType, Sizes: st.shape})
	}
	return sts, outs, nil
}

// freeStorage undoes newStorage for a result that was never handed out.
func (e *Engine) freeStorage(st *Storage) {
	delete(e.storages, st.addr)
	e.live--
	e.liveB -= st.nbytes
	e.dropBuffer(st.buf)
	e.addrs.release(st.addr, st.nbytes)
}
