// Package bytesize parses the byte counts torchtpu's settings take
// (TORCHTPU_MEMORY_LIMIT, TORCHTPU_CACHE_SIZE): a number of bytes, or with a
// K, M, G or T suffix (powers of 1024; a fraction such as 1.5G is allowed).
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse returns the positive byte count s names.
func Parse(s string) (int64, error) {
	v := strings.TrimSpace(s)
	if v == "" {
		return 0, fmt.Errorf("%q is not a byte count", s)
	}
	mult := 1.0
	switch strings.ToUpper(v[len(v)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	case "T":
		mult = 1 << 40
	}
	if mult != 1 {
		v = v[:len(v)-1]
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || !(n*mult >= 1) {
		return 0, fmt.Errorf("%q is not a positive byte count (a K, M, G or T suffix is allowed)", s)
	}
	return int64(n * mult), nil
}
