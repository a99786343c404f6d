package hlo

import (
	"strings"
	"testing"
)

func TestConvolutionGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2, 4, 9, 9))
	w := b.Param(T(F32, 6, 2, 3, 3))
	y := b.Convolution(x, w, ChannelsFirst(2), ConvOpts{
		Strides: []int64{2, 2}, RhsDilation: []int64{2, 1}, Padding: [][2]int64{{1, 1}, {0, 2}}, FeatureGroups: 2,
	})
	text, _ := b.Module([]*Value{y})
	want := `    %0 = "stablehlo.convolution"(%arg0, %arg1) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 2 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[1, 1], [0, 2]]> : tensor<2x2xi64>, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>], rhs_dilation = array<i64: 2, 1>, window_strides = array<i64: 2, 2>} : (tensor<2x4x9x9xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x4x5xf32>
`
	if !strings.Contains(text, want) {
		t.Fatalf("module text:\n%s\nwant line:\n%s", text, want)
	}
}

func TestConvolutionTransposedDims(t *testing.T) {
	// The weight gradient's layout: input features as batch, result [f, b, 0].
	b := NewBuilder()
	x := b.Param(T(F32, 3, 4, 10))
	g := b.Param(T(F32, 3, 6, 8))
	d := ConvDims{1, 0, []int64{2}, 0, 1, []int64{2}, 1, 0, []int64{2}}
	y := b.Convolution(x, g, d, ConvOpts{BatchGroups: 2, LhsDilation: []int64{1}})
	text, _ := b.Module([]*Value{y})
	for _, s := range []string{
		"#stablehlo.conv<[f, b, 0]x[i, o, 0]->[f, b, 0]>",
		"batch_group_count = 2 : i64",
		"padding = dense<[[0, 0]]> : tensor<1x2xi64>",
		"-> tensor<6x2x3xf32>",
	} {
		if !strings.Contains(text, s) {
			t.Errorf("module text lacks %q:\n%s", s, text)
		}
	}
}

func TestReduceWindowGolden(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 2, 5, 5))
	s := b.ReduceWindow(x, b.Scalar(F32, 0), ReduceSum, Window{
		Dims: []int64{1, 2, 2}, Strides: []int64{1, 2, 2}, Padding: [][2]int64{{0, 0}, {1, 1}, {0, 0}},
	})
	text, _ := b.Module([]*Value{s})
	want := `    %1 = "stablehlo.reduce_window"(%arg0, %0)({
    ^bb0(%r1_a0: tensor<f32>, %r1_a1: tensor<f32>):
      %r1_0 = "stablehlo.add"(%r1_a0, %r1_a1) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%r1_0) : (tensor<f32>) -> ()
    }) {base_dilations = array<i64: 1, 1, 1>, padding = dense<[[0, 0], [1, 1], [0, 0]]> : tensor<3x2xi64>, window_dilations = array<i64: 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2>, window_strides = array<i64: 1, 2, 2>} : (tensor<2x5x5xf32>, tensor<f32>) -> tensor<2x3x2xf32>
`
	if !strings.Contains(text, want) {
		t.Fatalf("module text:\n%s\nwant:\n%s", text, want)
	}
}

func TestReduceWindowArgShape(t *testing.T) {
	b := NewBuilder()
	x := b.Param(T(F32, 1, 1, 7, 7))
	i := b.Param(T(S64, 1, 1, 7, 7))
	v, k := b.ReduceWindowArg(x, i, GT, Window{
		Dims: []int64{1, 1, 3, 3}, Strides: []int64{1, 1, 2, 2}, WindowDilation: []int64{1, 1, 2, 2},
	})
	if v.T.String() != "tensor<1x1x2x2xf32>" || k.T.String() != "tensor<1x1x2x2xi64>" {
		t.Fatalf("types %v %v", v.T, k.T)
	}
	text, _ := b.Module([]*Value{v, k})
	if !strings.Contains(text, "dense<9223372036854775807> : tensor<i64>") {
		t.Fatalf("index init is not the largest int64:\n%s", text)
	}
}

