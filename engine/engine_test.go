package engine

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"torchtpu/dispatch"
	"torchtpu/internal/testplugin"
)

// newTestEngine returns an engine on the test plugin (testplugin.Path).
func newTestEngine(t *testing.T, mode Mode) *Engine {
	t.Helper()
	path := testplugin.Path(t)
	e := New()
	if err := e.Init(path, 1); err != nil {
		t.Fatal(err)
	}
	e.mode = mode
	return e
}

func f32bytes(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f32s(b []byte) []float32 {
	xs := make([]float32, len(b)/4)
	for i := range xs {
		xs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return xs
}

// refIndices lists the flat storage index of each view element, row-major.
func refIndices(v view) []int64 {
	var out []int64
	idx := make([]int64, len(v.sizes))
	n := numel(v.sizes)
	for k := int64(0); k < n; k++ {
		off := v.offset
		for i := range idx {
			off += idx[i] * v.strides[i]
		}
		out = append(out, off)
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < v.sizes[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// storageOf makes a float32 storage of the given base shape holding 0, 1, 2, ...
func storageOf(t *testing.T, e *Engine, base []int64) (uint64, []float32) {
	n := numel(base)
	addr, err := e.Alloc(n*4, 0)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i)
	}
	whole := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: base, Strides: contiguousStrides(base)}
	if err := e.FromHost(whole, f32bytes(vals)); err != nil {
		t.Fatal(err)
	}
	return addr, vals
}

var viewCases = []struct {
	name string
	base []int64
	v    view
}{
	{"identity", []int64{3, 4}, view{0, []int64{3, 4}, []int64{4, 1}}},
	{"reshape", []int64{3, 4}, view{0, []int64{2, 6}, []int64{6, 1}}},
	{"transpose", []int64{3, 4}, view{0, []int64{4, 3}, []int64{1, 4}}},
	{"row slice", []int64{3, 4}, view{4, []int64{2, 4}, []int64{4, 1}}},
	{"strided slice", []int64{3, 4}, view{5, []int64{2, 2}, []int64{4, 2}}},
	{"select column", []int64{3, 4}, view{2, []int64{3}, []int64{4}}},
	{"expand", []int64{3, 4}, view{4, []int64{5, 4}, []int64{0, 1}}},
	{"transposed slice 3d", []int64{2, 3, 4}, view{1, []int64{3, 2, 2}, []int64{4, 12, 2}}},
	{"overlapping as_strided", []int64{3, 4}, view{1, []int64{3, 3}, []int64{2, 1}}},
	{"flat window", []int64{3, 4}, view{3, []int64{5}, []int64{1}}},
}

func TestReadViews(t *testing.T) {
	for _, mode := range []Mode{ModeStrict, ModeFused} {
		e := newTestEngine(t, mode)
		for _, c := range viewCases {
			addr, vals := storageOf(t, e, c.base)
			d := &TensorDesc{Addr: addr, Offset: c.v.offset, DType: dispatch.Float32, Sizes: c.v.sizes, Strides: c.v.strides}
			got := make([]byte, numel(c.v.sizes)*4)
			if err := e.ToHost(d, got); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for k, idx := range refIndices(c.v) {
				if g := f32s(got)[k]; g != vals[idx] {
					t.Fatalf("%s (%s): element %d = %v, want %v", c.name, mode, k, g, vals[idx])
				}
			}
			e.Free(addr)
		}
	}
}

func TestWriteViews(t *testing.T) {
	for _, mode := range []Mode{ModeStrict, ModeFused} {
		e := newTestEngine(t, mode)
		for _, c := range viewCases {
			if strings.Contains(c.name, "expand") || strings.Contains(c.name, "overlapping") {
				continue // several elements share one location: the write order is unspecified
			}
			addr, vals := storageOf(t, e, c.base)
			n := numel(c.v.sizes)
			upd := make([]float32, n)
			for i := range upd {
				upd[i] = -1 - float32(i)
			}
			d := &TensorDesc{Addr: addr, Offset: c.v.offset, DType: dispatch.Float32, Sizes: c.v.sizes, Strides: c.v.strides}
			if err := e.FromHost(d, f32bytes(upd)); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for k, idx := range refIndices(c.v) {
				vals[idx] = upd[k]
			}
			whole := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: c.base, Strides: contiguousStrides(c.base)}
			got := make([]byte, numel(c.base)*4)
			if err := e.ToHost(whole, got); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for i, g := range f32s(got) {
				if g != vals[i] {
					t.Fatalf("%s (%s): base element %d = %v, want %v", c.name, mode, i, g, vals[i])
				}
			}
			e.Free(addr)
		}
		checkComplexViews(t, e, mode)
		checkComplexHalfStorage(t, e, mode)
		if e.LiveStorages() != 0 {
			t.Fatalf("%d storages leaked", e.LiveStorages())
		}
	}
}

func tensorArg(d *TensorDesc) dispatch.Arg {
	return dispatch.Arg{Kind: dispatch.ArgTensor, Tensors: []dispatch.TensorMeta{d.Meta()}, Handles: []any{d}}
}

func TestInplaceAddOnTransposedView(t *testing.T) {
	for _, mode := range []Mode{ModeDebug, ModeStrict, ModeFused} {
		e := newTestEngine(t, mode)
		addr, vals := storageOf(t, e, []int64{3, 4})
		tv := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{4, 3}, Strides: []int64{1, 4}}
		args := []dispatch.Arg{tensorArg(tv), {Kind: dispatch.ArgScalarInt, Int: 10}, {Kind: dispatch.ArgScalarInt, Int: 1}}
		if _, err := e.Op("aten::add_.Scalar", args); err != nil {
			t.Fatal(err)
		}
		// A functional op on a slice of the result.
		sl := &TensorDesc{Addr: addr, Offset: 4, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{4, 2}}
		outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(sl), tensorArg(sl)})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 16)
		if err := e.ToHost(&TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{2, 2}, Strides: []int64{2, 1}}, got); err != nil {
			t.Fatal(err)
		}
		want := []float32{}
		for _, idx := range []int{4, 6, 8, 10} {
			x := vals[idx] + 10
			want = append(want, x*x)
		}
		for i, g := range f32s(got) {
			if g != want[i] {
				t.Fatalf("%s: element %d = %v, want %v", mode, i, g, want[i])
			}
		}
		// Bad input fails at the call, in every mode, and leaves the storage intact.
		bad := &TensorDesc{Addr: addr, DType: dispatch.Float32, Sizes: []int64{5}, Strides: []int64{1}}
		if _, err := e.Op("aten::add.Tensor", []dispatch.Arg{tensorArg(tv), tensorArg(bad)}); err == nil ||
			!strings.Contains(err.Error(), "aten::add.Tensor") || !strings.Contains(err.Error(), "[4, 3] float32") {
			t.Fatalf("%s: shape mismatch error = %v", mode, err)
		}
	}
}
