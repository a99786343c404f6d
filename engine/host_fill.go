package engine

import (
	"bytes"
	"math"
	"slices"
	"sync"

	"torchtpu/hlo"
	"torchtpu/pjrt"
)

// Host fills. A program that returns one value in every element of each
// result, a constant (`torch.zeros_like`, `zero_` of a new tensor: the state
// an Adam optimizer makes at its first step, one program per parameter shape)
// or its one parameter (`torch.ones`, `torch.full`: a Python number, which is
// a runtime input), is not compiled: its results are made from host bytes,
// which costs microseconds against a compile's tens of milliseconds. A
// parameter's value is known when its buffer is a cached number's; a fill
// from another buffer (a 0-dim tensor's value) compiles the program then.
// Fills of more than hostFillMax bytes compile as other programs do, so that
// a large fill repeated every step stays a device program rather than a host
// copy.

// hostFillMax is the most bytes a host fill makes in one launch.
const hostFillMax = 1 << 20

// hostFill makes a program's results from host bytes: the program's
// runner when it is a fill.
type hostFill struct {
	e       *Engine
	results []hlo.Type
	elem    []byte // one element of the constant, little-endian (a fill from a number: its last non-zero one)
	zero    bool
	bytes   []byte // elem repeated over the largest result, kept across launches (zero fills read zeroHost)
	// A fill from its parameter: the module, to compile when the parameter
	// is not a cached number, and then its executable.
	param bool
	text  string
	sum   *hlo.Summary
	exe   *pjrt.Executable
}

// runner launches a program: a compiled executable or a host fill.
type runner interface {
	Execute(args []*pjrt.Buffer, device int) ([]*pjrt.Buffer, *pjrt.Event, error)
}

// fillOf returns the host fill that computes the program summarized by sum
// (module text), or nil when it is not a fill: its results hold hostFillMax
// bytes at most, all of one element type, and either it broadcasts its one
// parameter, a scalar, or it has no parameter and its constants of that type
// all hold one value, which broadcasts, reshapes, transposes and writes of
// one part into another (a fill of a new storage laid out in another memory
// order, whose integer constants are the write's start indices) keep in every
// element. Complex values are not taken.
func (e *Engine) fillOf(text string, sum *hlo.Summary) *hostFill {
	if sum == nil || len(sum.Results) == 0 {
		return nil
	}
	param := len(sum.Params) == 1 && sum.Params[0].Rank() == 0 && len(sum.Consts) == 0
	if !param && len(sum.Params) > 0 {
		return nil
	}
	for _, op := range sum.Ops {
		switch op {
		case "stablehlo.broadcast_in_dim":
		case "stablehlo.constant", "stablehlo.reshape", "stablehlo.transpose", "stablehlo.dynamic_update_slice":
			if param {
				return nil
			}
		default:
			return nil
		}
	}
	el := sum.Results[0].Elem
	if param && sum.Params[0].Elem != el {
		return nil
	}
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
	if param {
		return &hostFill{e: e, results: sum.Results, param: true, text: text, sum: sum}
	}
	elem, ok := splatValue(sum.Consts, el)
	if !ok {
		return nil
	}
	f := &hostFill{e: e, results: sum.Results, elem: elem, zero: true}
	for _, b := range elem {
		f.zero = f.zero && b == 0
	}
	if !f.zero {
		f.bytes = repeat(elem, sum.Results)
	}
	return f
}

// splatValue returns the one element of type el that the constants consts
// hold, or false when they hold none or two: a constant that is not a splat
// of el must be an integer (a start index, which a write's result does not
// hold). An integer el cannot tell its values from start indices, so its
// constants must all be one literal.
func splatValue(consts []string, el hlo.Elem) ([]byte, bool) {
	var lit string
	var elem []byte
	for _, c := range consts {
		if v, ok := hlo.SplatBytes(c, el); ok {
			if lit != "" && c != lit {
				return nil, false
			}
			lit, elem = c, v
			continue
		}
		if _, ok := hlo.SplatBytes(c, hlo.S64); !ok {
			return nil, false
		}
	}
	return elem, lit != ""
}

// repeat returns elem repeated as many times as the largest of results has
// elements.
func repeat(elem []byte, results []hlo.Type) []byte {
	n := 0
	for _, t := range results {
		n = max(n, int(t.NumElements()))
	}
	return bytes.Repeat(elem, n)
}

// compiled runs the fill's program, compiling it first if need be: a fill
// from a parameter whose value the engine does not hold on the host.
func (f *hostFill) compiled(args []*pjrt.Buffer, device int) ([]*pjrt.Buffer, *pjrt.Event, error) {
	if f.exe == nil {
		exe, err := f.e.compileText(f.text, f.sum)
		if err != nil {
			return nil, nil, err
		}
		f.exe = exe
	}
	return f.exe.Execute(args, device)
}

// zeroHost is a zeroed host block the zero fills read from, grown to the
// largest fill made (at most hostFillMax); it is never written.
var zeroHost struct {
	sync.Mutex
	b []byte
}

// zeroBytes returns n zero bytes from zeroHost, growing it first if need be.
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
// always ready); args, a donated buffer included, are left to the caller. A
// fill from a parameter that is not a cached number runs its program,
// compiled on first need.
func (f *hostFill) Execute(args []*pjrt.Buffer, device int) ([]*pjrt.Buffer, *pjrt.Event, error) {
	elem, zero, data := f.elem, f.zero, f.bytes
	if f.param {
		k, ok := f.e.d.scalarOf[args[0]]
		if !ok || f.exe != nil {
			return f.compiled(args, device)
		}
		elem = encodeScalar(math.Float64frombits(k.bits), k.elem)
		if k.exact {
			elem = encodeInt(int64(k.bits), k.elem)
		}
		zero = !slices.ContainsFunc(elem, func(b byte) bool { return b != 0 })
		if !zero && !bytes.Equal(elem, f.elem) {
			f.elem, f.bytes = elem, repeat(elem, f.results)
		}
		data = f.bytes
	}
	outs := make([]*pjrt.Buffer, 0, len(f.results))
	for _, t := range f.results {
		n := int(t.NumElements()) * len(elem)
		src := data
		if zero {
			src = zeroBytes(n)
		}
		b, err := f.e.client.BufferFromHost(src[:n], pjrtType(t.Elem), t.Shape, device)
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
func (e *Engine) fillProgram(skey, text string, sum *hlo.Summary, used []int) *program {
	f := e.fillOf(text, sum)
	if f == nil || f.param && len(used) != 1 { // a fill from a parameter reads that one argument
		return nil
	}
	p := &program{fill: f, used: used}
	e.cache.Put(skey, p)
	e.m.HostFills++
	return p
}
