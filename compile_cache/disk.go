package compile_cache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Dir is the on-disk tier: one file per key holding a serialized executable
// behind its SHA-256. Writes go to a temporary file renamed into place, so
// several processes (or hosts on a shared filesystem) may use one directory
// at once. The directory is trusted input: whoever can write it can make the
// process load any executable.
type Dir struct{ path string }

// magic starts every entry; a file without it is not an entry.
var magic = []byte("torchtpu-exe-v1\n")

// OpenDir returns the tier at path, creating the directory if needed.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("compile cache directory %q: %w", path, err)
	}
	return &Dir{path: path}, nil
}

func (d *Dir) file(key string) string { return filepath.Join(d.path, key+".exe") }

// ErrCorrupt reports an entry whose checksum or header does not match.
var ErrCorrupt = errors.New("corrupt compile cache entry")

// Load returns the payload stored under key. A missing entry gives
// os.ErrNotExist; a damaged one ErrCorrupt.
func (d *Dir) Load(key string) ([]byte, error) {
	raw, err := os.ReadFile(d.file(key))
	if err != nil {
		return nil, err
	}
	return unseal(raw)
}

// seal frames payload as an entry: the magic line, the payload's SHA-256,
// then the payload. Both tiers, on disk and remote, store entries in this form.
func seal(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	return append(append(append(make([]byte, 0, len(magic)+len(sum)+len(payload)), magic...), sum[:]...), payload...)
}

// unseal returns the payload of a sealed entry, or ErrCorrupt when the header
// or checksum does not match (a damaged or truncated entry).
func unseal(raw []byte) ([]byte, error) {
	if len(raw) < len(magic)+sha256.Size || !bytes.Equal(raw[:len(magic)], magic) {
		return nil, ErrCorrupt
	}
	sum := raw[len(magic) : len(magic)+sha256.Size]
	payload := raw[len(magic)+sha256.Size:]
	if got := sha256.Sum256(payload); !bytes.Equal(got[:], sum) {
		return nil, ErrCorrupt
	}
	return payload, nil
}

// Store writes payload under key atomically.
func (d *Dir) Store(key string, payload []byte) error {
	tmp, err := os.CreateTemp(d.path, key+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(seal(payload))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), d.file(key))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
