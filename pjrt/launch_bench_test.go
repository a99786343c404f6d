package pjrt

import (
	"os"
	"testing"
)

// BenchmarkLaunchFloor measures the floor of the strict mode's per-op cost:
// Go launching one cached executable (x + 1 on 1000 float32 elements) on the
// plugin, destroying the previous result, without waiting for completion
// except every 64 launches. It needs TORCHTPU_PLUGIN_PATH.
func BenchmarkLaunchFloor(b *testing.B) {
	path := os.Getenv("TORCHTPU_PLUGIN_PATH")
	if path == "" {
		b.Skip("TORCHTPU_PLUGIN_PATH is not set")
	}
	p, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	c, err := p.NewClient(ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
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
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		outs, ev, err := x.Execute([]*Buffer{in}, 0)
		if err != nil {
			b.Fatal(err)
		}
		outs[0].Destroy()
		events = append(events, ev)
		if len(events) == 64 {
			for _, e := range events {
				_ = e.Await()
				e.Destroy()
			}
			events = events[:0]
		}
	}
	for _, e := range events {
		_ = e.Await()
		e.Destroy()
	}
}
