package hlo

import (
	"strings"
	"testing"
)

func TestWhileGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2))
	outs := b.For(3, []*Value{x}, func(rb *Builder, i *Value, a []*Value) []*Value {
		return []*Value{rb.Add(a[0], a[0])}
	})
	if len(outs) != 1 || outs[0].T.String() != "tensor<2xf32>" {
		t.Fatalf("outs %v", outs)
	}
	text, _ := b.Module(outs)
	for _, want := range []string{
		`%2:3 = "stablehlo.while"(%1, %0, %arg0)({`,
		`^bb0(%r1_a0: tensor<i64>, %r1_a1: tensor<i64>, %r1_a2: tensor<2xf32>):`,
		`%r1_0 = "stablehlo.compare"(%r1_a0, %r1_a1)`,
		`"stablehlo.return"(%r1_0) : (tensor<i1>) -> ()`,
		`}, {`,
		`%r1_0 = "stablehlo.add"(%r1_a2, %r1_a2)`,
		`"stablehlo.return"(%r1_2, %r1_a1, %r1_0) : (tensor<i64>, tensor<i64>, tensor<2xf32>) -> ()`,
		`return %2#2 : tensor<2xf32>`,
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("module text lacks %q:\n%s", want, text)
		}
	}
}

// TestRegionNamesFollowNesting checks that a region's names come from its
// nesting depth: sibling regions share them, a nested region has its own.
func TestRegionNamesFollowNesting(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 3))
	outs := b.For(2, []*Value{x}, func(rb *Builder, i *Value, a []*Value) []*Value {
		s := rb.Reduce(a[0], rb.Constant(T(F32), 0), ReduceSum, 0)
		return []*Value{rb.Add(a[0], rb.BroadcastInDim(s, []int64{3}, nil))}
	})
	text, _ := b.Module(outs)
	// The loop's two blocks are at depth 1; the reduction nested in the body is at depth 2.
	if !strings.Contains(text, "^bb0(%r2_a0: tensor<f32>, %r2_a1: tensor<f32>)") || strings.Count(text, "^bb0(%r1_") != 2 {
		t.Fatalf("nested region names:\n%s", text)
	}
}
