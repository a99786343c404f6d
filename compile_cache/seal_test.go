package compile_cache

import (
	"crypto/sha256"
	"errors"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSealBindsTheEntryToItsKey(t *testing.T) {
	entry, err := seal("ka", []byte("program A"))
	require.NoError(t, err)
	got, err := unseal("ka", entry)
	require.NoError(t, err)
	assert.Equal(t, "program A", string(got))

	_, err = unseal("kb", entry)
	require.ErrorIs(t, err, ErrWrongKey, "an intact entry of another key")
	var wrong *WrongKeyError
	require.True(t, errors.As(err, &wrong))
	assert.Equal(t, WrongKeyError{Want: "kb", Got: "ka"}, *wrong)
	assert.NotErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, fs.ErrNotExist)

	// The layout, byte by byte: magic, key line, SHA-256(key \n payload), payload.
	sum := sha256.Sum256([]byte("ka\nprogram A"))
	want := append([]byte("torchtpu-exe-v2\nka\n"), sum[:]...)
	assert.Equal(t, append(want, "program A"...), entry)
}

func TestSealRewrittenKeyLineIsCorrupt(t *testing.T) {
	// Renaming the key in the header without resealing breaks the digest.
	entry, _ := seal("ka", []byte("program A"))
	entry[len(magic)+1] = 'b'
	_, err := unseal("kb", entry)
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestSealEveryTruncationIsCorrupt(t *testing.T) {
	entry, _ := seal("k", []byte("0123456789"))
	for n := 0; n < len(entry); n++ {
		_, err := unseal("k", entry[:n])
		require.ErrorIs(t, err, ErrCorrupt, "cut to %d bytes", n)
	}
	for i := range entry {
		damaged := append([]byte{}, entry...)
		damaged[i] ^= 0x20
		_, err := unseal("k", damaged)
		require.Error(t, err, "byte %d flipped", i)
		require.NotErrorIs(t, err, ErrWrongKey, "byte %d flipped", i)
	}
}

func TestOldFramingReadsAsAMiss(t *testing.T) {
	// The previous framing: magic v1, SHA-256 of the payload alone, payload.
	sum := sha256.Sum256([]byte("payload"))
	old := append(append([]byte("torchtpu-exe-v1\n"), sum[:]...), "payload"...)
	_, err := unseal("k", old)
	require.ErrorIs(t, err, fs.ErrNotExist, "an old entry is a miss")
	assert.NotErrorIs(t, err, ErrCorrupt)
	var oldFormat *OldFormatError
	require.True(t, errors.As(err, &oldFormat))
	assert.Equal(t, "torchtpu-exe-v1", oldFormat.Header)
}

func TestKeysThatCannotNameAnEntryAreRefused(t *testing.T) {
	for _, k := range []string{"", "a/b", "../x", "a\nb", "a b", string(make([]byte, maxKeyLen+1))} {
		_, err := seal(k, []byte("x"))
		assert.Error(t, err, "key %q", k)
	}
	assert.NoError(t, checkKey(Key(Part{"module", "x"})), "a Key() result")
}
