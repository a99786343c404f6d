package compile_cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// Source names the tier a Load was answered from.
type Source int

const (
	Missed     Source = iota // no tier held the entry
	FromDisk                 // the on-disk tier (TORCHTPU_CACHE_DIR)
	FromRemote               // the remote tier (TORCHTPU_CACHE_URL)
)

// Tiers is the persistent part of the compile cache below the in-memory
// LRU: the on-disk tier, then the remote one. Either may be nil. Failures of
// either never fail the caller; they print a warning through Warn.
type Tiers struct {
	Disk   *Dir
	Remote *Remote
	Warn   func(msg string)
}

// OpenTiers opens the tiers named by dir (TORCHTPU_CACHE_DIR) and url
// (TORCHTPU_CACHE_URL); an empty name leaves that tier off. It returns nil
// when both are off. A tier that cannot be opened is off, with a warning.
// TORCHTPU_CACHE_TIMEOUT, a number of seconds, sets the remote tier's
// download deadline and answer wait, and four times it the upload deadline.
func OpenTiers(dir, url string) *Tiers {
	t := &Tiers{Warn: func(msg string) { fmt.Fprintln(os.Stderr, "torchtpu: warning: "+msg) }}
	if dir != "" {
		d, err := OpenDir(dir)
		if err != nil {
			t.Warn(fmt.Sprintf("%v; the on-disk compile cache is off", err))
		} else {
			limit, err := SizeFromEnv(os.Getenv("TORCHTPU_CACHE_SIZE"))
			if err != nil {
				t.Warn(fmt.Sprintf("%v; bounding the on-disk compile cache at %d bytes", err, int64(DefaultDirSize)))
				limit = DefaultDirSize
			}
			d.SetLimit(limit)
			t.Disk = d
		}
	}
	if url != "" {
		r, err := NewRemote(url)
		if err != nil {
			t.Warn(fmt.Sprintf("%v (TORCHTPU_CACHE_URL); the remote compile cache is off", err))
		} else if s := os.Getenv("TORCHTPU_CACHE_TIMEOUT"); s != "" {
			if sec, err := strconv.ParseFloat(s, 64); err == nil && sec > 0 && sec <= 3600 {
				d := time.Duration(sec * float64(time.Second))
				r.GetTimeout, r.AnswerTimeout, r.PutTimeout = d, d, 4*d
			} else {
				t.Warn(fmt.Sprintf("TORCHTPU_CACHE_TIMEOUT=%q is not a number of seconds in (0, 3600]; using %s", s, DefaultGetTimeout))
			}
		}
		t.Remote = r
	}
	if t.Disk == nil && t.Remote == nil {
		return nil
	}
	return t
}

// Asked says which tiers a lookup consulted: a tier that is off, or the
// remote tier while it rests after failures, is not asked.
type Asked struct{ Disk, Remote bool }

// Load returns the payload stored under key by the nearest tier that holds
// it, and which tier that was. A remote hit is also written to disk. A
// missing entry, or one in an older framing, is a quiet miss. A damaged
// entry, another key's entry found under this key, or an unreachable server
// is a miss with a warning naming the tier and the key; such a disk entry is
// deleted, so the recompiled program takes its place.
func (t *Tiers) Load(key string) ([]byte, Source) {
	data, from, _ := t.Lookup(key)
	return data, from
}

// Lookup is Load that also says which tiers it asked, so that a caller can
// count each tier's hits and misses.
func (t *Tiers) Lookup(key string) (data []byte, from Source, asked Asked) {
	if t == nil {
		return nil, Missed, asked
	}
	if t.Disk != nil {
		asked.Disk = true
		data, err := t.Disk.Load(key)
		if err == nil {
			return data, FromDisk, asked
		}
		if !errors.Is(err, fs.ErrNotExist) {
			what := "deleted it"
			if rerr := t.Disk.Remove(key); rerr != nil {
				what = fmt.Sprintf("cannot delete it: %v", rerr)
			}
			t.Warn(fmt.Sprintf("on-disk compile cache entry %s is unusable (%v); %s, trying the next tier", t.Disk.File(key), err, what))
		}
	}
	if t.Remote != nil && !t.Remote.Paused() {
		asked.Remote = true
		data, err := t.Remote.Load(key)
		if err == nil {
			if t.Disk != nil {
				if err := t.Disk.Store(key, data); err != nil {
					t.Warn(fmt.Sprintf("cannot write compile cache entry %s to disk: %v", key, err))
				}
			}
			return data, FromRemote, asked
		}
		switch {
		case errors.Is(err, ErrUnavailable):
			t.Warn(fmt.Sprintf("remote compile cache entry %s could not be fetched (%v); recompiling", key, err))
		case !errors.Is(err, fs.ErrNotExist):
			t.Warn(fmt.Sprintf("remote compile cache entry %s is unusable (%v); not using it, recompiling", key, err))
		}
	}
	return nil, Missed, asked
}

// Store writes payload under key to every tier.
func (t *Tiers) Store(key string, payload []byte) {
	if t == nil {
		return
	}
	if t.Disk != nil {
		if err := t.Disk.Store(key, payload); err != nil {
			t.Warn(fmt.Sprintf("cannot write compile cache entry %s to disk: %v", key, err))
		}
	}
	if t.Remote != nil && !t.Remote.Paused() {
		if err := t.Remote.Store(key, payload); err != nil {
			t.Warn(fmt.Sprintf("cannot upload compile cache entry %s: %v", key, err))
		}
	}
}
