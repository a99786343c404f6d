package engine

import (
	"fmt"
	"os"
	"time"

	"torchtpu/compile_cache"
	"torchtpu/pjrt"
)

// loadStored returns the executable stored under key in the persistent
// compile cache tiers (disk, then remote) and the tier's name, or nil, and
// counts each asked tier's hit or miss and the time taken. The tiers only
// hand out entries sealed to key; an entry that still does not load is a miss
// plus a warning, and the recompile that follows overwrites it.
func (e *Engine) loadStored(key string) (*pjrt.Executable, string) {
	t0 := time.Now()
	data, from, asked := e.tiers.Lookup(key)
	l := e.loadFound(key, data, from, asked)
	e.countLookup(l, time.Since(t0))
	return l.exe, l.tier
}

// storedLookup is what asking the persistent tiers for a program found.
type storedLookup struct {
	exe   *pjrt.Executable // nil: no tier held a program that loads
	tier  string           // the tier that held it
	from  compile_cache.Source
	asked compile_cache.Asked
}

// loadFound loads the program the tiers returned for key (data from tier
// from, having asked the tiers in asked). It touches no engine state, so
// compile pool workers call it too.
func (e *Engine) loadFound(key string, data []byte, from compile_cache.Source, asked compile_cache.Asked) storedLookup {
	l := storedLookup{from: from, asked: asked, tier: "disk cache"}
	if from == compile_cache.FromRemote {
		l.tier = "remote cache"
	}
	if from != compile_cache.Missed {
		var err error
		if l.exe, err = e.client.DeserializeExecutable(data); err != nil {
			fmt.Fprintf(os.Stderr, "torchtpu: warning: compile cache entry %s from the %s does not load (%v); recompiling\n", key, l.tier, err)
			l.exe = nil
		}
	}
	return l
}

// countLookup counts a lookup's hits and misses and the time it took.
func (e *Engine) countLookup(l storedLookup, took time.Duration) {
	e.m.LoadSeconds += took.Seconds()
	if l.asked.Disk {
		if l.exe != nil && l.from == compile_cache.FromDisk {
			e.m.DiskHits++
		} else {
			e.m.DiskMisses++
		}
	}
	if l.asked.Remote {
		if l.exe != nil && l.from == compile_cache.FromRemote {
			e.m.RemoteHits++
		} else {
			e.m.RemoteMisses++
		}
	}
}

// storeCompiled writes a freshly compiled executable to every persistent tier.
func (e *Engine) storeCompiled(key string, exe *pjrt.Executable) {
	if e.tiers == nil {
		return
	}
	data, err := exe.Serialize()
	if err != nil {
		fmt.Fprintf(os.Stderr, "torchtpu: warning: cannot serialize compiled program %s for the compile cache: %v\n", key[:16], err)
		return
	}
	e.tiers.Store(key, data)
}
