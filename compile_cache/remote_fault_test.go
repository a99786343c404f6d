package compile_cache

import (
	"crypto/sha256"
	"io/fs"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTiersRemoteEntryOfAnotherKeyIsRefusedThenRewritten(t *testing.T) {
	s, r := newCacheServer(t)
	require.NoError(t, r.Store("ka", []byte("program A")))
	require.NoError(t, r.Store("kb", []byte("program B")))
	s.entries["kb"] = s.entries["ka"] // the server hands out A's entry as B's

	d, _ := OpenDir(t.TempDir())
	var warnings []string
	tiers := &Tiers{Disk: d, Remote: r, Warn: func(m string) { warnings = append(warnings, m) }}
	data, from := tiers.Load("kb")
	require.Equal(t, Missed, from, "another key's entry is not used (got %q)", data)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "remote compile cache entry kb")
	assert.Contains(t, warnings[0], "is the program of key ka")
	_, err := d.Load("kb")
	assert.ErrorIs(t, err, fs.ErrNotExist, "a refused remote entry is not copied to disk")
	assert.False(t, r.Paused(), "a wrong entry says nothing about the server's health")

	tiers.Store("kb", []byte("program B")) // the recompile writes both tiers back
	d2, _ := OpenDir(t.TempDir())
	other := &Tiers{Disk: d2, Remote: r, Warn: tiers.Warn}
	data, from = other.Load("kb")
	assert.Equal(t, FromRemote, from)
	assert.Equal(t, "program B", string(data))
	assert.Len(t, warnings, 1, "no warning once rewritten")
}

func TestRemoteOldFormatEntryIsAQuietMiss(t *testing.T) {
	s, r := newCacheServer(t)
	sum := sha256.Sum256([]byte("old"))
	s.entries["k"] = append(append([]byte("torchtpu-exe-v1\n"), sum[:]...), "old"...)
	var warnings []string
	tiers := &Tiers{Remote: r, Warn: func(m string) { warnings = append(warnings, m) }}
	_, from := tiers.Load("k")
	assert.Equal(t, Missed, from)
	assert.Empty(t, warnings)
}

// silentServer accepts connections on loopback and never answers. It
// returns its URL and the count of connections it accepted.
func silentServer(t *testing.T) (string, *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var accepted atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c) // held open, never read or written
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String(), &accepted
}

func TestRemoteSilentServerIsBoundedByTheTimeoutsThenRests(t *testing.T) {
	url, accepted := silentServer(t)
	r, err := NewRemote(url)
	require.NoError(t, err)
	// The upload deadline is far longer than the answer wait: a silent server
	// costs an upload the answer wait, not the whole upload deadline.
	r.GetTimeout, r.AnswerTimeout, r.PutTimeout = 300*time.Millisecond, 300*time.Millisecond, 10*time.Second
	r.PauseFor = time.Hour

	t0 := time.Now()
	_, err = r.Load("k")
	took := time.Since(t0)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "GET")
	assert.Less(t, took, 2*time.Second, "a download gives up after its deadline")
	assert.GreaterOrEqual(t, took, 250*time.Millisecond)

	t0 = time.Now()
	err = r.Store("k", []byte("payload"))
	took = time.Since(t0)
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "no answer within 300ms")
	assert.Less(t, took, 2*time.Second, "an upload to a silent server gives up after the answer wait")

	_, err = r.Load("k")
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), "not trying again")
	require.True(t, r.Paused())

	t0 = time.Now()
	_, err = r.Load("k")
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, r.Store("k", []byte("x")), ErrUnavailable)
	assert.Less(t, time.Since(t0), 50*time.Millisecond, "a resting tier does not wait")
	assert.Equal(t, int64(3), accepted.Load(), "a resting tier does not touch the network")
}

func TestRemoteDefaultTimeouts(t *testing.T) {
	r, err := NewRemote("http://127.0.0.1:1")
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, r.GetTimeout)
	assert.Equal(t, 20*time.Second, r.PutTimeout)
	assert.Equal(t, 5*time.Second, r.AnswerTimeout)
	assert.Equal(t, 3, r.FailureLimit)
	assert.Equal(t, time.Minute, r.PauseFor)
}

func TestOpenTiersTimeoutSetting(t *testing.T) {
	t.Setenv("TORCHTPU_CACHE_TIMEOUT", "0.5")
	tiers := OpenTiers("", "http://127.0.0.1:1")
	require.NotNil(t, tiers)
	assert.Equal(t, 500*time.Millisecond, tiers.Remote.GetTimeout)
	assert.Equal(t, 500*time.Millisecond, tiers.Remote.AnswerTimeout)
	assert.Equal(t, 2*time.Second, tiers.Remote.PutTimeout)

	for _, bad := range []string{"soon", "0", "-1", "1e9"} {
		t.Setenv("TORCHTPU_CACHE_TIMEOUT", bad)
		tiers = OpenTiers("", "http://127.0.0.1:1")
		assert.Equal(t, DefaultGetTimeout, tiers.Remote.GetTimeout, "TORCHTPU_CACHE_TIMEOUT=%s keeps the default", bad)
	}
}
