package compile_cache

import (
	"fmt"
	"path/filepath"
	"strings"

	"torchtpu/internal/bytesize"
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

// SizeFromEnv parses TORCHTPU_CACHE_SIZE (bytes, or with a K, M, G or T
// suffix), returning DefaultDirSize when it is unset.
func SizeFromEnv(s string) (int64, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultDirSize, nil
	}
	n, err := bytesize.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("TORCHTPU_CACHE_SIZE: %v", err)
	}
	return n, nil
}
