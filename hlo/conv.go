package hlo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ConvDims names the role of each dimension of a convolution's input (lhs),
// kernel (rhs) and result, as StableHLO's dimension_numbers does.
type ConvDims struct {
	LhsBatch, LhsFeature int64
	LhsSpatial           []int64
	RhsIn, RhsOut        int64
	RhsSpatial           []int64
	OutBatch, OutFeature int64
	OutSpatial           []int64
}

// ChannelsFirst returns the dimension numbers PyTorch uses for n spatial
// dimensions: [b, f, 0, ...]x[o, i, 0, ...]->[b, f, 0, ...].
func ChannelsFirst(n int) ConvDims {
	sp := make([]int64, n)
	for i := range sp {
		sp[i] = int64(i + 2)
	}
	return ConvDims{0, 1, sp, 1, 0, sp, 0, 1, sp}
}

// ConvOpts holds a convolution's window attributes, one entry per spatial
// dimension. Nil strides and dilations mean 1, nil padding means 0, and
// group counts below 1 mean 1.
type ConvOpts struct {
	Strides, LhsDilation, RhsDilation []int64
	Padding                           [][2]int64
	FeatureGroups, BatchGroups        int64
}

// layout prints the dimension roles of one operand, e.g. "[b, f, 0, 1]".
func layout(rank int, a, b int64, an, bn string, spatial []int64) string {
	parts := make([]string, rank)
	parts[a], parts[b] = an, bn
	for i, d := range spatial {
		parts[d] = strconv.Itoa(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func ones(n int, xs []int64) []int64 {
	if xs != nil {
		return xs
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// densePadding prints padding pairs as a dense i64 attribute of shape Nx2.
func densePadding(p [][2]int64) string {
	parts := make([]string, len(p))
	for i, lh := range p {
		parts[i] = fmt.Sprintf("[%d, %d]", lh[0], lh[1])
	}
	return fmt.Sprintf("dense<[%s]> : tensor<%dx2xi64>", strings.Join(parts, ", "), len(p))
}

// windowOut is the number of windows of size w (dilated by wd) that fit,
// stepping by s, in n elements dilated by bd and padded by lo and hi.
func windowOut(n, bd, lo, hi, w, wd, s int64) int64 {
	in := int64(0)
	if n > 0 {
		in = (n-1)*bd + 1
	}
	in += lo + hi
	dw := (w-1)*wd + 1
	if in < dw {
		return 0
	}
	return (in-dw)/s + 1
}

// Convolution is StableHLO's convolution of lhs with the kernel rhs, at the
// highest precision.
func (b *Builder) Convolution(lhs, rhs *Value, d ConvDims, o ConvOpts) *Value {
	n := len(d.LhsSpatial)
	if !(n >= 1 && len(d.RhsSpatial) == n && len(d.OutSpatial) == n) {
		failf("convolution: spatial dims %v", d)
	}
	if !(lhs.T.Rank() == n+2 && rhs.T.Rank() == n+2) {
		failf("convolution: ranks of %v and %v", lhs.T, rhs.T)
	}
	if lhs.T.Elem != rhs.T.Elem {
		failf("convolution: element types differ: %v vs %v", lhs.T, rhs.T)
	}
	strides, ld, rd := ones(n, o.Strides), ones(n, o.LhsDilation), ones(n, o.RhsDilation)
	pad := o.Padding
	if pad == nil {
		pad = make([][2]int64, n)
	}
	if !(len(strides) == n && len(ld) == n && len(rd) == n && len(pad) == n) {
		failf("convolution: window attributes for %d spatial dims", n)
	}
	rhs, pad = b.cropIdleTaps(lhs, rhs, d, pad, strides, ld, rd)
	if kernelOutgrowsInput(lhs, rhs, d, ld, rd) && (!allZero(pad) || !allOne(ld)) && !lhs.T.Elem.IsComplex() {
		lhs, pad, ld = b.padForConvolution(lhs, d, pad, ld), make([][2]int64, n), ones(n, nil)
	}
	fg, bg := max(o.FeatureGroups, 1), max(o.BatchGroups, 1)
	if lhs.T.Shape[d.LhsFeature] != rhs.T.Shape[d.RhsIn]*fg {
		failf("convolution: %v features for %v kernel and %d groups", lhs.T, rhs.T, fg)
	}
	if !(rhs.T.Shape[d.RhsOut]%fg == 0 && rhs.T.Shape[d.RhsOut]%bg == 0 && lhs.T.Shape[d.LhsBatch]%bg == 0) {
		failf("convolution: %v and %v do not split into %d feature and %d batch groups", lhs.T, rhs.T, fg, bg)
	}
	shape := make([]int64, n+2)
	shape[d.OutBatch] = lhs.T.Shape[d.LhsBatch] / bg
	shape[d.OutFeature] = rhs.T.Shape[d.RhsOut]
	for i := 0; i < n; i++ {
		shape[d.OutSpatial[i]] = windowOut(lhs.T.Shape[d.LhsSpatial[i]], ld[i], pad[i][0], pad[i][1],
			rhs.T.Shape[d.RhsSpatial[i]], rd[i], strides[i])
	}
	dn := layout(n+2, d.LhsBatch, d.LhsFeature, "b", "f", d.LhsSpatial) + "x" +
		layout(n+2, d.RhsOut, d.RhsIn, "o", "i", d.RhsSpatial) + "->" +
		layout(n+2, d.OutBatch, d.OutFeature, "b", "f", d.OutSpatial)
	attrs := fmt.Sprintf("{batch_group_count = %d : i64, dimension_numbers = #stablehlo.conv<%s>, feature_group_count = %d : i64, lhs_dilation = %s, padding = %s, precision_config = [#stablehlo<precision HIGHEST>, #stablehlo<precision HIGHEST>], rhs_dilation = %s, window_strides = %s}",
		bg, dn, fg, i64Array(ld), densePadding(pad), i64Array(rd), i64Array(strides))
	return b.op("stablehlo.convolution", T(lhs.T.Elem, shape...), attrs, lhs, rhs)
}

// kernelOutgrowsInput reports whether the dilated kernel is longer than the
// dilated input in some spatial dimension: the last stage of a ResNet on
// small images (a 3x3 kernel over a 2x2 or 1x1 map, padded by one). XLA's
// CPU compiler then leaves its library convolution for a generic loop, tens
// of times slower (a 512-channel 3x3 convolution of a 4x512x2x2 batch: 41 ms
// against 5.5 ms for the same convolution of the input padded beforehand);
// bench/results/conv_small_maps.md measures it.
func kernelOutgrowsInput(lhs, rhs *Value, d ConvDims, ld, rd []int64) bool {
	for i := range d.LhsSpatial {
		n, k := lhs.T.Shape[d.LhsSpatial[i]], rhs.T.Shape[d.RhsSpatial[i]]
		if n > 0 && (k-1)*rd[i]+1 > (n-1)*ld[i]+1 {
			return true
		}
	}
	return false
}

// cropIdleTaps drops the kernel taps that meet only padding at every output
// (a 3x3 kernel over a 1x1 map padded by one uses only its centre), so that
// the convolution is smaller and, with a 1x1 kernel left, no longer outgrows
// its input. It returns the kernel and the padding that give the same
// results; it leaves dimensions with strides or dilations alone.
func (b *Builder) cropIdleTaps(lhs, rhs *Value, d ConvDims, pad [][2]int64, strides, ld, rd []int64) (*Value, [][2]int64) {
	r := rhs.T.Rank()
	start, limit := make([]int64, r), slices.Clone(rhs.T.Shape)
	out := slices.Clone(pad)
	cropped := false
	for i := range d.LhsSpatial {
		n, k := lhs.T.Shape[d.LhsSpatial[i]], rhs.T.Shape[d.RhsSpatial[i]]
		lo, hi := pad[i][0], pad[i][1]
		windows := n + lo + hi - k + 1
		if strides[i] != 1 || ld[i] != 1 || rd[i] != 1 || n == 0 || windows <= 0 {
			continue
		}
		// Output o reads input o+j-lo through tap j: tap j meets data for
		// some output when lo-(windows-1) <= j <= lo+n-1.
		first, last := max(0, lo-(windows-1)), min(k-1, lo+n-1)
		if first > last || (first == 0 && last == k-1) {
			continue
		}
		start[d.RhsSpatial[i]], limit[d.RhsSpatial[i]] = first, last+1
		kk := last - first + 1
		out[i] = [2]int64{lo - first, windows - 1 + kk - n - (lo - first)}
		cropped = true
	}
	if !cropped {
		return rhs, pad
	}
	return b.Slice(rhs, start, limit, ones(r, nil)), out
}

// padForConvolution pads and dilates lhs's spatial dimensions as a
// convolution with padding pad and input dilation ld would, so that the
// convolution itself pads nothing: the same windows over the same values.
func (b *Builder) padForConvolution(lhs *Value, d ConvDims, pad [][2]int64, ld []int64) *Value {
	r := lhs.T.Rank()
	lo, hi, interior := make([]int64, r), make([]int64, r), make([]int64, r)
	for i, dim := range d.LhsSpatial {
		lo[dim], hi[dim], interior[dim] = pad[i][0], pad[i][1], ld[i]-1
	}
	return b.Pad(lhs, b.Scalar(lhs.T.Elem, 0), lo, hi, interior)
}

func allZero(p [][2]int64) bool {
	for _, lh := range p {
		if lh != [2]int64{} {
			return false
		}
	}
	return true
}

func allOne(xs []int64) bool {
	for _, x := range xs {
		if x != 1 {
			return false
		}
	}
	return true
}
