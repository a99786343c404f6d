"""Every launch is traced and counted, whoever made it: compiled graphs (capture and replay), strict
fast-path replays and collectives among devices. Scenarios that need a fresh interpreter (several
devices, the slow-compile notice) run in their own (compile_util)."""
import torch

from compile_util import run


def _metrics():
    return torch.tpu.metrics()


def test_compiled_replays_are_traced_and_counted():
    torch.manual_seed(0)
    a, b = torch.randn(6, 7), torch.randn(7, 3)
    fn = torch.compile(lambda a, b: (a @ b).tanh() * 2, backend="tpu")
    at, bt = a.to("tpu"), b.to("tpu")
    fn(at, bt)  # the capture
    torch.tpu.synchronize()
    torch.tpu.reset_metrics()
    with torch.tpu.trace(None) as t:
        outs = [fn(at, bt) for _ in range(3)]
        got = [o.cpu() for o in outs]
    m = _metrics()
    for g in got:
        torch.testing.assert_close(g, (a @ b).tanh() * 2)
    execs = [e for e in t.events if e["kind"] == "execute"]
    assert len(execs) == 3, t.events
    assert all(e["key"].startswith("c:") and e["key"] == execs[0]["key"] for e in execs)
    assert all(e["detail"].startswith("compiled frame ") and e["detail"].endswith(" inference") for e in execs), execs
    assert all(e["done_ns"] >= e["start_ns"] and e["device"] == 0 and e["ops"] >= 3 for e in execs), execs
    assert m["compiled_replays"] == 3 and m["executions"] == 3, m
    assert m["execute_launch_seconds"] > 0
    assert m["execute_device_seconds"] > 0


def test_strict_fast_path_replays_count_their_donations(op_by_op):
    w, g = torch.randn(9, 4), torch.randn(9, 4)
    wt, gt = w.to("tpu"), g.to("tpu")
    wt.add_(gt, alpha=0.5)  # the full path: plans the op (and donates w's buffer)
    torch.tpu.synchronize()
    torch.tpu.reset_metrics()
    for _ in range(4):
        wt.add_(gt, alpha=0.5)
    m = _metrics()
    torch.testing.assert_close(wt.cpu(), w + 2.5 * g)
    assert m["strict_fast_path_hits"] == 4, m
    assert m["donated_buffers"] == 4, m


def test_compiled_in_place_updates_count_their_donations():
    torch.manual_seed(0)
    w, g = torch.randn(5, 8), torch.randn(5, 8)
    m1, m2 = torch.zeros(5, 8), torch.zeros(5, 8)

    @torch.compile(backend="tpu")
    def update(w, m, g):
        m.mul_(0.9).add_(g)
        w.sub_(m, alpha=0.1)

    wt, mt, gt = w.to("tpu"), m1.to("tpu"), g.to("tpu")
    torch.tpu.reset_metrics()
    update(wt, mt, gt)  # the capture run donates w's and m's buffers too
    first = _metrics()["donated_buffers"]
    for _ in range(3):
        update(wt, mt, gt)
    m = _metrics()
    for _ in range(4):
        m2.mul_(0.9).add_(g)
        w.sub_(m2, alpha=0.1)
    torch.testing.assert_close(wt.cpu(), w)
    torch.testing.assert_close(mt.cpu(), m2)
    assert first == 2, first
    assert m["donated_buffers"] == 8, m
    assert m["compiled_replays"] == 3


def test_collectives_among_devices_are_traced_and_counted():
    res, _ = run("""
import torchtpu.distributed as tdist
xs = [torch.full((3, 4), float(i + 1)) for i in range(2)]
ts = [x.to(f"tpu:{i}") for i, x in enumerate(xs)]
torch.tpu.synchronize()
torch.tpu.reset_metrics()
with torch.tpu.trace(None) as t:
    tdist.all_reduce_devices(ts, "sum")
m = torch.tpu.metrics()
execs = [e for e in t.events if e["kind"] == "execute"]
report(execs=execs, vals=[x.cpu().tolist() for x in ts], executions=m["executions"],
       launch=m["execute_launch_seconds"])
""", env={"TORCHTPU_CPU_DEVICE_COUNT": "2"})
    assert res["vals"] == [[[3.0] * 4] * 3] * 2
    assert len(res["execs"]) == 1, res["execs"]
    e = res["execs"][0]
    assert "all_reduce" in e["detail"] and "2 devices" in e["detail"], e
    assert e["done_ns"] >= e["start_ns"] > 0
    assert res["executions"] == 1 and res["launch"] > 0


def test_slow_compile_notice_names_the_compiled_graph(tmp_path):
    # A threshold of zero prints the notice for every compile.
    env = {"TORCHTPU_SLOW_COMPILE_SECONDS": "0", "TORCHTPU_CACHE_DIR": str(tmp_path)}
    res, err = run("""
m = nn.Sequential(nn.Linear(11, 9), nn.GELU(), nn.Linear(9, 2)).to("tpu")
out = torch.compile(m, backend="tpu")(torch.randn(3, 11).to("tpu"))
report(shape=list(out.shape))
""", env=env)
    assert res["shape"] == [3, 2]
    lines = [ln for ln in err.splitlines() if ln.startswith("torchtpu: compiling a program of ")]
    compiled = [ln for ln in lines if "captured from compiled frame 0 graph 0 forward" in ln]
    assert compiled, err[-3000:]
    assert all(" 0 ops" not in ln and "flushed by  " not in ln for ln in lines), lines


def test_chrome_trace_puts_each_device_on_its_own_track():
    from torchtpu.trace import chrome_events

    us = 1000
    ev = lambda start, done, dev, key: {"kind": "execute", "name": "execute", "start_ns": start * us,  # noqa: E731
                                        "dur_ns": 1 * us, "done_ns": done * us, "key": key, "device": dev}
    out = chrome_events([ev(0, 10, 0, "s:a"), ev(2, 6, 1, "c:b"), ev(3, 12, 1, "c:c"), ev(4, 15, 0, "s:d")], [], 0)
    names = {e["tid"]: e["args"]["name"] for e in out if e.get("name") == "thread_name"}
    progs = [(names[e["tid"]], e["ts"], e["dur"]) for e in out if e.get("cat") == "execute" and e["name"].startswith("program")]
    # Each device queues its own work: tpu:1's second program waits for its first, not for tpu:0's.
    assert progs == [("tpu:0", 0, 10), ("tpu:1", 2, 4), ("tpu:1", 6, 6), ("tpu:0", 10, 5)], progs
