package hlo

import "testing"

// TestFragmentPasteRecordsTheSameOps cuts an op's run (a reduction with its
// region, a runtime number) out of one builder and pastes it into another
// on other inputs: the module text and the structural hash equal those of
// recording the same ops directly.
func TestFragmentPasteRecordsTheSameOps(t *testing.T) {
	body := func(b *Builder, x, y, n *Value) (*Value, *Value) {
		s := b.Reduce(b.Mul(x, y), b.Scalar(F32, 0), ReduceSum, 1)
		return s, b.Add(x, b.BroadcastTo(n, x.T.Shape))
	}
	direct := NewBuilder()
	dx, dy := direct.Param(T(F32, 4, 8)), direct.Param(T(F32, 4, 8))
	ds, da := body(direct, dx, dy, direct.Param(T(F32)))
	want, _ := direct.Module([]*Value{ds, da})

	src := NewBuilder()
	sx, sy := src.Param(T(F32, 4, 8)), src.Param(T(F32, 4, 8))
	nodes, params := src.Len(), src.NumParams()
	ss, sa := body(src, sx, sy, src.Param(T(F32)))
	frag, refs, ok := src.Cut(nodes, params, []*Value{sx, sy}, []*Value{ss, sa})
	if !ok || len(frag.Params()) != 1 {
		t.Fatalf("Cut: ok=%v params=%v", ok, frag.Params())
	}
	dst := NewBuilder()
	px, py := dst.Param(T(F32, 4, 8)), dst.Param(T(F32, 4, 8))
	vals, ok := dst.Paste(frag, []*Value{px, py}, []*Value{dst.Param(T(F32))}, refs)
	if !ok {
		t.Fatal("Paste refused matching inputs")
	}
	got, _ := dst.Module(vals)
	if got != want {
		t.Fatalf("pasted module:\n%s\nwant:\n%s", got, want)
	}
	if vals[0].hash() != ds.hash() || vals[1].hash() != da.hash() {
		t.Error("pasted values hash differently from the recorded ones")
	}
	if _, ok := dst.Paste(frag, []*Value{px, dst.Param(T(F32, 4, 9))}, []*Value{dst.Param(T(F32))}, refs); ok {
		t.Error("Paste took an input of another type")
	}
}

// TestFragmentCutNeedsEveryOutsideValue checks that a run reading a value
// defined before it, and not named as an input, cannot be cut.
func TestFragmentCutNeedsEveryOutsideValue(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 3))
	early := b.Exp(x)
	nodes, params := b.Len(), b.NumParams()
	y := b.Add(x, early)
	if _, _, ok := b.Cut(nodes, params, []*Value{x}, []*Value{y}); ok {
		t.Fatal("Cut accepted a run that reads a value defined before it")
	}
	if _, _, ok := b.Cut(nodes, params, []*Value{x, early}, []*Value{y}); !ok {
		t.Fatal("Cut refused a run whose outside values are all inputs")
	}
}

// BenchmarkPaste pastes an optimizer-like run (an AdamW update of one
// 128x128 parameter: 25 ops, three runtime numbers) onto fresh inputs.
func BenchmarkPaste(b *testing.B) {
	body := func(bl *Builder, p, g, m, v, lr, b1, b2 *Value) []*Value {
		sh := p.T.Shape
		bc := func(s *Value) *Value { return bl.BroadcastTo(s, sh) }
		m2 := bl.Add(bl.Mul(m, bc(b1)), bl.Mul(g, bl.Sub(bc(bl.Scalar(F32, 1)), bc(b1))))
		v2 := bl.Add(bl.Mul(v, bc(b2)), bl.Mul(bl.Mul(g, g), bl.Sub(bc(bl.Scalar(F32, 1)), bc(b2))))
		p2 := bl.Sub(p, bl.Mul(bc(lr), bl.Div(m2, bl.Add(bl.Sqrt(v2), bc(bl.Scalar(F32, 1e-8))))))
		return []*Value{p2, m2, v2}
	}
	t := T(F32, 128, 128)
	src := NewBuilder()
	in := []*Value{src.Param(t), src.Param(t), src.Param(t), src.Param(t)}
	nodes, params := src.Len(), src.NumParams()
	outs := body(src, in[0], in[1], in[2], in[3], src.Param(T(F32)), src.Param(T(F32)), src.Param(T(F32)))
	frag, refs, ok := src.Cut(nodes, params, in, outs)
	if !ok {
		b.Fatal("Cut failed")
	}
	b.ReportAllocs()
	var dst *Builder
	var args, nums []*Value
	for i := 0; i < b.N; i++ {
		if i%256 == 0 {
			dst = NewBuilder()
			args = []*Value{dst.Param(t), dst.Param(t), dst.Param(t), dst.Param(t)}
			nums = []*Value{dst.Param(T(F32)), dst.Param(T(F32)), dst.Param(T(F32))}
		}
		if _, ok := dst.Paste(frag, args, nums, refs); !ok {
			b.Fatal("Paste refused")
		}
	}
}

