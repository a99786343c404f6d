package pjrt

import (
	"fmt"
	"strings"
	"testing"

	"torchtpu/internal/testplugin"
)

// BenchmarkLaunchFloor measures the floor of the strict mode's per-op cost:
// Go launching one cached executable (x + 1 on 1000 float32 elements) on the
// plugin, waiting for completion and destroying the results only every 64
// launches, as strict mode does.
func BenchmarkLaunchFloor(b *testing.B) {
	c := benchClient(b)
	defer c.Close()
	const mlir = `module @m {
  func.func public @main(%arg0: tensor<1000xf32>) -> tensor<1000xf32> {
    %0 = stablehlo.constant dense<1.0> : tensor<1000xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<1000xf32>
    return %1 : tensor<1000xf32>
  }
}`
	x, err := c.Compile(mlir, DefaultCompileOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Destroy()
	in, err := c.BufferFromHost(make([]byte, 4000), F32, []int64{1000}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Destroy()
	var events []*Event
	var results []*Buffer
	drain := func() {
		for i, e := range events {
			_ = e.Await()
			e.Destroy()
			results[i].Destroy()
		}
		events, results = events[:0], results[:0]
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		outs, ev, err := x.Execute([]*Buffer{in}, 0)
		if err != nil {
			b.Fatal(err)
		}
		events, results = append(events, ev), append(results, outs[0])
		if len(events) == 64 {
			drain()
		}
	}
	drain()
}

// benchClient loads the plugin the tests use and opens a client on it.
func benchClient(b *testing.B) *Client {
	p, err := Load(testplugin.Path(b))
	if err != nil {
		b.Fatal(err)
	}
	c, err := p.NewClient(ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkLaunchManyArgs measures a launch's cost per argument: a program
// of 512 scalar parameters that sums them, launched on the same buffers (a
// graph replay binds hundreds of storages this way).
func BenchmarkLaunchManyArgs(b *testing.B) {
	c := benchClient(b)
	defer c.Close()
	const n = 512
	var sig, body strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sig.WriteString(", ")
		}
		fmt.Fprintf(&sig, "%%a%d: tensor<f32>", i)
	}
	body.WriteString("    %s0 = stablehlo.add %a0, %a1 : tensor<f32>\n")
	for i := 2; i < n; i++ {
		fmt.Fprintf(&body, "    %%s%d = stablehlo.add %%s%d, %%a%d : tensor<f32>\n", i-1, i-2, i)
	}
	mlir := fmt.Sprintf("module @m {\n  func.func public @main(%s) -> tensor<f32> {\n%s    return %%s%d : tensor<f32>\n  }\n}", sig.String(), body.String(), n-2)
	x, err := c.Compile(mlir, DefaultCompileOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Destroy()
	args := make([]*Buffer, n)
	for i := range args {
		if args[i], err = c.BufferFromHost(make([]byte, 4), F32, nil, 0); err != nil {
			b.Fatal(err)
		}
		defer args[i].Destroy()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		outs, ev, err := x.Execute(args, 0)
		if err != nil {
			b.Fatal(err)
		}
		_ = ev.Await()
		ev.Destroy()
		outs[0].Destroy()
	}
}

// BenchmarkLaunchManyOutputs measures a launch's cost per result: a program
// returning 256 small tensors (a graph replay writes hundreds of storages),
// the results destroyed after the launch as replaced storage buffers are.
func BenchmarkLaunchManyOutputs(b *testing.B) {
	c := benchClient(b)
	defer c.Close()
	const n = 256
	var types, body, rets strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			types.WriteString(", ")
			rets.WriteString(", ")
		}
		types.WriteString("tensor<4xf32>")
		fmt.Fprintf(&body, "    %%r%d = stablehlo.add %%arg0, %%c%d : tensor<4xf32>\n", i, i%4)
		fmt.Fprintf(&rets, "%%r%d", i)
	}
	consts := ""
	for k := 0; k < 4; k++ {
		consts += fmt.Sprintf("    %%c%d = stablehlo.constant dense<%d.0> : tensor<4xf32>\n", k, k+1)
	}
	mlir := fmt.Sprintf("module @m {\n  func.func public @main(%%arg0: tensor<4xf32>) -> (%s) {\n%s%s    return %s : %s\n  }\n}",
		types.String(), consts, body.String(), rets.String(), types.String())
	x, err := c.Compile(mlir, DefaultCompileOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer x.Destroy()
	arg, err := c.BufferFromHost(make([]byte, 16), F32, []int64{4}, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer arg.Destroy()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		outs, ev, err := x.Execute([]*Buffer{arg}, 0)
		if err != nil {
			b.Fatal(err)
		}
		_ = ev.Await()
		ev.Destroy()
		if len(outs) != n || outs[n-1].DType() != F32 || len(outs[n-1].Dims()) != 1 {
			b.Fatalf("results: %d, last %v %v", len(outs), outs[n-1].DType(), outs[n-1].Dims())
		}
		DestroyBuffers(outs)
	}
}
