package engine

import (
	"encoding/binary"
	"strconv"
	"strings"
	"sync"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Host fills. A program that reads nothing and returns one constant in
// every element of each result (`torch.zeros_like`, `zero_` of a new tensor:
// the state an Adam optimizer makes at its first step, one program per
// parameter shape) is not compiled: its results are made from host bytes,
// which costs microseconds against a compile's tens of milliseconds. Fills of
// more than hostFillMax bytes compile as other programs do, so that a large
// fill repeated every step stays a device program rather than a host copy.

// hostFillMax is the most bytes a host fill makes in one launch.
const hostFillMax = 1 << 20

// hostFill makes a program's results from host bytes: the program's
// runner when it is a fill.
type hostFill struct {
	client  *pjrt.Client
	results []hlo.Type
	elem    []byte // one element of the constant, little-endian
	zero    bool
	bytes   []byte // a non-zero fill's largest result, filled (zero fills share zeroHost)
}

// runner launches a program: a compiled executable or a host fill.
type runner interface {
	Execute(args []*pjrt.Buffer, device int) ([]*pjrt.Buffer, *pjrt.Event, error)
}

// fillOf returns the host fill that computes the program summarized by sum,
// or nil when it is not a fill: it has no parameters, its ops are one
// constant and its broadcasts, and its results hold hostFillMax bytes at
// most. A complex constant is not taken.
func (e *Engine) fillOf(sum *hlo.Summary) *hostFill {
	if sum == nil || len(sum.Params) > 0 || len(sum.Consts) != 1 || len(sum.Results) == 0 {
		return nil
	}
	for _, op := range sum.Ops {
		if op != "stablehlo.constant" && op != "stablehlo.broadcast_in_dim" {
			return nil
		}
	}
	el := sum.Results[0].Elem
	total := 0
	for _, t := range sum.Results {
		if t.Elem != el {
			return nil
		}
		total += int(t.NumElements()) * el.Bits() / 8
	}
	if total > hostFillMax || el.IsComplex() || el.Bits()%8 != 0 {
		return nil
	}
	elem, ok := splatElement(sum.Consts[0], el)
	if !ok {
		return nil
	}
	f := &hostFill{client: e.client, results: sum.Results, elem: elem, zero: true}
	for _, b := range elem {
		f.zero = f.zero && b == 0
	}
	if !f.zero {
		n := 0
		for _, t := range sum.Results {
			n = max(n, int(t.NumElements()))
		}
		f.bytes = make([]byte, 0, n*len(elem))
		for range n {
			f.bytes = append(f.bytes, elem...)
		}
	}
	return f
}

// splatElement returns the little-endian bytes of one element of type e of
// the splat literal lit ("dense<0x3F800000>", "dense<-3>", "dense<true>", as
// hlo prints constants).
func splatElement(lit string, e hlo.Elem) ([]byte, bool) {
	v, ok := strings.CutPrefix(lit, "dense<")
	if v, ok = strings.CutSuffix(v, ">"); !ok {
		return nil, false
	}
	size := e.Bits() / 8
	var bits uint64
	switch {
	case v == "true" || v == "false":
		if e != hlo.Pred {
			return nil, false
		}
		if v == "true" {
			bits = 1
		}
	case strings.HasPrefix(v, "0x"):
		if !e.IsFloat() || len(v) != 2+2*size {
			return nil, false
		}
		u, err := strconv.ParseUint(v[2:], 16, 64)
		if err != nil {
			return nil, false
		}
		bits = u
	default:
		if !e.IsInt() {
			return nil, false
		}
		if e.IsUnsigned() {
			u, err := strconv.ParseUint(v, 10, size*8)
			if err != nil {
				return nil, false
			}
			bits = u
		} else {
			i, err := strconv.ParseInt(v, 10, size*8)
			if err != nil {
				return nil, false
			}
			bits = uint64(i)
		}
	}
	var out [8]byte
	binary.LittleEndian.PutUint64(out[:], bits)
	return out[:size], true
}

// zeroHost is a zeroed host block the zero fills read from, grown to the
// largest fill made (at most hostFillMax); it is never written.
var zeroHost struct {
	sync.Mutex
	b []byte
}

func zeroBytes(n int) []byte {
	zeroHost.Lock()
	defer zeroHost.Unlock()
	if len(zeroHost.b) < n {
		zeroHost.b = make([]byte, n)
	}
	return zeroHost.b[:n]
}

// Execute makes the fill's results on device from host bytes. The copies are
// complete when it returns, so there is no event to wait for (nil, which is
// always ready); args, a donated buffer included, are left to the caller.
func (f *hostFill) Execute(_ []*pjrt.Buffer, device int) ([]*pjrt.Buffer, *pjrt.Event, error) {
	outs := make([]*pjrt.Buffer, 0, len(f.results))
	for _, t := range f.results {
		n := int(t.NumElements()) * len(f.elem)
		data := f.bytes
		if f.zero {
			data = zeroBytes(n)
		}
		b, err := f.client.BufferFromHost(data[:n], pjrtType(t.Elem), t.Shape, device)
		if err != nil {
			pjrt.DestroyBuffers(outs)
			return nil, nil, err
		}
		outs = append(outs, b)
	}
	return outs, nil, nil
}

// fillProgram puts the program summarized by sum, whose parameters in order
// are used, into the in-memory tier under skey as a host fill and returns it,
// when it is one; otherwise it returns nil. A donated parameter is dropped
// after the launch, as a compiled program's would be.
func (e *Engine) fillProgram(skey string, sum *hlo.Summary, used []int) *program {
	f := e.fillOf(sum)
	if f == nil {
		return nil
	}
	p := &program{fill: f, used: used}
	e.cache.Put(skey, p)
	e.m.HostFills++
	return p
}
