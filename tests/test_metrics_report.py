"""torch.tpu.metrics_report(): a readable summary of the engine's counters."""
import json
import os
import warnings

import torch

from torchtpu.report import format_report

import fork_server

SECTIONS = ["Compile:", "Program cache:", "Execute:", "Transfers:", "CPU fallbacks:", "Memory:"]


def test_report_has_the_sections_and_the_counts(op_by_op):
    torch.tpu.reset_metrics()
    a = torch.randn(6, 3)
    t = a.to("tpu")
    got = [(t * 3).exp().cpu() for _ in range(3)]  # the second and third take the strict fast path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.linalg.eigvals(torch.randn(3, 3).to("tpu"))
    for g in got:
        torch.testing.assert_close(g, (a * 3).exp())
    m = torch.tpu.metrics()
    report = torch.tpu.metrics_report()
    lines = report.splitlines()
    pos = [next(i for i, ln in enumerate(lines) if ln == s) for s in SECTIONS]
    assert pos == sorted(pos)
    assert f"  executions             {m['executions']}" in lines
    assert f"  strict fast path hits  {m['strict_fast_path_hits']}" in lines
    assert m["strict_fast_path_hits"] >= 4  # mul and exp, twice each
    assert any(ln.startswith("  disk ") for ln in lines)
    assert any(ln.startswith("  remote ") for ln in lines)
    assert any(ln.split() == ["aten::_linalg_eigvals", "1"] for ln in lines)
    assert f"  host to device         {m['host_to_device_transfers']} copies," in report
    assert "eager op" in next(ln for ln in lines if ln.startswith("  flushes by reason"))


def test_format_report_from_known_counts():
    m = {
        "mode": "fused", "graphs_compiled": 3, "compile_seconds": 1.5, "compiles_by_reason": {"new": 2, "shapes": 1},
        "cache_hits": 9, "cache_misses": 3, "strict_fast_path_hits": 0, "fused_fast_path_hits": 350, "disk_cache_hits": 1, "remote_cache_hits": 0,
        "disk_cache_misses": 2, "remote_cache_misses": 2, "cache_load_seconds": 0.5, "persistent_cache_tiers": ["disk", "remote"],
        "executions": 12, "execute_launch_seconds": 0.25, "execute_device_seconds": 2.0, "ops_recorded": 400,
        "op_seconds": 0.125, "step_replays": 40, "step_replay_ops": 1200, "step_replay_reruns": 80, "step_replay_fallbacks": 1,
        "donated_buffers": 30, "flushes_by_reason": {"step mark": 10, "to-host read": 2},
        "host_to_device_transfers": 4, "host_to_device_bytes": 3 * 1024 * 1024, "device_to_host_transfers": 10,
        "device_to_host_bytes": 40, "known_value_reads": 3, "cpu_fallbacks": {"aten::foo": 2}, "memory_allocated": 2048, "live_storages": 5,
        "peak_memory_allocated": 4096,
    }
    lines = format_report(m).splitlines()
    assert lines[0] == "torchtpu metrics (mode fused)"
    assert "  compiles by reason     new: 2, shapes: 1" in lines
    assert "  memory                 9 hits, 3 misses (75.0% hit)" in lines
    assert "  disk                   1 hits, 2 misses (33.3% hit)" in lines
    assert "  remote                 0 hits, 2 misses (0.0% hit)" in lines
    assert "  load time              0.500 s" in lines
    assert "  device time (traced)   2.000 s" in lines
    assert "  fused fast path hits   350" in lines
    assert "  step replays           40 (1200 ops replayed, 80 rerun, 1 fallbacks)" in lines
    assert "  op time (host)         0.125 s" in lines
    assert "  flushes by reason      step mark: 10, to-host read: 2" in lines
    assert "  host to device         4 copies, 3.0 MiB" in lines
    assert "  device to host         10 copies, 40 B" in lines
    assert "  known values read      3 (no copy: every value known on the host)" in lines
    assert "  aten::foo                      2" in lines
    assert "  peak allocated         4.0 KiB" in lines


# Two programs at one call site (a fused graph flushed by a read to the host, of two shapes), then the first
# again: the expected counts are derived by hand from the cache's tiers.
FIRST_MINUTE = """
import json, torch
torch.tpu.set_mode("fused")
torch.tpu.reset_metrics()
a, b = torch.arange(16.0).view(4, 4), torch.arange(32.0).view(8, 4)
got = [((t.to("tpu") * 2).sin() + 1).cpu() for t in (a, b, a)]
ok = all(torch.allclose(g, (t * 2).sin() + 1) for g, t in zip(got, (a, b, a)))
m = torch.tpu.metrics()
print("M", json.dumps(dict(m, ok=ok, report=torch.tpu.metrics_report())))
"""


def first_minute(cache_dir):
    env = dict(os.environ, TORCHTPU_CACHE_DIR=str(cache_dir), TORCHTPU_LOG="recompiles")
    r = fork_server.run(FIRST_MINUTE, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.split("M ", 1)[1]), r.stderr


def test_where_the_first_minute_went_compiles_reasons_and_cache_tiers(tmp_path):
    m, log = first_minute(tmp_path)
    assert m["ok"]
    # Two programs compiled (the second is a new shape at the same call site), the repeat a memory hit.
    assert m["graphs_compiled"] == 2 and m["compiles_by_reason"] == {"new": 1, "shapes": 1}
    assert (m["cache_hits"], m["cache_misses"]) == (1, 2)
    assert (m["disk_cache_hits"], m["disk_cache_misses"]) == (0, 2)
    assert (m["remote_cache_hits"], m["remote_cache_misses"]) == (0, 0)
    assert m["persistent_cache_tiers"] == ["disk"] and m["compile_seconds"] > 0
    lines = m["report"].splitlines()
    assert "  programs compiled      2" in lines
    assert "  compiles by reason     new: 1, shapes: 1" in lines
    assert "  memory                 1 hits, 2 misses (33.3% hit)" in lines
    assert "  disk                   0 hits, 2 misses (0.0% hit)" in lines
    assert "  remote                 off" in lines
    # The recompile log names the reason of the one recompile, and how the program was made.
    recompiles = [ln for ln in log.splitlines() if ln.startswith("torchtpu: recompile")]
    assert len(recompiles) == 1, log
    assert ": shapes: input 0 is tensor<8x4xf32>, was tensor<4x4xf32> (compiled program" in recompiles[0]

    # A second process with the same folder: both programs come from disk, nothing is compiled.
    m2, log2 = first_minute(tmp_path)
    assert m2["ok"]
    assert m2["graphs_compiled"] == 0 and m2["compiles_by_reason"] == {} and m2["compile_seconds"] == 0
    assert (m2["cache_hits"], m2["cache_misses"]) == (1, 2)
    assert (m2["disk_cache_hits"], m2["disk_cache_misses"]) == (2, 0)
    assert m2["cache_load_seconds"] > 0
    assert "  disk                   2 hits, 0 misses (100.0% hit)" in m2["report"].splitlines()
    recompiles = [ln for ln in log2.splitlines() if ln.startswith("torchtpu: recompile")]
    assert len(recompiles) == 1 and "(loaded from disk cache program" in recompiles[0], log2


def test_report_says_when_the_persistent_tiers_are_off():
    m = torch.tpu.metrics()
    assert m["persistent_cache_tiers"] == []  # the suites turn the disk tier off
    lines = format_report(m).splitlines()
    assert "  disk                   off" in lines and "  remote                 off" in lines
