package pjrt

import (
	"testing"

	"torchtpu/hlo"
)

// TestWhileLoopExecutes runs a module with a counted loop whose body holds a
// nested reduction, checking the builder's while and nested-region text
// against the plugin and the result against a hand-computed value.
func TestWhileLoopExecutes(t *testing.T) {
	b := hlo.NewBuilder()
	x := b.Param(hlo.T(hlo.F32, 4))
	zero := b.Constant(hlo.T(hlo.F32, 4), 0)
	outs := b.For(5, []*hlo.Value{x, zero, b.Constant(hlo.T(hlo.F32), 0)},
		func(rb *hlo.Builder, i *hlo.Value, a []*hlo.Value) []*hlo.Value {
			fi := rb.Convert(rb.BroadcastInDim(i, []int64{4}, nil), hlo.F32)
			acc := rb.Add(a[1], rb.Mul(a[0], fi))
			s := rb.Reduce(acc, rb.Constant(hlo.T(hlo.F32), 0), hlo.ReduceSum, 0)
			return []*hlo.Value{a[0], acc, rb.Add(a[2], s)}
		})
	text, _ := b.Module(outs[1:])
	c := newClient(t, ClientOptions{})
	exe := compile(t, c, text, DefaultCompileOptions())
	in := []float32{1, 2, -3, 0.5}
	res := run(t, exe, []*Buffer{upload(t, c, f32Bytes(in), F32, []int64{4}, 0)}, 0)
	acc := bytesF32(download(t, res[0]))
	total := bytesF32(download(t, res[1]))
	// acc after step i is x*(0+...+i); the running total adds sum(x)*(0+...+i).
	sumX := float32(0.5)
	for k, v := range in {
		if want := v * 10; acc[k] != want {
			t.Errorf("acc[%d] = %v, want %v", k, acc[k], want)
		}
	}
	if want := sumX * (0 + 1 + 3 + 6 + 10); total[0] != want {
		t.Errorf("total = %v, want %v\n%s", total[0], want, text)
	}
}
