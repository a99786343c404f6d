package pjrt

import "testing"

const mixedResultModule = `module @mixed {
  func.func public @main(%a: tensor<2x3xf32>) -> (tensor<f32>, tensor<3x2xf32>, tensor<2x3xi32>, tensor<6xf64>) {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<f32>
    %1 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %2 = stablehlo.convert %a : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %3 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<6xf32>
    %4 = stablehlo.convert %3 : (tensor<6xf32>) -> tensor<6xf64>
    return %0, %1, %2, %4 : tensor<f32>, tensor<3x2xf32>, tensor<2x3xi32>, tensor<6xf64>
  }
}`

// TestResultsDescribedTogether checks the results of one launch, described
// by one call into C: each has its own dtype, shape and device (the second
// of two), and DestroyBuffers destroys them, skipping nil and destroyed ones.
func TestResultsDescribedTogether(t *testing.T) {
	c := newClient(t, ClientOptions{CPUDeviceCount: 2})
	x := compile(t, c, mixedResultModule, CompileOptions(true))
	in := upload(t, c, f32Bytes([]float32{1, 2, 3, 4, 5, 6}), F32, []int64{2, 3}, 1)
	outs, ev, err := x.Execute([]*Buffer{in}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Await(); err != nil {
		t.Fatal(err)
	}
	ev.Destroy()
	want := []struct {
		dtype DType
		dims  []int64
	}{{F32, []int64{}}, {F32, []int64{3, 2}}, {S32, []int64{2, 3}}, {F64, []int64{6}}}
	if len(outs) != len(want) {
		t.Fatalf("%d results, want %d", len(outs), len(want))
	}
	for i, w := range want {
		if outs[i].DType() != w.dtype || !equalDims(outs[i].Dims(), w.dims) || outs[i].Device() != 1 {
			t.Errorf("result %d: %v %v on device %d, want %v %v on device 1", i, outs[i].DType(), outs[i].Dims(),
				outs[i].Device(), w.dtype, w.dims)
		}
	}
	if got := bytesF32(download(t, outs[0])); got[0] != 21 {
		t.Errorf("sum = %v, want 21", got[0])
	}
	if got := bytesF32(download(t, outs[1])); got[1] != 4 || got[2] != 2 {
		t.Errorf("transpose = %v, want [1 4 2 5 3 6]", got)
	}
	outs[2].Destroy()
	DestroyBuffers([]*Buffer{outs[0], nil, outs[1], outs[2], outs[3], outs[0]})
	for i, o := range outs {
		if err := o.ToHost(make([]byte, 64)); err == nil {
			t.Errorf("result %d still reads after DestroyBuffers", i)
		}
	}
}
