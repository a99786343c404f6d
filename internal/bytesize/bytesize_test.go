package bytesize

import "testing"

func TestParse(t *testing.T) {
	for s, want := range map[string]int64{"1000": 1000, " 64K ": 64 << 10, "3m": 3 << 20, "2G": 2 << 30, "1.5G": 3 << 29, "1T": 1 << 40} {
		if got, err := Parse(s); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-5", "0", "G", "0.1"} {
		if n, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", s, n)
		}
	}
}
