// Package compile_cache keys compiled programs by named parts and keeps them
// in three tiers: loaded executables in an in-memory LRU, serialized ones in
// a directory (Dir) and on an HTTP cache server shared by hosts (Remote);
// Tiers chains the last two.
package compile_cache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sort"
)

// Part is one named input of a cache key.
type Part struct {
	Name  string
	Value string
}

// Key is the hex SHA-256 over parts. Parts are sorted by name and each is
// length-prefixed, so no two different part lists give the same bytes.
func Key(parts ...Part) string {
	sorted := append([]Part{}, parts...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	h := sha256.New()
	for _, p := range sorted {
		fmt.Fprintf(h, "%d:%s%d:", len(p.Name), p.Name, len(p.Value))
		io.WriteString(h, p.Value)
		if slog.Default().Enabled(nil, slog.LevelDebug) {
			slog.Debug("compile_cache key part", "name", p.Name, "bytes", len(p.Value))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
