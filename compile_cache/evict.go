package compile_cache

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// touch marks key's entry as used now, so eviction keeps recently used programs.
func (d *Dir) touch(key string) {
	now := time.Now()
	_ = os.Chtimes(d.File(key), now, now)
}

// evict deletes the least recently used entries (by modification time, which
// a load refreshes) until the folder's entries take at most 90% of the size
// bound. Several processes may evict at once: removing an entry another
// process reads is safe (its open file stays readable), and a removed entry
// is only a miss later.
func (d *Dir) evict() {
	if d.limit <= 0 {
		return
	}
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return
	}
	type entry struct {
		path string
		size int64
		used time.Time
	}
	var all []entry
	var total int64
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".exe") {
			continue
		}
		info, err := de.Info()
		if err != nil {
			continue
		}
		all = append(all, entry{filepath.Join(d.path, de.Name()), info.Size(), info.ModTime()})
		total += info.Size()
	}
	if total <= d.limit {
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for _, e := range all {
		if total <= d.limit/10*9 {
			break
		}
		if os.Remove(e.path) == nil {
			total -= e.size
		}
	}
}
