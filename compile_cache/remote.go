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
// a miss) and PUT stores one. Entries are sealed to their key exactly as on
// disk, so a damaged or truncated download reads as ErrCorrupt and another
// key's entry as a *WrongKeyError.
//
// The server is never allowed to fail a step: every request has a deadline,
// and after FailureLimit failures in a row the tier pauses for PauseFor,
// answering every call with ErrUnavailable without touching the network.
// The timeouts are read when the first request is made; set them before.
type Remote struct {
	base          string
	GetTimeout    time.Duration // the deadline of one download, answer and body
	PutTimeout    time.Duration // the deadline of one upload, body and answer
	AnswerTimeout time.Duration // how long a sent request waits for the server to begin its answer
	FailureLimit  int           // consecutive failures that pause the tier
	PauseFor      time.Duration // how long a pause lasts

	clientOnce sync.Once
	client     *http.Client

	mu          sync.Mutex
	failures    int
	pausedUntil time.Time
}

// Default timeouts of the remote tier. A download of a program is small
// next to a compile, so it gets 5 s; an upload may carry a large program on
// a slow link, so it gets 20 s in all, but a server silent 5 s after the
// body was sent is given up on (TORCHTPU_CACHE_TIMEOUT scales all three).
const (
	DefaultGetTimeout    = 5 * time.Second
	DefaultPutTimeout    = 20 * time.Second
	DefaultAnswerTimeout = 5 * time.Second
)

// ErrUnavailable reports that the server could not be used: it failed,
// timed out, or the tier is paused after repeated failures.
var ErrUnavailable = errors.New("remote compile cache unavailable")

// NewRemote returns the tier at base, an http:// or https:// URL, with the
// default timeouts.
func NewRemote(base string) (*Remote, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("compile cache URL %q is not an http:// or https:// URL", base)
	}
	return &Remote{
		base:          strings.TrimRight(base, "/"),
		GetTimeout:    DefaultGetTimeout,
		PutTimeout:    DefaultPutTimeout,
		AnswerTimeout: DefaultAnswerTimeout,
		FailureLimit:  3,
		PauseFor:      time.Minute,
	}, nil
}

// httpClient returns the client, built on first use from the timeouts.
func (r *Remote) httpClient() *http.Client {
	r.clientOnce.Do(func() {
		r.client = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			TLSHandshakeTimeout:   2 * time.Second,
			ResponseHeaderTimeout: r.AnswerTimeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       30 * time.Second,
		}}
	})
	return r.client
}

// URL returns where key is stored.
func (r *Remote) URL(key string) string { return r.base + "/ac/" + key }

// Load downloads the entry under key and returns its payload. A missing
// entry (or one in an older framing) gives an error matching fs.ErrNotExist,
// a damaged or truncated one ErrCorrupt, another key's entry a
// *WrongKeyError, and a server that fails or is slow an error wrapping
// ErrUnavailable.
func (r *Remote) Load(key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	if err := r.admit(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.GetTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL(key), nil)
	if err != nil {
		return nil, err
	}
	resp, err := r.httpClient().Do(req)
	if err != nil {
		return nil, r.fail(r.describe("GET", key, ctx, r.GetTimeout, err))
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
			return nil, r.fail(r.describe("GET", key, ctx, r.GetTimeout, err))
		}
		// The body ended before its declared length: a truncated entry.
		r.succeed()
		return nil, fmt.Errorf("%w: the body ended after %d bytes (%v)", ErrCorrupt, len(raw), err)
	}
	r.succeed()
	return unseal(key, raw)
}

// Store uploads payload under key, sealed.
func (r *Remote) Store(key string, payload []byte) error {
	body, err := seal(key, payload)
	if err != nil {
		return err
	}
	if err := r.admit(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.PutTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, r.URL(key), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := r.httpClient().Do(req)
	if err != nil {
		return r.fail(r.describe("PUT", key, ctx, r.PutTimeout, err))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return r.fail(fmt.Errorf("PUT %s: %s", r.URL(key), resp.Status))
	}
	r.succeed()
	return nil
}

// describe says why a request failed, naming the timeout that ended it.
func (r *Remote) describe(method, key string, ctx context.Context, deadline time.Duration, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s: not done within %s", method, r.URL(key), deadline)
	}
	var timeout net.Error
	var op *net.OpError
	if errors.As(err, &timeout) && timeout.Timeout() && !(errors.As(err, &op) && op.Op == "dial") {
		// The transport's wait for the answer (ResponseHeaderTimeout) ran out.
		return fmt.Errorf("%s %s: no answer within %s of sending the request", method, r.URL(key), r.AnswerTimeout)
	}
	return err
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
