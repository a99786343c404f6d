package engine

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memoryLimit returns the device memory limit: TORCHTPU_MEMORY_LIMIT (bytes,
// or with a K, M, G or T suffix), else three quarters of the host's memory,
// which is where the CPU plugin keeps its buffers.
func memoryLimit() int64 {
	if v := strings.TrimSpace(os.Getenv("TORCHTPU_MEMORY_LIMIT")); v != "" {
		mult := int64(1)
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
		if n, err := strconv.ParseFloat(v, 64); err == nil && n > 0 {
			return int64(n * float64(mult))
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil {
		return int64(si.Totalram) * int64(si.Unit) / 4 * 3
	}
	return 1 << 40
}
