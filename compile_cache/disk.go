package compile_cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is the on-disk tier: one file per key holding a serialized executable
// sealed to its key (seal.go). Writes go to a temporary file renamed into
// place, so several processes (or hosts on a shared filesystem) may use one
// directory at once. The directory is trusted input: whoever can write it
// can make the process load any executable.
type Dir struct {
	path string
	// limit bounds the bytes of the folder's entries: a store past it evicts
	// the least recently used ones (0: no bound).
	limit int64
}

// OpenDir returns the tier at path, creating the directory if needed.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("compile cache directory %q: %w", path, err)
	}
	return &Dir{path: path}, nil
}

// File returns the path of key's entry.
func (d *Dir) File(key string) string { return filepath.Join(d.path, key+".exe") }

// Load returns the payload stored under key. A missing entry, or one in an
// older framing, gives an error matching os.ErrNotExist; a damaged one
// ErrCorrupt; an intact entry of another key a *WrongKeyError.
func (d *Dir) Load(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(d.File(key))
	if err != nil {
		return nil, err
	}
	payload, err := unseal(key, raw)
	if err == nil && d.limit > 0 {
		d.touch(key)
	}
	return payload, err
}

// Remove deletes key's entry; an entry already gone is not an error.
func (d *Dir) Remove(key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := os.Remove(d.File(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Store writes payload under key atomically.
func (d *Dir) Store(key string, payload []byte) error {
	entry, err := seal(key, payload)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(d.path, key+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(entry)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.File(key))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	d.evict()
	return nil
}

// SetLimit bounds the bytes the folder's entries may take (0: no bound).
func (d *Dir) SetLimit(n int64) { d.limit = n }
