package pjrt

import (
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
