package compile_cache

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// DefaultDirSize is the size bound of the on-disk tier when TORCHTPU_CACHE_SIZE is unset.
const DefaultDirSize = 4 << 30

// DirFromEnv returns the on-disk tier's folder: TORCHTPU_CACHE_DIR when it is
// set (set and empty turns the tier off), else torchtpu/programs under
// XDG_CACHE_HOME or ~/.cache, the convention PyTorch's own caches follow, so
// every process after the first finds the programs it compiled.
func DirFromEnv(getenv func(string) (string, bool)) string {
	if dir, ok := getenv("TORCHTPU_CACHE_DIR"); ok {
		return dir
	}
	if base, ok := getenv("XDG_CACHE_HOME"); ok && base != "" {
		return filepath.Join(base, "torchtpu", "programs")
	}
	if home, ok := getenv("HOME"); ok && home != "" {
		return filepath.Join(home, ".cache", "torchtpu", "programs")
	}
	return ""
}

// SizeFromEnv parses TORCHTPU_CACHE_SIZE (bytes, or with a K, M or G suffix),
// returning DefaultDirSize when it is unset.
func SizeFromEnv(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultDirSize, nil
	}
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("TORCHTPU_CACHE_SIZE=%q is not a positive byte count (a K, M or G suffix is allowed)", s)
	}
	return n * mult, nil
}
