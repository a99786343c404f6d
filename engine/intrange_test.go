package engine

import (
	"encoding/binary"
	"testing"

	"torchtpu/dispatch"
)

func TestHostIntRange(t *testing.T) {
	i64 := make([]byte, 0, 32)
	for _, v := range []int64{5, -3, 9, 0} {
		i64 = binary.LittleEndian.AppendUint64(i64, uint64(v))
	}
	if r := hostIntRange(i64, dispatch.Int64); r == nil || r.lo != -3 || r.hi != 9 {
		t.Fatalf("int64 range = %+v, want [-3, 9]", r)
	}
	i32 := make([]byte, 0, 12)
	for _, v := range []int32{7, 2, -8} {
		i32 = binary.LittleEndian.AppendUint32(i32, uint32(v))
	}
	if r := hostIntRange(i32, dispatch.Int32); r == nil || r.lo != -8 || r.hi != 7 {
		t.Fatalf("int32 range = %+v, want [-8, 7]", r)
	}
	for _, c := range []struct {
		bytes  []byte
		lo, hi int64
	}{{[]byte{1, 1, 1}, 1, 1}, {[]byte{0}, 0, 0}, {[]byte{0, 1, 0}, 0, 1}} {
		if r := hostIntRange(c.bytes, dispatch.Bool); r == nil || r.lo != c.lo || r.hi != c.hi {
			t.Fatalf("bool range of %v = %+v, want [%d, %d]", c.bytes, r, c.lo, c.hi)
		}
	}
	if r := hostIntRange(i64, dispatch.Float64); r != nil {
		t.Fatalf("float64 data has no index range, got %+v", r)
	}
	if r := hostIntRange(nil, dispatch.Int64); r != nil {
		t.Fatalf("empty data has no range, got %+v", r)
	}
}
