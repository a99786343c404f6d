"""torch.tpu.metrics_report(): a readable summary of the engine's counters."""
import warnings

import torch

from torchtpu.report import format_report

SECTIONS = ["Compile:", "Program cache:", "Execute:", "Transfers:", "CPU fallbacks:", "Memory:"]


def test_report_has_the_sections_and_the_counts():
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
    assert any(ln.startswith("  disk hits ") for ln in lines)
    assert any(ln.startswith("  remote hits ") for ln in lines)
    assert any(ln.split() == ["aten::_linalg_eigvals", "1"] for ln in lines)
    assert f"  host to device         {m['host_to_device_transfers']} copies," in report
    assert "eager op" in next(ln for ln in lines if ln.startswith("  flushes by reason"))


def test_format_report_from_known_counts():
    m = {
        "mode": "fused", "graphs_compiled": 3, "compile_seconds": 1.5, "compiles_by_reason": {"new": 2, "shapes": 1},
        "cache_hits": 9, "cache_misses": 3, "strict_fast_path_hits": 0, "fused_fast_path_hits": 350, "disk_cache_hits": 1, "remote_cache_hits": 0,
        "executions": 12, "execute_launch_seconds": 0.25, "execute_device_seconds": 2.0, "ops_recorded": 400,
        "op_seconds": 0.125,
        "donated_buffers": 30, "flushes_by_reason": {"step mark": 10, "to-host read": 2},
        "host_to_device_transfers": 4, "host_to_device_bytes": 3 * 1024 * 1024, "device_to_host_transfers": 10,
        "device_to_host_bytes": 40, "cpu_fallbacks": {"aten::foo": 2}, "memory_allocated": 2048, "live_storages": 5,
        "peak_memory_allocated": 4096,
    }
    lines = format_report(m).splitlines()
    assert lines[0] == "torchtpu metrics (mode fused)"
    assert "  new programs by reason new: 2, shapes: 1" in lines
    assert "  memory hits            9 of 12 lookups (75.0%)" in lines
    assert "  disk hits              1 of 3 memory misses (33.3%)" in lines
    assert "  device time (traced)   2.000 s" in lines
    assert "  fused fast path hits   350" in lines
    assert "  op time (host)         0.125 s" in lines
    assert "  flushes by reason      step mark: 10, to-host read: 2" in lines
    assert "  host to device         4 copies, 3.0 MiB" in lines
    assert "  device to host         10 copies, 40 B" in lines
    assert "  aten::foo                      2" in lines
    assert "  peak allocated         4.0 KiB" in lines
