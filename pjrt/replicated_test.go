package pjrt

import (
	"slices"
	"testing"
)

// replicatedModule is one collective per result on 4 replicas: all_reduce
// (sum), all_gather and collective_permute (d -> d+1).
const replicatedModule = `module @collectives attributes {mhlo.num_replicas = 4 : i32, mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf32>, tensor<16xf32>, tensor<4xf32>) {
    %0 = "stablehlo.all_reduce"(%arg0) <{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "stablehlo.all_gather"(%arg0) <{all_gather_dim = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}> : (tensor<4xf32>) -> tensor<16xf32>
    %2 = "stablehlo.collective_permute"(%arg0) <{source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<4xf32>) -> tensor<4xf32>
    return %0, %1, %2 : tensor<4xf32>, tensor<16xf32>, tensor<4xf32>
  }
}`

// TestExecuteReplicated runs collectives on 4 CPU devices in one launch:
// device d holds [4d, 4d+1, 4d+2, 4d+3].
func TestExecuteReplicated(t *testing.T) {
	c := newClient(t, ClientOptions{CPUDeviceCount: 4})
	x, err := c.Compile(replicatedModule, ReplicatedCompileOptions(4))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	defer x.Destroy()
	if got := x.Devices(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("devices %v, want [0 1 2 3]", got)
	}
	args := make([][]*Buffer, 4)
	for d := range args {
		v := []float32{float32(4 * d), float32(4*d + 1), float32(4*d + 2), float32(4*d + 3)}
		b, err := c.BufferFromHost(f32Bytes(v), F32, []int64{4}, d)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Destroy()
		args[d] = []*Buffer{b}
	}
	outs, err := x.ExecuteReplicated(args)
	if err != nil {
		t.Fatalf("ExecuteReplicated: %v", err)
	}
	read := func(b *Buffer, n int) []float32 {
		defer b.Destroy()
		raw := make([]byte, 4*n)
		if err := b.ToHost(raw); err != nil {
			t.Fatal(err)
		}
		return bytesF32(raw)
	}
	for d, o := range outs {
		if o[0].Device() != d {
			t.Errorf("replica %d's result is on device %d", d, o[0].Device())
		}
		if got := read(o[0], 4); !slices.Equal(got, []float32{24, 28, 32, 36}) {
			t.Errorf("device %d: all_reduce %v", d, got)
		}
		want := make([]float32, 16)
		for i := range want {
			want[i] = float32(i)
		}
		if got := read(o[1], 16); !slices.Equal(got, want) {
			t.Errorf("device %d: all_gather %v", d, got)
		}
		p := (d + 3) % 4
		if got := read(o[2], 4); !slices.Equal(got, []float32{float32(4 * p), float32(4*p + 1), float32(4*p + 2), float32(4*p + 3)}) {
			t.Errorf("device %d: collective_permute %v", d, got)
		}
	}
	if _, err := x.ExecuteReplicated(args[:3]); err == nil {
		t.Error("3 argument lists for 4 replicas were accepted")
	}
}