// TestFragmentEqualComparesStructure cuts the same run twice (recorded on
// other inputs, with another runtime number) and a run with another constant:
// the first two are equal, the third differs, as does a run on inputs of
// another shape.
func TestFragmentEqualComparesStructure(t *testing.T) {
	cut := func(n int64, c float64) *Fragment {
		b := NewBuilder()
		x := b.Param(T(F32, n))
		nodes, params := b.Len(), b.NumParams()
		y := b.Add(b.Mul(x, b.BroadcastTo(b.Param(T(F32)), x.T.Shape)), b.BroadcastTo(b.Scalar(F32, c), x.T.Shape))
		f, _, ok := b.Cut(nodes, params, []*Value{x}, []*Value{y})
		if !ok {
			t.Fatal("Cut refused a run on its input")
		}
		return f
	}
	a, b := cut(4, 1), cut(4, 1)
	if !a.Equal(b) || !b.Equal(a) {
		t.Error("two cuts of the same run differ")
	}
	if a.Equal(cut(4, 2)) {
		t.Error("runs with other constants compare equal")
	}
	if a.Equal(cut(5, 1)) {
		t.Error("runs on inputs of another shape compare equal")
	}
	if len(a.Inputs()) != 1 || !a.Inputs()[0].Equal(T(F32, 4)) {
		t.Errorf("Inputs: %v", a.Inputs())
	}
}

// TestFragmentParamsAsInputs cuts a whole module's run, whose operands are all
// parameters, turns its first and third parameters into inputs, and pastes
// the copy on those inputs and the one parameter left: the module equals the
// direct recording, and a ref to a parameter now names the input.
func TestFragmentParamsAsInputs(t *testing.T) {
	body := func(b *Builder, x, n, y *Value) *Value {
		return b.Add(b.Mul(x, y), b.BroadcastTo(n, x.T.Shape))
	}
	direct := NewBuilder()
	dx, dn, dy := direct.Param(T(F32, 2, 3)), direct.Param(T(F32)), direct.Param(T(F32, 2, 3))
	want, _ := direct.Module([]*Value{body(direct, dx, dn, dy), dy})

	src := NewBuilder()
	sx, sn, sy := src.Param(T(F32, 2, 3)), src.Param(T(F32)), src.Param(T(F32, 2, 3))
	frag, refs, ok := src.Cut(0, 0, nil, []*Value{body(src, sx, sn, sy), sy})
	if !ok || len(frag.Params()) != 3 || len(frag.Inputs()) != 0 {
		t.Fatalf("Cut: ok=%v params=%v inputs=%v", ok, frag.Params(), frag.Inputs())
	}
	g, grefs := frag.ParamsAsInputs([]bool{true, false, true}, refs)
	if len(g.Inputs()) != 2 || len(g.Params()) != 1 || !g.Params()[0].Equal(T(F32)) {
		t.Fatalf("inputs %v params %v", g.Inputs(), g.Params())
	}
	dst := NewBuilder()
	px, pn, py := dst.Param(T(F32, 2, 3)), dst.Param(T(F32)), dst.Param(T(F32, 2, 3))
	vals, ok := dst.Paste(g, []*Value{px, py}, []*Value{pn}, grefs)
	if !ok {
		t.Fatal("Paste refused the copy's inputs")
	}
	if vals[1] != py {
		t.Error("a ref to the third parameter does not name the second input")
	}
	got, _ := dst.Module(vals)
	if got != want {
		t.Fatalf("pasted module:\n%s\nwant:\n%s", got, want)
	}
	if len(frag.Params()) != 3 || frag.ops[0].operands[0].kind != refParam {
		t.Error("ParamsAsInputs changed the fragment it copied")
	}
}
