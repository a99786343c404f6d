package compile_cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
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
func OpenTiers(dir, url string) *Tiers {
	t := &Tiers{Warn: func(msg string) { fmt.Fprintln(os.Stderr, "torchtpu: warning: "+msg) }}
	if dir != "" {
		d, err := OpenDir(dir)
		if err != nil {
			t.Warn(fmt.Sprintf("%v; the on-disk compile cache is off", err))
		}
		t.Disk = d
	}
	if url != "" {
		r, err := NewRemote(url)
		if err != nil {
			t.Warn(fmt.Sprintf("%v (TORCHTPU_CACHE_URL); the remote compile cache is off", err))
		}
		t.Remote = r
	}
	if t.Disk == nil && t.Remote == nil {
		return nil
	}
	return t
}

// Load returns the payload stored under key by the nearest tier that holds
// it, and which tier that was. A remote hit is also written to disk. A
// damaged entry or an unreachable server counts as a miss, with a warning.
func (t *Tiers) Load(key string) ([]byte, Source) {
	if t == nil {
		return nil, Missed
	}
	if t.Disk != nil {
		data, err := t.Disk.Load(key)
		if err == nil {
			return data, FromDisk
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Warn(fmt.Sprintf("compile cache entry %s on disk is unusable (%v); trying the next tier", short(key), err))
		}
	}
	if t.Remote != nil && !t.Remote.Paused() {
		data, err := t.Remote.Load(key)
		if err == nil {
			if t.Disk != nil {
				if err := t.Disk.Store(key, data); err != nil {
					t.Warn(fmt.Sprintf("cannot write compile cache entry %s to disk: %v", short(key), err))
				}
			}
			return data, FromRemote
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Warn(fmt.Sprintf("remote compile cache entry %s is unusable (%v); recompiling", short(key), err))
		}
	}
	return nil, Missed
}

// Store writes payload under key to every tier.
func (t *Tiers) Store(key string, payload []byte) {
	if t == nil {
		return
	}
	if t.Disk != nil {
		if err := t.Disk.Store(key, payload); err != nil {
			t.Warn(fmt.Sprintf("cannot write compile cache entry %s: %v", short(key), err))
		}
	}
	if t.Remote != nil && !t.Remote.Paused() {
		if err := t.Remote.Store(key, payload); err != nil {
			t.Warn(fmt.Sprintf("cannot upload compile cache entry %s: %v", short(key), err))
		}
	}
}

func short(key string) string {
	if len(key) > 16 {
		return key[:16]
	}
	return key
}
