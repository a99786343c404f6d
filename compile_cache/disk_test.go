package compile_cache

import (
	"errors"
	"os"
	"path/filepath"
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
	f := filepath.Join(d.path, "k.exe")
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
