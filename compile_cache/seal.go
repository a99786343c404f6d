package compile_cache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
)

// An entry, on disk and on the server alike, is sealed to its key:
//
//	torchtpu-exe-v2\n
//	KEY\n
//	SHA-256(KEY \n PAYLOAD)   32 bytes
//	PAYLOAD
//
// The digest covers the key as well as the payload, so an intact entry found
// under another key's name (a copied file, a confused server) does not pass
// for that key's program. Keys never hold a newline, so key and payload
// cannot trade bytes.
var magic = []byte("torchtpu-exe-v2\n")

// family starts every framing this project has written; an entry with it
// but another version line is from an older (or newer) framing.
var family = []byte("torchtpu-exe-")

// maxKeyLen bounds the key in a header, so a damaged entry is never scanned
// far for the end of its key line.
const maxKeyLen = 128

// ErrCorrupt reports an entry whose header or checksum does not match: a
// damaged or truncated entry.
var ErrCorrupt = errors.New("corrupt compile cache entry")

// ErrWrongKey reports an intact entry sealed for another key than the one it
// was looked up under. Errors returned for it are *WrongKeyError.
var ErrWrongKey = errors.New("compile cache entry belongs to another key")

// WrongKeyError names the key an entry was looked up under and the key it
// was sealed for.
type WrongKeyError struct {
	Want, Got string
}

func (e *WrongKeyError) Error() string {
	return fmt.Sprintf("the entry stored as %s is the program of key %s", e.Want, e.Got)
}

// Is makes errors.Is(err, ErrWrongKey) hold.
func (e *WrongKeyError) Is(target error) bool { return target == ErrWrongKey }

// OldFormatError reports an entry written in another framing version. It
// reads as a miss: errors.Is(err, fs.ErrNotExist) holds, and the next store
// of the key replaces it.
type OldFormatError struct{ Header string }

func (e *OldFormatError) Error() string {
	return fmt.Sprintf("compile cache entry in another format (%q)", e.Header)
}

// Is makes errors.Is(err, fs.ErrNotExist) hold.
func (e *OldFormatError) Is(target error) bool { return target == fs.ErrNotExist }

// checkKey reports whether key can name an entry: a file name on disk and a
// path segment on the server, with no newline to end a header line early.
func checkKey(key string) error {
	if key == "" || len(key) > maxKeyLen {
		return fmt.Errorf("compile cache key %q: want 1 to %d characters", key, maxKeyLen)
	}
	for _, c := range []byte(key) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_') {
			return fmt.Errorf("compile cache key %q: only letters, digits, '-' and '_' may name an entry", key)
		}
	}
	return nil
}

// digest is the seal's checksum: SHA-256 over the key, a newline, the payload.
func digest(key string, payload []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{'\n'})
	h.Write(payload)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// seal frames payload as the entry of key.
func seal(key string, payload []byte) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	sum := digest(key, payload)
	out := make([]byte, 0, len(magic)+len(key)+1+len(sum)+len(payload))
	out = append(out, magic...)
	out = append(out, key...)
	out = append(out, '\n')
	out = append(out, sum[:]...)
	return append(out, payload...), nil
}

// unseal returns the payload of raw, the entry found under key. An entry
// sealed for another key gives a *WrongKeyError, one from another framing
// version an *OldFormatError (a miss), and a damaged or truncated one an
// error wrapping ErrCorrupt.
func unseal(key string, raw []byte) ([]byte, error) {
	if !bytes.HasPrefix(raw, magic) {
		if bytes.HasPrefix(raw, family) {
			if line, _, whole := bytes.Cut(raw[:min(len(raw), len(family)+16)], []byte{'\n'}); whole {
				return nil, &OldFormatError{Header: string(line)}
			}
		}
		return nil, fmt.Errorf("%w: no entry header", ErrCorrupt)
	}
	rest := raw[len(magic):]
	end := bytes.IndexByte(rest[:min(len(rest), maxKeyLen+1)], '\n')
	if end < 1 {
		return nil, fmt.Errorf("%w: no key line", ErrCorrupt)
	}
	sealedFor := string(rest[:end])
	rest = rest[end+1:]
	if len(rest) < sha256.Size {
		return nil, fmt.Errorf("%w: cut short in the header", ErrCorrupt)
	}
	sum, payload := rest[:sha256.Size], rest[sha256.Size:]
	if want := digest(sealedFor, payload); !bytes.Equal(want[:], sum) {
		return nil, fmt.Errorf("%w: checksum mismatch over %d payload bytes", ErrCorrupt, len(payload))
	}
	if sealedFor != key {
		return nil, &WrongKeyError{Want: key, Got: sealedFor}
	}
	return payload, nil
}
