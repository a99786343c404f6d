package compile_cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Remote is the tier shared across hosts: an HTTP cache server speaking the
// remote-cache protocol of build systems (Bazel's HTTP cache, bazel-remote,
// or nginx with WebDAV PUT). An entry lives at {base}/ac/{key}: the key names
// the inputs of a compile, not the hash of the stored bytes, which is what
// that protocol's action-cache namespace holds. GET fetches an entry (404 is
// a miss) and PUT stores one. Entries are sealed exactly as on disk, so a
// damaged or truncated download reads as ErrCorrupt.
//
// The server is never allowed to fail a step: every request has a deadline,
// and after FailureLimit failures in a row the tier pauses for PauseFor,
// answering every call with ErrUnavailable without touching the network.
type Remote struct {
	base         string
	client       *http.Client
	GetTimeout   time.Duration // the deadline of one download
	PutTimeout   time.Duration // the deadline of one upload
	FailureLimit int           // consecutive failures that pause the tier
	PauseFor     time.Duration // how long a pause lasts

	mu          sync.Mutex
	failures    int
	pausedUntil time.Time
}

// ErrUnavailable reports that the server could not be used: it failed,
// timed out, or the tier is paused after repeated failures.
var ErrUnavailable = errors.New("remote compile cache unavailable")

// NewRemote returns the tier at base, an http:// or https:// URL.
func NewRemote(base string) (*Remote, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("compile cache URL %q is not an http:// or https:// URL", base)
	}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
		TLSHandshakeTimeout:   2 * time.Second,
		ResponseHeaderTimeout: 5 * time.Second,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
	}
	return &Remote{
		base:         strings.TrimRight(base, "/"),
		client:       &http.Client{Transport: transport},
		GetTimeout:   5 * time.Second,
		PutTimeout:   20 * time.Second,
		FailureLimit: 3,
		PauseFor:     time.Minute,
	}, nil
}

// URL returns where key is stored.
func (r *Remote) URL(key string) string { return r.base + "/ac/" + key }

// Load downloads the entry under key and returns its payload. A missing
// entry gives fs.ErrNotExist, a damaged or truncated one ErrCorrupt, and a
// server that fails or is slow an error wrapping ErrUnavailable.
func (r *Remote) Load(key string) ([]byte, error) {
	if err := r.admit(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.GetTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL(key), nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, r.fail(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		r.succeed()
		return nil, fs.ErrNotExist
	case resp.StatusCode != http.StatusOK:
		return nil, r.fail(fmt.Errorf("GET %s: %s", r.URL(key), resp.Status))
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			return nil, r.fail(err)
		}
		// The body ended before its declared length: a truncated entry.
		r.succeed()
		return nil, fmt.Errorf("%w (%v)", ErrCorrupt, err)
	}
	r.succeed()
	return unseal(raw)
}

// Store uploads payload under key, sealed.
func (r *Remote) Store(key string, payload []byte) error {
	if err := r.admit(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.PutTimeout)
	defer cancel()
	body := seal(payload)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, r.URL(key), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := r.client.Do(req)
	if err != nil {
		return r.fail(err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return r.fail(fmt.Errorf("PUT %s: %s", r.URL(key), resp.Status))
	}
	r.succeed()
	return nil
}

// Paused reports whether the tier is resting after repeated failures.
func (r *Remote) Paused() bool { return r.admit() != nil }

func (r *Remote) admit() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Now().Before(r.pausedUntil) {
		return fmt.Errorf("%w: paused after %d failures in a row", ErrUnavailable, r.FailureLimit)
	}
	return nil
}

func (r *Remote) succeed() {
	r.mu.Lock()
	r.failures = 0
	r.mu.Unlock()
}

// fail counts one failure, pausing the tier when the limit is reached, and
// returns err wrapped in ErrUnavailable.
func (r *Remote) fail(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures++
	if r.failures >= r.FailureLimit {
		r.failures = 0
		r.pausedUntil = time.Now().Add(r.PauseFor)
		return fmt.Errorf("%w: %v; not trying again for %s", ErrUnavailable, err, r.PauseFor)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}
