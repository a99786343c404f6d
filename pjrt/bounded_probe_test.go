package pjrt

import (
	"testing"
)

type probe struct {
	name string
	text string
}

const dyn = `tensor<?x4xf32, #stablehlo.bounds<8, ?>>`

var probes = []probe{
	{"reduce", `module @probe {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (tensor<4xf32>) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> DYN
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [0] : (DYN, tensor<f32>) -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}`},
	{"softmax-broadcast", `module @probe {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (tensor<4xf32>) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> DYN
    %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %m = stablehlo.reduce(%d init: %z) applies stablehlo.maximum across dimensions = [0] : (DYN, tensor<f32>) -> tensor<4xf32>
    %mb = stablehlo.broadcast_in_dim %m, dims = [1] : (tensor<4xf32>) -> DYN
    %e0 = stablehlo.subtract %d, %mb : DYN
    %e = stablehlo.exponential %e0 : DYN
    %z0 = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%e init: %z0) applies stablehlo.add across dimensions = [0] : (DYN, tensor<f32>) -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}`},
	{"dot", `module @probe {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (tensor<4x4xf32>) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> DYN
    %s = stablehlo.dot_general %d, %d, contracting_dims = [0] x [0] : (DYN, DYN) -> tensor<4x4xf32>
    return %s : tensor<4x4xf32>
  }
}`},
	{"dynamic-output", `module @probe {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (DYN) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> DYN
    %e = stablehlo.exponential %d : DYN
    return %e : DYN
  }
}`},
	{"get-size", `module @probe {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (tensor<i32>) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> DYN
    %s = stablehlo.get_dimension_size %d, dim = 0 : (DYN) -> tensor<i32>
    return %s : tensor<i32>
  }
}`},
	{"concat", `module @probe {
  func.func public @main(%x: tensor<8x4xf32>, %n: tensor<i32>) -> (tensor<4xf32>, tensor<i32>) {
    %d = stablehlo.set_dimension_size %x, %n, dim = 0 : (tensor<8x4xf32>, tensor<i32>) -> DYN
    %o = stablehlo.constant dense<100.0> : tensor<1x4xf32>
    %c = stablehlo.concatenate %d, %o, dim = 0 : (DYN, tensor<1x4xf32>) -> tensor<?x4xf32, #stablehlo.bounds<9, ?>>
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [0] : (tensor<?x4xf32, #stablehlo.bounds<9, ?>>, tensor<f32>) -> tensor<4xf32>
    %g = stablehlo.get_dimension_size %c, dim = 0 : (tensor<?x4xf32, #stablehlo.bounds<9, ?>>) -> tensor<i32>
    return %s, %g : tensor<4xf32>, tensor<i32>
  }
}`},
	{"dynamic-param", `module @probe {
  func.func public @main(%d: DYN, %n: tensor<i32>) -> (tensor<4xf32>) {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%d init: %z) applies stablehlo.add across dimensions = [0] : (DYN, tensor<f32>) -> tensor<4xf32>
    return %s : tensor<4xf32>
  }
}`},
}

func TestProbeBoundedDynamic(t *testing.T) {
	c := newClient(t, ClientOptions{})
	v := make([]float32, 32)
	for i := range v {
		v[i] = float32(i+1) / 10
	}
	for _, p := range probes {
		text := replaceAll(p.text, "DYN", dyn)
		x, err := c.Compile(text, DefaultCompileOptions())
		if err != nil {
			t.Logf("%s: compile: %v", p.name, err)
			continue
		}
		xb := upload(t, c, f32Bytes(v), F32, []int64{8, 4}, 0)
		nb := upload(t, c, []byte{3, 0, 0, 0}, S32, nil, 0)
		outs, ev, err := x.Execute([]*Buffer{xb, nb}, 0)
		if err != nil {
			t.Logf("%s: execute: %v", p.name, err)
			continue
		}
		if err := ev.Await(); err != nil {
			t.Logf("%s: await: %v", p.name, err)
			continue
		}
		for i, o := range outs {
			dst := make([]byte, o.Size())
			err := o.ToHost(dst)
			if o.DType() == F32 {
				t.Logf("%s: out %d dims %v err %v: %v", p.name, i, o.Dims(), err, bytesF32(dst))
			} else {
				t.Logf("%s: out %d dims %v err %v: %v", p.name, i, o.Dims(), err, dst)
			}
		}
		if p.name == "dynamic-param" {
			small := upload(t, c, f32Bytes(v[:12]), F32, []int64{3, 4}, 0)
			outs, ev, err := x.Execute([]*Buffer{small, nb}, 0)
			if err == nil {
				err = ev.Await()
			}
			if err != nil {
				t.Logf("%s small: %v", p.name, err)
				continue
			}
			dst := make([]byte, outs[0].Size())
			t.Logf("%s small: err %v %v", p.name, outs[0].ToHost(dst), bytesF32(dst))
		}
	}
}

func replaceAll(s, old, new string) string {
	out := ""
	for {
		i := indexOf(s, old)
		if i < 0 {
			return out + s
		}
		out += s[:i] + new
		s = s[i+len(old):]
	}
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
