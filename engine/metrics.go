package engine

import "encoding/json"

// Metrics counts what the engine did since the last reset.
type Metrics struct {
	OpsRecorded    int64            `json:"ops_recorded"`
	GraphsCompiled int64            `json:"graphs_compiled"`
	CompileSeconds float64          `json:"compile_seconds"`
	CacheHits      int64            `json:"cache_hits"`
	CacheMisses    int64            `json:"cache_misses"`
	FastPathHits   int64            `json:"strict_fast_path_hits"`
	DiskHits       int64            `json:"disk_cache_hits"`
	RemoteHits     int64            `json:"remote_cache_hits"`
	Executions     int64            `json:"executions"`
	DonatedBuffers int64            `json:"donated_buffers"`
	H2DBytes       int64            `json:"host_to_device_bytes"`
	D2HBytes       int64            `json:"device_to_host_bytes"`
	Fallbacks      map[string]int64 `json:"cpu_fallbacks"`
	PeakBytes      int64            `json:"peak_memory_allocated"`
	LiveStorages   int64            `json:"live_storages"`
	MemoryBytes    int64            `json:"memory_allocated"`
	Mode           string           `json:"mode"`
}

// MetricsJSON returns the metrics as JSON.
func (e *Engine) MetricsJSON() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.m
	m.LiveStorages, m.MemoryBytes, m.Mode = e.live, e.liveB, e.mode.String()
	out, _ := json.Marshal(m)
	return out
}

// ResetMetrics zeroes every counter (the peak restarts at the current bytes).
func (e *Engine) ResetMetrics() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m = Metrics{Fallbacks: map[string]int64{}, PeakBytes: e.liveB}
}

// NoteFallback counts one CPU fallback of op and reports whether it is the first.
func (e *Engine) NoteFallback(op string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m.Fallbacks[op]++
	if e.warned == nil {
		e.warned = map[string]bool{}
	}
	first := !e.warned[op]
	e.warned[op] = true
	return first
}
