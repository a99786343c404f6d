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

// spmdMatmul is an 8x6 by 6x10 matmul whose left operand is split by rows
// over 4 partitions; XLA's SPMD partitioner inserts the collectives that make
// the replicated result.
const spmdMatmul = `module @sharded_matmul attributes {mhlo.num_replicas = 1 : i32, mhlo.num_partitions = 4 : i32} {
  func.func public @main(%a: tensor<8x6xf32> {mhlo.sharding = "{devices=[4,1]0,1,2,3}"}, %b: tensor<6x10xf32> {mhlo.sharding = "{replicated}"}) -> (tensor<8x10xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<8x6xf32>, tensor<6x10xf32>) -> tensor<8x10xf32>
    return %0 : tensor<8x10xf32>
  }
}`

// TestSPMDShardedMatmul checks the sharded product on every device against
// the product computed on the host.
func TestSPMDShardedMatmul(t *testing.T) {
	c := newClient(t, ClientOptions{CPUDeviceCount: 4})
	x, err := c.Compile(spmdMatmul, SPMDCompileOptions(4))
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	defer x.Destroy()
	a := make([]float32, 8*6)
	b := make([]float32, 6*10)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	for i := range b {
		b[i] = float32(i%5) * 0.5
	}
	want := make([]float32, 8*10)
	for i := 0; i < 8; i++ {
		for j := 0; j < 10; j++ {
			for k := 0; k < 6; k++ {
				want[i*10+j] += a[i*6+k] * b[k*10+j]
			}
		}
	}
	args := make([][]*Buffer, 4)
	for d := range args {
		shard, err := c.BufferFromHost(f32Bytes(a[d*12:(d+1)*12]), F32, []int64{2, 6}, d)
		if err != nil {
			t.Fatal(err)
		}
		defer shard.Destroy()
		full, err := c.BufferFromHost(f32Bytes(b), F32, []int64{6, 10}, d)
		if err != nil {
			t.Fatal(err)
		}
		defer full.Destroy()
		args[d] = []*Buffer{shard, full}
	}
	outs, err := x.ExecuteReplicated(args)
	if err != nil {
		t.Fatalf("ExecuteReplicated: %v", err)
	}
	for d, o := range outs {
		raw := make([]byte, 4*80)
		if err := o[0].ToHost(raw); err != nil {
			t.Fatal(err)
		}
		o[0].Destroy()
		if got := bytesF32(raw); !slices.Equal(got, want) {
			t.Errorf("device %d: sharded matmul %v, want %v", d, got, want)
		}
	}
}
