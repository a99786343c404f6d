package engine

import (
	"bytes"
	"testing"

	"torchtpu/hlo"
)

func TestFillOf(t *testing.T) {
	e := &Engine{}
	zero := func() *hlo.Builder { return hlo.NewBuilder() }
	b := zero()
	c := b.Constant(hlo.T(hlo.F32), 0)
	outs := []*hlo.Value{b.BroadcastTo(c, []int64{3, 4}), b.BroadcastTo(c, []int64{5})}
	f := e.fillOf("", b.Summarize(outs))
	if f == nil || !f.zero || len(f.results) != 2 || f.results[0].NumElements() != 12 {
		t.Fatalf("zeros of two shapes: %+v", f)
	}
	b = zero()
	one := b.BroadcastTo(b.Constant(hlo.T(hlo.S16), 7), []int64{2, 3})
	if f = e.fillOf("", b.Summarize([]*hlo.Value{one})); f == nil || f.zero || !bytes.Equal(f.bytes, bytes.Repeat([]byte{7, 0}, 6)) {
		t.Fatalf("sevens: %+v", f)
	}
	b = zero()
	p := b.Param(hlo.T(hlo.F32))
	if f = e.fillOf("", b.Summarize([]*hlo.Value{b.BroadcastTo(p, []int64{4})})); f == nil || !f.param {
		t.Fatal("a broadcast scalar parameter is a fill from its value")
	}
	b = zero()
	p = b.Param(hlo.T(hlo.F32, 2))
	if f = e.fillOf("", b.Summarize([]*hlo.Value{b.BroadcastInDim(p, []int64{3, 2}, []int64{1})})); f != nil {
		t.Fatal("a broadcast of a vector is not a fill")
	}
	b = zero()
	p = b.Param(hlo.T(hlo.S64))
	if f = e.fillOf("", b.Summarize([]*hlo.Value{b.BroadcastTo(b.Convert(p, hlo.F32), []int64{4})})); f != nil {
		t.Fatal("a converted parameter is not a fill")
	}
	b = zero()
	k := b.Constant(hlo.T(hlo.F32), 1)
	if f = e.fillOf("", b.Summarize([]*hlo.Value{b.Add(k, k)})); f != nil {
		t.Fatal("an add is not a fill")
	}
	b = zero()
	if f = e.fillOf("", b.Summarize([]*hlo.Value{b.BroadcastTo(b.Constant(hlo.T(hlo.F32), 0), []int64{1024, 257})})); f != nil {
		t.Fatal("a fill past hostFillMax compiles")
	}
}

func TestSplatValue(t *testing.T) {
	zero4 := []byte{0, 0, 0, 0}
	for _, c := range []struct {
		consts []string
		el     hlo.Elem
		want   []byte // nil: no value
	}{
		{[]string{"dense<0x00000000>", "dense<0x00000000>", "dense<0>", "dense<0>"}, hlo.F32, zero4}, // a write's starts
		{[]string{"dense<0x00000000>", "dense<0x3F800000>"}, hlo.F32, nil},                           // two values
		{[]string{"dense<0>", "dense<0>"}, hlo.S64, []byte{0, 0, 0, 0, 0, 0, 0, 0}},
		{[]string{"dense<5>", "dense<0>"}, hlo.S32, nil}, // a value or a start: cannot tell
		{[]string{"dense<false>", "dense<0>"}, hlo.Pred, []byte{0}},
		{[]string{"dense<0>"}, hlo.F32, nil},                                       // no value of the type
		{[]string{"dense<0x00000000>", "dense<0x0000000000000000>"}, hlo.F32, nil}, // a float of another type
		{[]string{"dense<0x00000000>", "dense<[1, 2]>"}, hlo.F32, nil},             // not a splat
	} {
		got, ok := splatValue(c.consts, c.el)
		if c.want == nil && ok || c.want != nil && (!ok || !bytes.Equal(got, c.want)) {
			t.Errorf("splatValue(%q, %v) = %x, %v; want %x", c.consts, c.el, got, ok, c.want)
		}
	}
}

func TestFillThroughAWriteOfANewStorage(t *testing.T) {
	// zeros_like of a channels_last tensor: zeros written in memory order into a new flat storage.
	b := hlo.NewBuilder()
	fill := b.BroadcastTo(b.Constant(hlo.T(hlo.F32), 0), []int64{2, 3, 4, 5})
	perm := b.Reshape(b.Transpose(fill, 0, 2, 3, 1), 2, 4, 5, 3, 1)
	base := b.Reshape(b.Constant(hlo.T(hlo.F32, 120), 0), 2, 4, 5, 3, 1)
	zero := b.ConstantInt(hlo.T(hlo.S64), 0)
	out := b.Reshape(b.DynamicUpdateSlice(base, perm, []*hlo.Value{zero, zero, zero, zero, zero}), 120)
	f := (&Engine{}).fillOf("", b.Summarize([]*hlo.Value{out}))
	if f == nil || !f.zero || f.results[0].NumElements() != 120 {
		t.Fatalf("zeros written into a new storage: %+v", f)
	}
	b = hlo.NewBuilder()
	one := b.BroadcastTo(b.Constant(hlo.T(hlo.F32), 1), []int64{4})
	out = b.DynamicUpdateSlice(b.Constant(hlo.T(hlo.F32, 6), 0), one, []*hlo.Value{b.ConstantInt(hlo.T(hlo.S64), 1)})
	if f = (&Engine{}).fillOf("", b.Summarize([]*hlo.Value{out})); f != nil {
		t.Fatal("ones written into part of zeros are not a fill")
	}
}
