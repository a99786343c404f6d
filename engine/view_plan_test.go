package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// viewPlans lists how views resolve onto their storage's base value: a
// strided slice (start, limit, step per base dimension) plus the base
// dimension each view dimension walks (-1: broadcast or size 1), or no slice
// at all, when the engine gathers element by element.
var viewPlans = []struct {
	name  string
	base  []int64
	v     view
	slice bool
	start []int64
	limit []int64
	step  []int64
	dims  []int
}{
	{"whole matrix", []int64{3, 4}, view{0, []int64{3, 4}, []int64{4, 1}}, true,
		[]int64{0, 0}, []int64{3, 4}, []int64{1, 1}, []int{0, 1}},
	{"transpose", []int64{3, 4}, view{0, []int64{4, 3}, []int64{1, 4}}, true,
		[]int64{0, 0}, []int64{3, 4}, []int64{1, 1}, []int{1, 0}},
	{"rows 1..2", []int64{3, 4}, view{4, []int64{2, 4}, []int64{4, 1}}, true,
		[]int64{1, 0}, []int64{3, 4}, []int64{1, 1}, []int{0, 1}},
	{"every other column from (1, 1)", []int64{3, 4}, view{5, []int64{2, 2}, []int64{4, 2}}, true,
		[]int64{1, 1}, []int64{3, 4}, []int64{1, 2}, []int{0, 1}},
	{"select column 2", []int64{3, 4}, view{2, []int64{3}, []int64{4}}, true,
		[]int64{0, 2}, []int64{3, 3}, []int64{1, 1}, []int{0}},
	{"expand a row", []int64{3, 4}, view{4, []int64{5, 4}, []int64{0, 1}}, true,
		[]int64{1, 0}, []int64{2, 4}, []int64{1, 1}, []int{-1, 1}},
	{"size-1 dimension with any stride", []int64{3, 4}, view{0, []int64{1, 4}, []int64{99, 1}}, true,
		[]int64{0, 0}, []int64{1, 4}, []int64{1, 1}, []int{-1, 1}},
	{"transposed slice of a 3-d base", []int64{2, 3, 4}, view{1, []int64{3, 2, 2}, []int64{4, 12, 2}}, true,
		[]int64{0, 0, 1}, []int64{2, 3, 4}, []int64{1, 1, 2}, []int{1, 0, 2}},
	{"reshape across rows", []int64{3, 4}, view{0, []int64{2, 6}, []int64{6, 1}}, false, nil, nil, nil, nil},
	{"overlapping windows", []int64{3, 4}, view{1, []int64{3, 3}, []int64{2, 1}}, false, nil, nil, nil, nil},
	{"flat window crossing rows", []int64{3, 4}, view{3, []int64{5}, []int64{1}}, false, nil, nil, nil, nil},
	{"negative stride", []int64{4}, view{3, []int64{4}, []int64{-1}}, false, nil, nil, nil, nil},
	{"past the end", []int64{3, 4}, view{8, []int64{2, 4}, []int64{4, 1}}, false, nil, nil, nil, nil},
	{"empty view", []int64{3, 4}, view{0, []int64{0, 4}, []int64{4, 1}}, false, nil, nil, nil, nil},
}

func TestPlanSliceTable(t *testing.T) {
	for _, c := range viewPlans {
		t.Run(c.name, func(t *testing.T) {
			p, ok := planSlice(c.base, c.v)
			require.Equal(t, c.slice, ok, "a strided slice of base %v for view %+v", c.base, c.v)
			if !ok {
				return
			}
			assert.Equal(t, c.start, p.start, "start")
			assert.Equal(t, c.limit, p.limit, "limit")
			assert.Equal(t, c.step, p.step, "step")
			assert.Equal(t, c.dims, p.dims, "base dimension of each view dimension")
		})
	}
}

func TestContiguity(t *testing.T) {
	cases := []struct {
		v          view
		base       []int64
		contiguous bool
		covers     bool
	}{
		{view{0, []int64{3, 4}, []int64{4, 1}}, []int64{3, 4}, true, true},
		{view{0, []int64{12}, []int64{1}}, []int64{3, 4}, true, true},
		{view{4, []int64{2, 4}, []int64{4, 1}}, []int64{3, 4}, true, false},
		{view{0, []int64{4, 3}, []int64{1, 4}}, []int64{3, 4}, false, false},
		{view{0, []int64{3, 1}, []int64{1, 7}}, []int64{3}, true, true},
	}
	for _, c := range cases {
		assert.Equal(t, c.contiguous, c.v.isContiguous(), "isContiguous(%+v)", c.v)
		assert.Equal(t, c.covers, c.v.coversBase(c.base), "coversBase(%+v, %v)", c.v, c.base)
	}
}

// TestMayOverlap checks the overlap test on views whose answers are known by
// hand: slices and transposes are disjoint; unfold, broadcasts and
// as_strided windows share elements.
func TestMayOverlap(t *testing.T) {
	cases := []struct {
		v    view
		want bool
	}{
		{view{0, []int64{4, 2}, []int64{2, 1}}, false},      // contiguous
		{view{0, []int64{2, 4}, []int64{1, 2}}, false},      // transpose
		{view{1, []int64{2, 2}, []int64{4, 2}}, false},      // strided slice
		{view{0, []int64{3, 2, 2}, []int64{2, 1, 2}}, true}, // unfold(0, 2, 1) of a 4x2
		{view{0, []int64{3, 4}, []int64{0, 1}}, true},       // expand
		{view{0, []int64{1, 4}, []int64{0, 1}}, false},      // size-1 broadcast
		{view{0, []int64{3, 3}, []int64{1, 1}}, true},       // sliding window
		{view{0, []int64{2, 3}, []int64{3, 1}}, false},      // rows that just touch
		{view{0, []int64{2, 3}, []int64{2, 1}}, true},       // rows that share an element
	}
	for _, c := range cases {
		if got := mayOverlap(c.v); got != c.want {
			t.Errorf("mayOverlap(%v) = %v, want %v", c.v, got, c.want)
		}
	}
}
