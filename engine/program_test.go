package engine

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"torchtpu/dispatch"
)

func readF32(t *testing.T, e *Engine, d *TensorDesc) []float32 {
	t.Helper()
	b := make([]byte, 4*numel(d.Sizes))
	if err := e.ToHost(d, b); err != nil {
		t.Fatal(err)
	}
	return f32s(b)
}

// TestCaptureAndReplay captures y = x*x; z += 1 with x a sliding window of a
// larger storage, then replays it on other windows: the window moves without
// a new program, the in-place update lands in z's storage, and nothing runs
// while capturing.
func TestCaptureAndReplay(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	addr, vals := storageOf(t, e, []int64{6, 2})
	win := func(row int64) *TensorDesc {
		return &TensorDesc{Addr: addr, Offset: 2 * row, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{2, 1}}
	}
	x := win(0)
	zaddr, zvals := storageOf(t, e, []int64{3})
	z := &TensorDesc{Addr: zaddr, DType: dispatch.Float32, Sizes: []int64{3}, Strides: []int64{1}}
	if err := e.CaptureBegin("test graph", []*TensorDesc{x, z}); err != nil {
		t.Fatal(err)
	}
	execs := e.m.Executions
	outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Op("aten::add_.Scalar", []dispatch.Arg{tensorArg(z), {Kind: dispatch.ArgScalarInt, Int: 1}, {Kind: dispatch.ArgScalarInt, Int: 1}}); err != nil {
		t.Fatal(err)
	}
	if e.m.Executions != execs {
		t.Fatalf("%d executions while capturing", e.m.Executions-execs)
	}
	y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{2, 1}}
	h, refs, err := e.CaptureEnd([]*TensorDesc{x, z}, []*TensorDesc{y})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].Kind != OutFresh {
		t.Fatalf("refs %+v", refs)
	}
	if p := e.programs.get(h); !slices.Equal(p.donated, []int{1}) || !strings.Contains(p.text, "tf.aliasing_output = 1") {
		t.Fatalf("z's buffer is not donated to its new value (donated %v):\n%s", p.donated, p.text)
	}
	want := func(row int64) []float32 {
		var w []float32
		for _, v := range vals[2*row : 2*row+4] {
			w = append(w, v*v)
		}
		return w
	}
	if got := readF32(t, e, y); !equalF32(got, want(0)) {
		t.Fatalf("capture run gave %v, want %v", got, want(0))
	}
	compiled := e.m.GraphsCompiled
	for _, row := range []int64{2, 4, 3} {
		res, err := e.RunProgram(h, []*TensorDesc{win(row), z}, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := readF32(t, e, &TensorDesc{Addr: res[0].Addr, DType: dispatch.Float32, Sizes: res[0].Sizes, Strides: []int64{2, 1}})
		if !equalF32(got, want(row)) {
			t.Fatalf("window %d gave %v, want %v", row, got, want(row))
		}
		e.Free(res[0].Addr)
	}
	if e.m.GraphsCompiled != compiled {
		t.Fatalf("replays compiled %d programs", e.m.GraphsCompiled-compiled)
	}
	if got := readF32(t, e, z); !equalF32(got, []float32{zvals[0] + 4, zvals[1] + 4, zvals[2] + 4}) {
		t.Fatalf("z after one capture and three replays is %v, want %v + 4", got, zvals)
	}
	other := &TensorDesc{Addr: addr, Offset: 0, DType: dispatch.Float32, Sizes: []int64{4}, Strides: []int64{1}}
	var mm *MismatchError
	if _, err := e.RunProgram(h, []*TensorDesc{other, z}, nil, 1); !errors.As(err, &mm) {
		t.Fatalf("a differently shaped input gave %v, want a MismatchError", err)
	}
	e.FreeProgram(h)
}

// TestCaptureAbortsOnHostRead checks that a read to the host ends the capture
// and the work still runs.
func TestCaptureAbortsOnHostRead(t *testing.T) {
	e := newTestEngine(t, ModeStrict)
	addr, vals := storageOf(t, e, []int64{4})
	x := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{4}, Strides: []int64{1}}
	if err := e.CaptureBegin("test graph", []*TensorDesc{x}); err != nil {
		t.Fatal(err)
	}
	outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x)})
	if err != nil {
		t.Fatal(err)
	}
	y := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{4}, Strides: []int64{1}}
	got := readF32(t, e, y)
	for i, v := range vals {
		if got[i] != v*v {
			t.Fatalf("got %v", got)
		}
	}
	var nc *ErrNotCaptured
	if _, _, err := e.CaptureEnd([]*TensorDesc{x}, []*TensorDesc{y}); !errors.As(err, &nc) {
		t.Fatalf("CaptureEnd gave %v, want ErrNotCaptured", err)
	}
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
