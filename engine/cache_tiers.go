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
	defer func() { e.m.LoadSeconds += time.Since(t0).Seconds() }()
	data, from, asked := e.tiers.Lookup(key)
	var exe *pjrt.Executable
	tier := "disk cache"
	if from == compile_cache.FromRemote {
		tier = "remote cache"
	}
	if from != compile_cache.Missed {
		var err error
		if exe, err = e.client.DeserializeExecutable(data); err != nil {
			fmt.Fprintf(os.Stderr, "torchtpu: warning: compile cache entry %s from the %s does not load (%v); recompiling\n", key, tier, err)
			exe = nil
		}
	}
	if asked.Disk {
		if exe != nil && from == compile_cache.FromDisk {
			e.m.DiskHits++
		} else {
			e.m.DiskMisses++
		}
	}
	if asked.Remote {
		if exe != nil && from == compile_cache.FromRemote {
			e.m.RemoteHits++
		} else {
			e.m.RemoteMisses++
		}
	}
	if exe == nil {
		return nil, ""
	}
	return exe, tier
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
