package engine

import (
	"encoding/binary"
	"strings"
	"testing"

	"torchtpu/dispatch"
)

// i64Tensor uploads vals as an int64 tensor of e's current device.
func i64Tensor(t *testing.T, e *Engine, vals []int64) *TensorDesc {
	t.Helper()
	addr, err := e.Alloc(int64(8*len(vals)), 0)
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	d := &TensorDesc{Addr: addr, DType: dispatch.Int64, Sizes: []int64{int64(len(vals))}, Strides: []int64{1}}
	if err := e.FromHost(d, raw); err != nil {
		t.Fatal(err)
	}
	return d
}

// onDevice returns abs(idx) computed on the device: a pending int64 tensor
// whose value range the engine does not know (abs reports none).
func onDevice(t *testing.T, e *Engine, idx *TensorDesc) *TensorDesc {
	t.Helper()
	outs, err := e.Op("aten::abs", []dispatch.Arg{tensorArg(idx)})
	if err != nil {
		t.Fatal(err)
	}
	return &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Int64, Sizes: idx.Sizes, Strides: []int64{1}}
}

// outDesc describes result o as a contiguous tensor.
func outDesc(o OutTensor) *TensorDesc {
	return &TensorDesc{Addr: o.Addr, DType: o.DType, Sizes: o.Sizes, Strides: contiguousStrides(o.Sizes)}
}

// TestHostArgsReadBeforeTheRule: index_select's index, computed on the device
// in fused mode, is read to the host by one flush before the rule records
// anything; the values are the op's.
func TestHostArgsReadBeforeTheRule(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	e.checkNeeds = true
	x := deviceTensor(t, e, 0, []float32{0, 10, 20, 30, 40})
	idx := onDevice(t, e, i64Tensor(t, e, []int64{4, 0, 2, -1 + 2}))
	reads, d2h := e.m.Flushes[whyRuleReads], e.m.D2HTransfers
	outs, err := e.Op("aten::index_select", []dispatch.Arg{tensorArg(x), {Kind: dispatch.ArgScalarInt, Int: 0}, tensorArg(idx)})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.m.Flushes[whyRuleReads] - reads; got != 1 {
		t.Errorf("%d flushes to read the index, want 1", got)
	}
	if got := e.m.D2HTransfers - d2h; got != 1 {
		t.Errorf("%d reads to the host, want 1", got)
	}
	if e.d.g.ops != 1 {
		t.Errorf("the pending graph holds %d ops after the read, want index_select alone", e.d.g.ops)
	}
	want := []float32{40, 0, 20, 10}
	for i, g := range readF32(t, e, outDesc(outs[0])) {
		if g != want[i] {
			t.Fatalf("index_select = %v, want %v", readF32(t, e, outDesc(outs[0])), want)
		}
	}
}

// TestUndeclaredNeedIsAnError: a rule that reads an argument to the host
// without declaring it fails where TORCHTPU_CHECK_NEEDS=1, and elsewhere
// still gives the op's values.
func TestUndeclaredNeedIsAnError(t *testing.T) {
	entry, _ := dispatch.Lookup("aten::index_select")
	saved := entry.Rule.Needs
	entry.Rule.Needs = dispatch.Needs{}
	defer func() { entry.Rule.Needs = saved }()
	for _, check := range []bool{true, false} {
		e := newTestEngine(t, ModeFused)
		e.checkNeeds = check
		x := deviceTensor(t, e, 0, []float32{0, 10, 20})
		idx := onDevice(t, e, i64Tensor(t, e, []int64{2, 1}))
		outs, err := e.Op("aten::index_select", []dispatch.Arg{tensorArg(x), {Kind: dispatch.ArgScalarInt, Int: 0}, tensorArg(idx)})
		if check {
			if err == nil || !strings.Contains(err.Error(), "does not declare it") {
				t.Fatalf("undeclared read: error %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := readF32(t, e, outDesc(outs[0])); got[0] != 20 || got[1] != 10 {
			t.Fatalf("index_select = %v, want [20 10]", got)
		}
	}
}

// TestResultReadsLeaveTheGraph: nonzero of a value computed in fused mode
// reads the mask it computes in a program of its own; the graph the rule
// records into is not flushed under it, and the values are the op's.
func TestResultReadsLeaveTheGraph(t *testing.T) {
	e := newTestEngine(t, ModeFused)
	e.checkNeeds = true
	x := deviceTensor(t, e, 0, []float32{0, 3, 0, 5, 7, 0})
	outs, err := e.Op("aten::mul.Tensor", []dispatch.Arg{tensorArg(x), tensorArg(x)})
	if err != nil {
		t.Fatal(err)
	}
	sq := &TensorDesc{Addr: outs[0].Addr, DType: dispatch.Float32, Sizes: []int64{6}, Strides: []int64{1}}
	g := e.d.g
	nz, err := e.Op("aten::nonzero", []dispatch.Arg{tensorArg(sq)})
	if err != nil {
		t.Fatal(err)
	}
	if e.d.g == g {
		t.Error("the pending graph before a rule that reads its results was not run first")
	}
	got := make([]byte, nz[0].NBytes)
	if err := e.ToHost(&TensorDesc{Addr: nz[0].Addr, DType: dispatch.Int64, Sizes: nz[0].Sizes, Strides: contiguousStrides(nz[0].Sizes)}, got); err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 3, 4}
	if len(got) != 8*len(want) {
		t.Fatalf("nonzero gave %d bytes, want %d", len(got), 8*len(want))
	}
	for i, w := range want {
		if v := int64(binary.LittleEndian.Uint64(got[8*i:])); v != w {
			t.Fatalf("nonzero[%d] = %d, want %d", i, v, w)
		}
	}
}
