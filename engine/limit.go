package engine

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"torchtpu/internal/bytesize"
)

// memoryLimit returns the device memory limit: TORCHTPU_MEMORY_LIMIT (bytes,
// or with a K, M, G or T suffix), else three quarters of the host's memory,
// which is where the CPU plugin keeps its buffers.
func memoryLimit() int64 {
	if v := strings.TrimSpace(os.Getenv("TORCHTPU_MEMORY_LIMIT")); v != "" {
		if n, err := bytesize.Parse(v); err == nil {
			return n
		}
	}
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err == nil {
		return int64(si.Totalram) * int64(si.Unit) / 4 * 3
	}
	return 1 << 40
}
