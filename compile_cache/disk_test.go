package compile_cache

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestDirRoundTripAndCorruption(t *testing.T) {
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load("absent"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing entry: %v", err)
	}
	if err := d.Store("k", []byte("payload")); err != nil {
		t.Fatal(err)
	}
	got, err := d.Load("k")
	if err != nil || string(got) != "payload" {
		t.Fatalf("Load = %q, %v", got, err)
	}
	// Flip one payload byte: the entry must read as corrupt, not as data.
	f := d.File("k")
	raw, _ := os.ReadFile(f)
	raw[len(raw)-1] ^= 1
	os.WriteFile(f, raw, 0o644)
	if _, err := d.Load("k"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt entry: %v", err)
	}
	os.WriteFile(f, []byte("short"), 0o644)
	if _, err := d.Load("k"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated entry: %v", err)
	}
}

func TestDirConcurrentWriters(t *testing.T) {
	d, _ := OpenDir(t.TempDir())
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if err := d.Store("same", []byte("the same payload")); err != nil {
					t.Error(err)
				}
				if got, err := d.Load("same"); err != nil || string(got) != "the same payload" {
					t.Errorf("Load = %q, %v", got, err)
				}
			}
		}()
	}
	wg.Wait()
	left, _ := filepath.Glob(filepath.Join(d.path, "*.tmp-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// swapFiles exchanges the contents of two files.
func swapFiles(t *testing.T, a, b string) {
	t.Helper()
	ra, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(a, rb, 0o644)
	os.WriteFile(b, ra, 0o644)
}

func TestTiersSwappedDiskEntriesRecompileWithWarning(t *testing.T) {
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	tiers := &Tiers{Disk: d, Warn: func(m string) { warnings = append(warnings, m) }}
	programs := map[string]string{"ka": "program A", "kb": "program B"}
	for k, p := range programs {
		tiers.Store(k, []byte(p))
	}
	swapFiles(t, d.File("ka"), d.File("kb"))

	for _, k := range []string{"ka", "kb"} {
		if data, from := tiers.Load(k); from != Missed {
			t.Fatalf("%s: swapped entry used: %q from %v", k, data, from)
		}
		if len(warnings) != 1 {
			t.Fatalf("%s: warnings = %q, want one", k, warnings)
		}
		w := warnings[0]
		warnings = nil
		for _, want := range []string{"on-disk", d.File(k), "is the program of key", "deleted"} {
			if !strings.Contains(w, want) {
				t.Errorf("%s: warning %q does not say %q", k, w, want)
			}
		}
		if _, err := os.Stat(d.File(k)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the wrong entry was not deleted (%v)", k, err)
		}
		tiers.Store(k, []byte(programs[k])) // what the recompile does
	}
	for k, p := range programs {
		data, from := tiers.Load(k)
		if from != FromDisk || string(data) != p {
			t.Errorf("%s after recompiling: %q from %v, want %q from disk", k, data, from, p)
		}
	}
	if len(warnings) != 0 {
		t.Errorf("warnings after the rewrite: %q", warnings)
	}
}

func TestTiersOldFormatDiskEntryIsAQuietMiss(t *testing.T) {
	d, _ := OpenDir(t.TempDir())
	sum := sha256.Sum256([]byte("old program"))
	os.WriteFile(d.File("k"), append(append([]byte("torchtpu-exe-v1\n"), sum[:]...), "old program"...), 0o644)
	var warnings []string
	tiers := &Tiers{Disk: d, Warn: func(m string) { warnings = append(warnings, m) }}
	if data, from := tiers.Load("k"); from != Missed {
		t.Fatalf("old entry used: %q from %v", data, from)
	}
	if len(warnings) != 0 {
		t.Fatalf("an old entry warned: %q", warnings)
	}
	tiers.Store("k", []byte("new program"))
	if data, from := tiers.Load("k"); from != FromDisk || string(data) != "new program" {
		t.Fatalf("after the rewrite: %q from %v", data, from)
	}
}
