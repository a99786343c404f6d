package compile_cache

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cacheServer is an in-memory HTTP cache speaking GET/PUT under /ac/.
type cacheServer struct {
	mu      sync.Mutex
	entries map[string][]byte
	gets    atomic.Int64
	puts    atomic.Int64
}

func (s *cacheServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := strings.CutPrefix(r.URL.Path, "/ac/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		s.gets.Add(1)
		data, ok := s.entries[key]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	case http.MethodPut:
		s.puts.Add(1)
		data, _ := io.ReadAll(r.Body)
		s.entries[key] = data
		w.WriteHeader(http.StatusCreated)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func newCacheServer(t *testing.T) (*cacheServer, *Remote) {
	s := &cacheServer{entries: map[string][]byte{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	r, err := NewRemote(srv.URL + "/")
	require.NoError(t, err)
	return s, r
}

func TestRemoteRoundTripUsesActionCachePathAndSealedEntries(t *testing.T) {
	s, r := newCacheServer(t)
	_, err := r.Load("k1")
	require.ErrorIs(t, err, fs.ErrNotExist, "an absent entry is a plain miss")

	require.NoError(t, r.Store("k1", []byte("program bytes")))
	got, err := r.Load("k1")
	require.NoError(t, err)
	assert.Equal(t, "program bytes", string(got))

	// The server holds the same framing as the disk tier.
	raw := s.entries["k1"]
	want, err := seal("k1", []byte("program bytes"))
	require.NoError(t, err)
	require.Equal(t, want, raw, "remote entries are sealed like disk entries")
	payload, err := unseal("k1", raw)
	require.NoError(t, err)
	assert.Equal(t, "program bytes", string(payload))
}

func TestRemoteCorruptAndTruncatedEntriesAreCorrupt(t *testing.T) {
	s, r := newCacheServer(t)
	require.NoError(t, r.Store("k", []byte("0123456789")))

	flipped := append([]byte{}, s.entries["k"]...)
	flipped[len(flipped)-1] ^= 1
	s.entries["k"] = flipped
	_, err := r.Load("k")
	assert.ErrorIs(t, err, ErrCorrupt, "a flipped payload byte")

	whole, _ := seal("k", []byte("0123456789"))
	s.entries["k"] = whole[:len(whole)-3]
	_, err = r.Load("k")
	assert.ErrorIs(t, err, ErrCorrupt, "an entry missing its last bytes")

	s.entries["k"] = whole[:20]
	_, err = r.Load("k")
	assert.ErrorIs(t, err, ErrCorrupt, "an entry cut short")

	s.entries["k"] = []byte("<html>not an entry</html>")
	_, err = r.Load("k")
	assert.ErrorIs(t, err, ErrCorrupt, "a body without the entry header")
	assert.False(t, r.Paused(), "corrupt entries say nothing about the server's health")
}

func TestRemoteTruncatedTransferIsCorrupt(t *testing.T) {
	entry, _ := seal("k", []byte("a payload long enough to cut"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Promise the whole entry, send half, then drop the connection.
		w.Header().Set("Content-Length", "1000")
		w.Write(entry[:len(entry)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	r, err := NewRemote(srv.URL)
	require.NoError(t, err)
	_, err = r.Load("k")
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestRemoteServerErrorsPauseTheTier(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	defer srv.Close()
	r, err := NewRemote(srv.URL)
	require.NoError(t, err)
	r.FailureLimit, r.PauseFor = 3, time.Hour

	for i := 0; i < 3; i++ {
		_, err := r.Load("k")
		require.ErrorIs(t, err, ErrUnavailable, "failure %d", i)
		assert.Contains(t, err.Error(), "500")
	}
	require.True(t, r.Paused(), "three failures in a row pause the tier")
	_, err = r.Load("k")
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, r.Store("k", []byte("x")), ErrUnavailable)
	assert.Equal(t, int64(3), calls.Load(), "a paused tier does not touch the network")
}

func TestRemoteSuccessResetsTheFailureCount(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	r, _ := NewRemote(srv.URL)
	r.FailureLimit = 2
	for i := 0; i < 3; i++ {
		fail.Store(true)
		_, err := r.Load("k")
		require.ErrorIs(t, err, ErrUnavailable)
		fail.Store(false)
		_, err = r.Load("k")
		require.ErrorIs(t, err, fs.ErrNotExist)
	}
	assert.False(t, r.Paused(), "failures separated by successes do not pause")
}

func TestRemoteSlowServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	r, _ := NewRemote(srv.URL)
	r.GetTimeout, r.PutTimeout = 50*time.Millisecond, 50*time.Millisecond
	_, err := r.Load("k")
	require.ErrorIs(t, err, ErrUnavailable)
	require.ErrorIs(t, r.Store("k", []byte("x")), ErrUnavailable)
}

func TestRemoteUnreachableServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	r, err := NewRemote(url)
	require.NoError(t, err)
	_, err = r.Load("k")
	require.ErrorIs(t, err, ErrUnavailable)
}

func TestNewRemoteRejectsNonHTTPURLs(t *testing.T) {
	for _, u := range []string{"", "ftp://host/x", "/just/a/path", "http://"} {
		_, err := NewRemote(u)
		assert.Error(t, err, "URL %q", u)
	}
}

func TestTiersRemoteHitFillsDiskAndCompileUploads(t *testing.T) {
	s, r := newCacheServer(t)
	d, err := OpenDir(t.TempDir())
	require.NoError(t, err)
	var warnings []string
	tiers := &Tiers{Disk: d, Remote: r, Warn: func(m string) { warnings = append(warnings, m) }}

	_, from := tiers.Load("k")
	require.Equal(t, Missed, from)
	tiers.Store("k", []byte("exe")) // what a compile does
	assert.Contains(t, s.entries, "k", "a compile uploads")

	// A second host: empty disk, same server.
	d2, _ := OpenDir(t.TempDir())
	other := &Tiers{Disk: d2, Remote: r, Warn: tiers.Warn}
	data, from := other.Load("k")
	require.Equal(t, FromRemote, from)
	assert.Equal(t, "exe", string(data))
	onDisk, err := d2.Load("k")
	require.NoError(t, err, "a remote hit is written to disk")
	assert.Equal(t, "exe", string(onDisk))
	gets := s.gets.Load()
	_, from = other.Load("k")
	assert.Equal(t, FromDisk, from)
	assert.Equal(t, gets, s.gets.Load(), "a disk hit does not ask the server")
	assert.Empty(t, warnings)
}

func TestTiersCorruptRemoteEntryIsAMissWithWarning(t *testing.T) {
	s, r := newCacheServer(t)
	s.entries["k"] = []byte("torchtpu-exe-v2\nk\ntruncated")
	d, _ := OpenDir(t.TempDir())
	var warnings []string
	tiers := &Tiers{Disk: d, Remote: r, Warn: func(m string) { warnings = append(warnings, m) }}
	_, from := tiers.Load("k")
	require.Equal(t, Missed, from)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "corrupt")
	_, err := d.Load("k")
	assert.ErrorIs(t, err, fs.ErrNotExist, "a corrupt remote entry is not copied to disk")
}

func TestOpenTiersBothOffIsNil(t *testing.T) {
	assert.Nil(t, OpenTiers("", ""))
	var none *Tiers
	_, from := none.Load("k")
	assert.Equal(t, Missed, from)
	none.Store("k", []byte("x")) // no tiers: nothing to do, no panic
}

func TestTiersLookupSaysWhichTiersItAsked(t *testing.T) {
	_, r := newCacheServer(t)
	d, err := OpenDir(t.TempDir())
	require.NoError(t, err)
	tiers := &Tiers{Disk: d, Remote: r, Warn: func(string) {}}

	_, from, asked := tiers.Lookup("k")
	assert.Equal(t, Missed, from)
	assert.Equal(t, Asked{Disk: true, Remote: true}, asked, "a miss asks both tiers")
	tiers.Store("k", []byte("exe"))
	_, from, asked = tiers.Lookup("k")
	assert.Equal(t, FromDisk, from)
	assert.Equal(t, Asked{Disk: true}, asked, "a disk hit does not ask the server")

	remoteOnly := &Tiers{Remote: r, Warn: tiers.Warn}
	data, from, asked := remoteOnly.Lookup("k")
	assert.Equal(t, FromRemote, from)
	assert.Equal(t, "exe", string(data))
	assert.Equal(t, Asked{Remote: true}, asked)

	var none *Tiers
	_, from, asked = none.Lookup("k")
	assert.Equal(t, Missed, from)
	assert.Equal(t, Asked{}, asked, "no tiers, nothing asked")
}