// convText returns the module text of a channels-first convolution of an
// input of shape x with a kernel of shape w.
func convText(x, w []int64, o ConvOpts) string {
	b := NewBuilder()
	y := b.Convolution(b.Param(T(F32, x...)), b.Param(T(F32, w...)), ChannelsFirst(len(x)-2), o)
	text, _ := b.Module([]*Value{y})
	return text
}

func TestConvolutionPadsAnInputItsKernelOutgrows(t *testing.T) {
	one := [][2]int64{{1, 1}, {1, 1}}
	// A 3x3 kernel over a 2x2 map padded by one: the input is padded by a
	// pad op and the convolution pads nothing.
	wantText(t, convText([]int64{4, 8, 2, 2}, []int64{6, 8, 3, 3}, ConvOpts{Padding: one}),
		"edge_padding_high = array<i64: 0, 0, 1, 1>, edge_padding_low = array<i64: 0, 0, 1, 1>, interior_padding = array<i64: 0, 0, 0, 0>",
		"(tensor<4x8x2x2xf32>, tensor<f32>) -> tensor<4x8x4x4xf32>",
		"lhs_dilation = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 0]]>",
		"(tensor<4x8x4x4xf32>, tensor<6x8x3x3xf32>) -> tensor<4x6x2x2xf32>")
	// Input dilation (a transposed convolution's) becomes interior padding.
	wantText(t, convText([]int64{1, 2, 2, 1}, []int64{3, 2, 4, 4}, ConvOpts{Padding: [][2]int64{{2, 2}, {3, 3}}, LhsDilation: []int64{3, 3}}),
		"edge_padding_high = array<i64: 0, 0, 2, 3>, edge_padding_low = array<i64: 0, 0, 2, 3>, interior_padding = array<i64: 0, 0, 2, 2>",
		"-> tensor<1x2x8x7xf32>",
		"-> tensor<1x3x5x4xf32>")
	// A kernel no longer than the input keeps the convolution's own padding.
	if text := convText([]int64{4, 8, 3, 3}, []int64{6, 8, 3, 3}, ConvOpts{Padding: one}); strings.Contains(text, "stablehlo.pad") {
		t.Errorf("a 3x3 kernel over a 3x3 map was padded beforehand:\n%s", text)
	}
}

func TestConvolutionCropsTapsThatMeetOnlyPadding(t *testing.T) {
	one := [][2]int64{{1, 1}, {1, 1}}
	// A 3x3 kernel over a 1x1 map padded by one: only the centre tap meets
	// data, so the kernel is sliced to it and nothing is padded.
	wantText(t, convText([]int64{4, 8, 1, 1}, []int64{6, 8, 3, 3}, ConvOpts{Padding: one}),
		"start_indices = array<i64: 0, 0, 1, 1>",
		"-> tensor<6x8x1x1xf32>",
		"padding = dense<[[0, 0], [0, 0]]>",
		"(tensor<4x8x1x1xf32>, tensor<6x8x1x1xf32>) -> tensor<4x6x1x1xf32>")
	// A 1x3 map with a 3x3 kernel: rows crop to the centre, columns keep all taps.
	wantText(t, convText([]int64{1, 8, 1, 3}, []int64{6, 8, 3, 3}, ConvOpts{Padding: one}),
		"-> tensor<6x8x1x3xf32>", "padding = dense<[[0, 0], [1, 1]]>", "-> tensor<1x6x1x3xf32>")
	// Strided, or every tap used: the kernel stays whole.
	for _, c := range []struct {
		x []int64
		o ConvOpts
	}{
		{[]int64{1, 8, 1, 2}, ConvOpts{Padding: one, Strides: []int64{2, 2}}},
		{[]int64{1, 8, 2, 2}, ConvOpts{Padding: one}},
	} {
		if text := convText(c.x, []int64{6, 8, 3, 3}, c.o); strings.Contains(text, "stablehlo.slice") {
			t.Errorf("kernel sliced for %v %+v:\n%s", c.x, c.o, text)
		}
	}
}

// wantText fails t for each line of want that module text lacks.
func wantText(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(text, s) {
			t.Errorf("module text lacks %q:\n%s", s, text)
		}
	}
}
