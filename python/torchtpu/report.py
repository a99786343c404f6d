"""torch.tpu.metrics_report(): the engine's counters as a readable summary."""

from .metrics import metrics


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0


def _by_count(d):
    return sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))


def _pct(part, whole):
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def _tier(m, name):
    """One persistent tier's line: its hits and misses, or that it is off."""
    on = m.get("persistent_cache_tiers")
    if on is not None and name not in on:
        return "off"
    hits, misses = m.get(f"{name}_cache_hits", 0), m.get(f"{name}_cache_misses", 0)
    return f"{hits} hits, {misses} misses ({_pct(hits, hits + misses)} hit)"


def format_report(m):
    """The report for a metrics dict (what torch.tpu.metrics() returns)."""
    lines = []
    add = lines.append
    lookups = m["cache_hits"] + m["cache_misses"]
    add(f"torchtpu metrics (mode {m['mode']})")
    add("Compile:")
    add(f"  programs compiled      {m['graphs_compiled']}")
    add(f"  compile time           {m['compile_seconds']:.3f} s")
    add("  compiles by reason     " + (", ".join(f"{k}: {v}" for k, v in _by_count(m["compiles_by_reason"])) or "none"))
    if m.get("compiled_programs_by_reason"):
        add("  torch.compile programs by reason " + ", ".join(
            f"{k}: {v}" for k, v in _by_count(m["compiled_programs_by_reason"])))
    if m.get("host_fills"):
        add(f"  fills made on the host {m['host_fills']} (constant programs not compiled)")
    if m.get("compiled_recorded_calls"):
        add(f"  torch.compile calls recorded fused (dynamic shapes past a graph's programs) {m['compiled_recorded_calls']}")
    add("Program cache:")
    add(f"  memory                 {m['cache_hits']} hits, {m['cache_misses']} misses "
        f"({_pct(m['cache_hits'], lookups)} hit)")
    add(f"  disk                   {_tier(m, 'disk')}")
    add(f"  remote                 {_tier(m, 'remote')}")
    add(f"  load time              {m.get('cache_load_seconds', 0.0):.3f} s")
    add(f"  strict fast path hits  {m['strict_fast_path_hits']}")
    add(f"  programs in memory     {m.get('programs_in_memory', 0)} ({m.get('programs_evicted', 0)} evicted; "
        f"{m.get('live_executables', 0)} alive with those compiled graphs hold)")
    if m.get("memory_mapping_limit"):
        add(f"  memory mappings        {m.get('memory_mappings', 0)} of {m['memory_mapping_limit']} (at the last count)")
    add("Execute:")
    add(f"  executions             {m['executions']}")
    add(f"  launch time (host)     {m['execute_launch_seconds']:.3f} s")
    add(f"  device time (traced)   {m['execute_device_seconds']:.3f} s")
    add(f"  ops recorded           {m['ops_recorded']}")
    add(f"  op time (host)         {m['op_seconds']:.3f} s")
    add(f"  fused fast path hits   {m['fused_fast_path_hits']}")
    add(f"  step replays           {m['step_replays']} ({m['step_replay_ops']} ops replayed, "
        f"{m['step_replay_reruns']} rerun, {m['step_replay_fallbacks']} fallbacks)")
    add(f"  donated buffers        {m['donated_buffers']}")
    add("  flushes by reason      " + (", ".join(f"{k}: {v}" for k, v in _by_count(m["flushes_by_reason"])) or "none"))
    add("Transfers:")
    add(f"  host to device         {m['host_to_device_transfers']} copies, {_bytes(m['host_to_device_bytes'])}")
    add(f"  device to host         {m['device_to_host_transfers']} copies, {_bytes(m['device_to_host_bytes'])}")
    add(f"  known values read      {m['known_value_reads']} (no copy: every value known on the host)")
    add("CPU fallbacks:")
    if m["cpu_fallbacks"]:
        for op, n in _by_count(m["cpu_fallbacks"]):
            add(f"  {op:<30} {n}")
    else:
        add("  none")
    add("Memory:")
    add(f"  allocated              {_bytes(m['memory_allocated'])} in {m['live_storages']} storages")
    add(f"  peak allocated         {_bytes(m['peak_memory_allocated'])}")
    return "\n".join(lines)


def metrics_report():
    """A multi-line summary: compiles (count, time, reasons), hits and misses of each program cache tier
    (memory, disk, remote) and the time loading from the persistent ones, executions
    (count, launch and traced device time), flushes, transfers, CPU fallbacks by op, memory."""
    return format_report(metrics())
