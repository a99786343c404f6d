package compile_cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestDirFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TORCHTPU_CACHE_DIR": "/x", "XDG_CACHE_HOME": "/y", "HOME": "/h"}, "/x"},
		{map[string]string{"TORCHTPU_CACHE_DIR": "", "HOME": "/h"}, ""}, // set and empty: off
		{map[string]string{"XDG_CACHE_HOME": "/y", "HOME": "/h"}, "/y/torchtpu/programs"},
		{map[string]string{"XDG_CACHE_HOME": "", "HOME": "/h"}, "/h/.cache/torchtpu/programs"},
		{map[string]string{}, ""},
	}
	for _, c := range cases {
		if got := DirFromEnv(envOf(c.env)); got != c.want {
			t.Errorf("DirFromEnv(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}

func TestSizeFromEnv(t *testing.T) {
	for s, want := range map[string]int64{"": DefaultDirSize, "1000": 1000, "64K": 64 << 10, "3m": 3 << 20, "2G": 2 << 30, "1.5G": 3 << 29} {
		if got, err := SizeFromEnv(s); err != nil || got != want {
			t.Errorf("SizeFromEnv(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"x", "-5", "0", "G"} {
		if _, err := SizeFromEnv(s); err == nil {
			t.Errorf("SizeFromEnv(%q) accepted", s)
		}
	}
}

// TestDirEvictsLeastRecentlyUsed stores entries past the bound and checks that
// the oldest unused ones go while a recently loaded one stays.
func TestDirEvictsLeastRecentlyUsed(t *testing.T) {
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1000)
	key := func(i int) string { return filepath.Base(t.Name()) + string(rune('a'+i)) }
	old := time.Now().Add(-time.Hour)
	for i := 0; i < 4; i++ {
		if err := d.Store(key(i), payload); err != nil {
			t.Fatal(err)
		}
		ts := old.Add(time.Duration(i) * time.Minute)
		os.Chtimes(d.File(key(i)), ts, ts)
	}
	entry, _ := os.Stat(d.File(key(0)))
	d.SetLimit(4*entry.Size() + 10)           // room for four entries
	if _, err := d.Load(key(0)); err != nil { // key 0 becomes the most recently used
		t.Fatal(err)
	}
	if err := d.Store(key(4), payload); err != nil { // five entries: past the bound
		t.Fatal(err)
	}
	present := func(i int) bool { _, err := os.Stat(d.File(key(i))); return err == nil }
	if !present(0) || !present(4) {
		t.Errorf("evicted a recently used entry: 0 present %v, 4 present %v", present(0), present(4))
	}
	if present(1) || present(2) {
		t.Errorf("kept the least recently used entries: 1 present %v, 2 present %v", present(1), present(2))
	}
	var total int64
	ents, _ := os.ReadDir(d.path)
	for _, e := range ents {
		info, _ := e.Info()
		total += info.Size()
	}
	if total > d.limit {
		t.Errorf("entries take %d bytes, over the bound %d", total, d.limit)
	}
}
