package engine

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileFingerprintIgnoresPathAndTime(t *testing.T) {
	for _, size := range []int{10, 3 * fingerprintSpan} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		a := filepath.Join(t.TempDir(), "a.so")
		b := filepath.Join(t.TempDir(), "other-name.so")
		require.NoError(t, os.WriteFile(a, data, 0o644))
		require.NoError(t, os.WriteFile(b, data, 0o644))
		require.NoError(t, os.Chtimes(b, time.Unix(1, 0), time.Unix(1, 0)))
		assert.Equal(t, fileFingerprint(a), fileFingerprint(b), "same bytes, another path and time (size %d)", size)

		data[size-1] ^= 1 // a change in the last bytes
		require.NoError(t, os.WriteFile(b, data, 0o644))
		assert.NotEqual(t, fileFingerprint(a), fileFingerprint(b), "last byte changed (size %d)", size)
		data[size-1] ^= 1
		data[0] ^= 1 // a change in the first bytes
		require.NoError(t, os.WriteFile(b, data, 0o644))
		assert.NotEqual(t, fileFingerprint(a), fileFingerprint(b), "first byte changed (size %d)", size)
	}
	assert.Equal(t, "?", fileFingerprint(filepath.Join(t.TempDir(), "missing.so")))
}
