package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"torchtpu/pjrt"
)

// Metrics counts what the engine did since the last reset.
type Metrics struct {
	OpsRecorded        int64            `json:"ops_recorded"`
	OpSeconds          float64          `json:"op_seconds"` // host time inside the engine's op entry: rules, recording, replays and any launch an op made
	GraphsCompiled     int64            `json:"graphs_compiled"`
	CompileSeconds     float64          `json:"compile_seconds"`
	CompilesByReason   map[string]int64 `json:"compiles_by_reason"`    // programs compiled (not loaded from a persistent tier), by recompile reason
	ColdRuns           int64            `json:"strict_cold_runs"`      // strict mode: runs of new ops recorded while their one-op programs compile (cold_run.go)
	ColdRunSteps       int64            `json:"strict_cold_run_steps"` // strict mode: ops of cold runs launched one by one on their one-op programs (cold_run_steps.go)
	BackgroundCompiles int64            `json:"background_compiles"`   // one-op programs the compile pool compiled (compile_pool.go; loads from the persistent tiers are hits)
	HostFills          int64            `json:"host_fills"`            // programs made from host bytes instead of compiled (host_fill.go)
	CompileWaits       int64            `json:"compile_waits"`         // ops that waited for a background compile
	CompileWaitSeconds float64          `json:"compile_wait_seconds"`  // the time they waited
	CacheHits          int64            `json:"cache_hits"`            // in-memory tier hits (strict fast-path replays included)
	CacheMisses        int64            `json:"cache_misses"`          // in-memory tier misses: each is loaded from a persistent tier or compiled
	FastPathHits       int64            `json:"strict_fast_path_hits"`
	FusedFastPathHits  int64            `json:"fused_fast_path_hits"`
	CompiledDeferred   int64            `json:"compiled_deferred"`     // compiled replays recorded into the pending graph (program_defer.go)
	GraphBoundReplays  int64            `json:"graph_bound_replays"`   // graph replays that bound the storages the previous replay checked (graph_bound.go)
	StepReplays        int64            `json:"step_replays"`          // fused segments launched from a step tape, nothing recorded (step_replay.go)
	StepReplayOps      int64            `json:"step_replay_ops"`       // ops those segments matched by key alone: no rule, no recording
	StepReplayReruns   int64            `json:"step_replay_reruns"`    // ops whose numbers or seeds changed: the rule ran, its program stayed the tape's
	StepReplayDeparts  int64            `json:"step_replay_fallbacks"` // replays that left their tape and recorded from the differing op on
	DiskHits           int64            `json:"disk_cache_hits"`
	DiskMisses         int64            `json:"disk_cache_misses"`
	RemoteHits         int64            `json:"remote_cache_hits"`
	RemoteMisses       int64            `json:"remote_cache_misses"`
	LoadSeconds        float64          `json:"cache_load_seconds"`     // time asking the persistent tiers and loading what they held
	Tiers              []string         `json:"persistent_cache_tiers"` // the persistent tiers that are on: "disk", "remote"
	ProgramsInMemory   int64            `json:"programs_in_memory"`     // programs the in-memory tier holds
	ProgramsEvicted    int64            `json:"programs_evicted"`       // programs it dropped (map_budget.go)
	LiveExecutables    int64            `json:"live_executables"`       // executables alive: cached, or held by compiled graphs
	MemoryMappings     int64            `json:"memory_mappings"`        // the process's memory mappings when last counted (map_budget.go)
	MappingLimit       int64            `json:"memory_mapping_limit"`   // the mappings it may hold (0: not watched)
	Executions         int64            `json:"executions"`
	LaunchSeconds      float64          `json:"execute_launch_seconds"` // host time spent launching
	DeviceSeconds      float64          `json:"execute_device_seconds"` // device time of executions run while a trace was active
	Flushes            map[string]int64 `json:"flushes_by_reason"`
	DonatedBuffers     int64            `json:"donated_buffers"`
	H2DBytes           int64            `json:"host_to_device_bytes"`
	D2HBytes           int64            `json:"device_to_host_bytes"`
	H2DTransfers       int64            `json:"host_to_device_transfers"`
	D2HTransfers       int64            `json:"device_to_host_transfers"`
	PointReads         int64            `json:"known_value_reads"` // host reads answered from a value range of one value, no sync (intrange.go)
	Fallbacks          map[string]int64 `json:"cpu_fallbacks"`
	PeakBytes          int64            `json:"peak_memory_allocated"`
	LiveStorages       int64            `json:"live_storages"`
	MemoryBytes        int64            `json:"memory_allocated"`
	Mode               string           `json:"mode"`
	HostCacheFree      int64            `json:"host_cache_free_bytes"` // freed plugin blocks kept for reuse (hostcache.go)
	HostCacheHits      int64            `json:"host_cache_hits"`       // plugin allocations served from them
	HostCacheMisses    int64            `json:"host_cache_misses"`     // plugin allocations newly mapped
}

func newMetrics() Metrics {
	return Metrics{Fallbacks: map[string]int64{}, CompilesByReason: map[string]int64{}, Flushes: map[string]int64{}}
}

// MetricsJSON returns the metrics as JSON.
func (e *Engine) MetricsJSON() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.harvest() // background compiles that have finished count
	m := e.m
	m.LiveStorages, m.MemoryBytes, m.Mode = e.live, e.liveB, e.mode.String()
	m.DeviceSeconds = float64(e.tr.devNanos.Load()) / 1e9
	m.Tiers = []string{}
	if e.tiers != nil && e.tiers.Disk != nil {
		m.Tiers = append(m.Tiers, "disk")
	}
	if e.tiers != nil && e.tiers.Remote != nil {
		m.Tiers = append(m.Tiers, "remote")
	}
	_, _, evicted := e.cache.Stats()
	m.ProgramsInMemory, m.ProgramsEvicted = int64(e.cache.Len()), evicted-e.evictedBase
	m.LiveExecutables = pjrt.LiveExecutables()
	m.MemoryMappings, m.MappingLimit = e.maps.watched()
	if e.hostCache {
		hc := pjrt.ReadHostCacheStats()
		m.HostCacheFree, m.HostCacheHits, m.HostCacheMisses = hc.FreeBytes, hc.Hits-e.hcBase.Hits, hc.Misses-e.hcBase.Misses
	}
	out, _ := json.Marshal(m)
	return out
}

// ResetMetrics zeroes every counter (the peak restarts at the current bytes).
func (e *Engine) ResetMetrics() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m = newMetrics()
	e.m.PeakBytes = e.liveB
	e.tr.devNanos.Store(0)
	e.hcBase = pjrt.ReadHostCacheStats()
	_, _, e.evictedBase = e.cache.Stats()
}

// NoteFallback counts one CPU fallback of op and reports whether it is the
// first. It is traced as an instant and printed under TORCHTPU_LOG=fallbacks.
func (e *Engine) NoteFallback(op string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m.Fallbacks[op]++
	e.span("fallback", "cpu fallback "+op, time.Now(), TraceEvent{})
	if e.logs.fallbacks {
		fmt.Fprintf(os.Stderr, "torchtpu: fallback: %s ran on the CPU (no tpu rule; call %d)\n", op, e.m.Fallbacks[op])
	}
	if e.warned == nil {
		e.warned = map[string]bool{}
	}
	first := !e.warned[op]
	e.warned[op] = true
	return first
}
