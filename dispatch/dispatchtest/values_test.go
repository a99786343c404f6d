package dispatchtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"torchtpu/dispatch"
	"torchtpu/engine"
	"torchtpu/internal/testplugin"
)

// host is a tensor given by its values in row-major order.
type host struct {
	d     dispatch.DType
	sizes []int64
	vals  []float64
}

func f32(sizes []int64, vals ...float64) host { return host{dispatch.Float32, sizes, vals} }
func i64(sizes []int64, vals ...float64) host { return host{dispatch.Int64, sizes, vals} }
func dims(s ...int64) []int64                 { return s }

// newEngine starts an engine on the test plugin in the given mode.
func newEngine(t *testing.T, mode engine.Mode) *engine.Engine {
	t.Helper()
	e := engine.New()
	if err := e.Init(testplugin.Path(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := e.SetMode(mode); err != nil {
		t.Fatal(err)
	}
	return e
}

func contiguous(sizes []int64) []int64 {
	st := make([]int64, len(sizes))
	n := int64(1)
	for i := len(sizes) - 1; i >= 0; i-- {
		st[i] = n
		n *= sizes[i]
	}
	return st
}

func numel(sizes []int64) int64 {
	n := int64(1)
	for _, s := range sizes {
		n *= s
	}
	return n
}

func encode(d dispatch.DType, vals []float64) []byte {
	b := make([]byte, d.Size()*len(vals))
	for i, v := range vals {
		switch d {
		case dispatch.Float32:
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
		case dispatch.Float64:
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
		case dispatch.Int64:
			binary.LittleEndian.PutUint64(b[8*i:], uint64(int64(v)))
		case dispatch.Int32:
			binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(v)))
		case dispatch.Bool:
			if v != 0 {
				b[i] = 1
			}
		default:
			panic(fmt.Sprintf("encode: dtype %s", d))
		}
	}
	return b
}

func decode(d dispatch.DType, b []byte) []float64 {
	vals := make([]float64, len(b)/d.Size())
	for i := range vals {
		switch d {
		case dispatch.Float32:
			vals[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		case dispatch.Float64:
			vals[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		case dispatch.Int64:
			vals[i] = float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
		case dispatch.Int32:
			vals[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		case dispatch.Bool:
			vals[i] = float64(b[i])
		default:
			panic(fmt.Sprintf("decode: dtype %s", d))
		}
	}
	return vals
}

// upload allocates a device tensor holding h.
func upload(t *testing.T, e *engine.Engine, h host) *engine.TensorDesc {
	t.Helper()
	addr, err := e.Alloc(numel(h.sizes)*int64(h.d.Size()), 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &engine.TensorDesc{Addr: addr, DType: h.d, Sizes: h.sizes, Strides: contiguous(h.sizes)}
	if err := e.FromHost(d, encode(h.d, h.vals)); err != nil {
		t.Fatal(err)
	}
	return d
}

// run calls op with args (host tensors become device tensors, dispatch.Args
// pass as they are) and returns each result's dtype, sizes and values.
func run(t *testing.T, e *engine.Engine, op string, args ...any) []host {
	t.Helper()
	var as []dispatch.Arg
	for _, a := range args {
		switch a := a.(type) {
		case host:
			d := upload(t, e, a)
			as = append(as, dispatch.Arg{Kind: dispatch.ArgTensor, Tensors: []dispatch.TensorMeta{d.Meta()}, Handles: []any{d}})
		case []host: // a tensor list
			l := dispatch.Arg{Kind: dispatch.ArgTensorList}
			for _, h := range a {
				d := upload(t, e, h)
				l.Tensors = append(l.Tensors, d.Meta())
				l.Handles = append(l.Handles, d)
			}
			as = append(as, l)
		case dispatch.Arg:
			as = append(as, a)
		default:
			t.Fatalf("run: argument %T", a)
		}
	}
	outs, err := e.Op(op, as)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	var res []host
	for _, o := range outs {
		buf := make([]byte, o.NBytes)
		d := &engine.TensorDesc{Addr: o.Addr, DType: o.DType, Sizes: o.Sizes, Strides: contiguous(o.Sizes)}
		if err := e.ToHost(d, buf); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		res = append(res, host{o.DType, o.Sizes, decode(o.DType, buf)})
		e.Free(o.Addr)
	}
	return res
}

// near reports whether got matches want within tol, relative to the size of want.
func near(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.IsNaN(want[i]) != math.IsNaN(got[i]) || math.Abs(got[i]-want[i]) > tol*math.Max(1, math.Abs(want[i])) {
			return false
		}
	}
	return true
}

func intArg(v int64) dispatch.Arg { return dispatch.Arg{Kind: dispatch.ArgInt, Int: v} }
func boolArg(v bool) dispatch.Arg {
	a := dispatch.Arg{Kind: dispatch.ArgBool}
	if v {
		a.Int = 1
	}
	return a
}
func intsArg(v ...int64) dispatch.Arg  { return dispatch.Arg{Kind: dispatch.ArgIntList, Ints: v} }
func scalar(v float64) dispatch.Arg    { return dispatch.Arg{Kind: dispatch.ArgScalarDouble, Double: v} }
func doubleArg(v float64) dispatch.Arg { return dispatch.Arg{Kind: dispatch.ArgDouble, Double: v} }
func strArg(s string) dispatch.Arg     { return dispatch.Arg{Kind: dispatch.ArgString, Str: s} }
func dtypeArg(d dispatch.DType) dispatch.Arg {
	return dispatch.Arg{Kind: dispatch.ArgInt, Int: int64(d)}
}

var none = dispatch.Arg{Kind: dispatch.ArgNone}
