"""torch.tpu.trace and the profiler: the engine's events in an exported Chrome trace."""
import json
import os
import re

import torch
from torch.profiler import ProfilerActivity

import fork_server


def load(path):
    doc = json.loads(open(path).read())
    return doc["traceEvents"]


def by_cat(events, cat):
    return [e for e in events if e.get("cat") == cat]


def tracks(events):
    return {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}


def train_step(model, opt, x, y):
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


def test_fused_training_step_trace(tmp_path):
    torch.manual_seed(0)
    # A shape no other test uses, so that this process compiles the step's program here.
    ref = torch.nn.Sequential(torch.nn.Linear(13, 11), torch.nn.Tanh(), torch.nn.Linear(11, 3))
    model = torch.nn.Sequential(torch.nn.Linear(13, 11), torch.nn.Tanh(), torch.nn.Linear(11, 3))
    model.load_state_dict(ref.state_dict())
    model.to("tpu")
    x, y = torch.randn(17, 13), torch.randn(17, 3)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "trace.json"
    torch.tpu.set_mode("fused")
    try:
        with torch.tpu.trace(str(path)) as t:
            xt, yt = x.to("tpu"), y.to("tpu")
            with t.range("train step"):
                loss = train_step(model, opt, xt, yt)
            got_loss = loss.item()
    finally:
        torch.tpu.set_mode("strict")
    want_loss = train_step(ref, ref_opt, x, y).item()
    assert abs(got_loss - want_loss) < 1e-5
    torch.testing.assert_close(model[0].weight.cpu(), ref[0].weight, atol=1e-5, rtol=1e-5)

    events = load(path)
    names = tracks(events)
    assert set(names.values()) >= {"host (engine)", "tpu:0", "host (ranges)"}
    # The step's three graphs are flushed when the backward starts (the forward), when it ends (the
    # backward) and at the optimizer step (a step mark), and each is compiled once.
    flushes = by_cat(events, "flush")
    assert [f["args"]["reason"] for f in flushes] == ["backward start", "backward end", "step mark"], flushes
    step = [max(flushes, key=lambda f: f["args"]["ops"])]
    assert step[0]["args"]["ops"] > 5
    compiles = by_cat(events, "compile") + by_cat(events, "load")
    assert len(compiles) == 3, [e["name"] for e in events]
    assert sorted(c["args"]["ops"] for c in compiles) == sorted(f["args"]["ops"] for f in flushes)
    assert all(c["dur"] > 0 and c["args"]["key"].startswith("s:") for c in compiles)
    # Its execution: a launch on the host track and a program with a device duration on the tpu track.
    device = [e for e in by_cat(events, "execute") if names[e["tid"]] == "tpu:0"]
    assert device and all(e["dur"] > 0 for e in device)
    assert {e["args"]["key"] for e in device} >= {c["args"]["key"] for c in by_cat(events, "compile")}
    # Transfers with their bytes: x and y up (float32), the loss down.
    up = sorted(e["args"]["bytes"] for e in by_cat(events, "h2d"))
    assert 17 * 13 * 4 in up and 17 * 3 * 4 in up
    assert [e["args"]["bytes"] for e in by_cat(events, "d2h")] == [4]
    # The host range sits beside them and covers the step's flushes.
    rng = [e for e in events if e.get("name") == "train step"]
    assert len(rng) == 1 and all(rng[0]["ts"] <= f["ts"] <= rng[0]["ts"] + rng[0]["dur"] for f in flushes)


def test_strict_op_trace_and_fast_path(tmp_path, op_by_op):
    a, b = torch.randn(7, 5), torch.randn(7, 5)
    at, bt = a.to("tpu"), b.to("tpu")
    path = tmp_path / "strict.json"
    with torch.tpu.trace(str(path)) as t:
        c = torch.atan2(at, bt)
        d = torch.atan2(at, bt)  # the same signature: the strict fast path replays the program
        got = d.cpu()
    torch.testing.assert_close(c.cpu(), torch.atan2(a, b))
    torch.testing.assert_close(got, torch.atan2(a, b))
    execs = [e for e in t.events if e["kind"] == "execute"]
    assert len(execs) == 2 and execs[0]["key"] == execs[1]["key"]
    assert all(e["done_ns"] > e["start_ns"] for e in execs)
    flushes = [e for e in t.events if e["kind"] == "flush"]
    assert [f["reason"] for f in flushes] in (["eager op"], [])  # none when an earlier test planned it
    assert [e["bytes"] for e in t.events if e["kind"] == "d2h"] == [7 * 5 * 4]
    events = load(path)
    names = tracks(events)
    assert len([e for e in by_cat(events, "execute") if names[e["tid"]] == "tpu:0"]) == 2


def test_trace_records_fallbacks():
    x = torch.randn(4, 4)
    with torch.tpu.trace(None) as t:
        got = torch.linalg.eigvals(x.to("tpu"))
    torch.testing.assert_close(got.cpu(), torch.linalg.eigvals(x))
    assert any(e["kind"] == "fallback" and "linalg_eig" in e["name"] for e in t.events)


def test_traces_do_not_nest():
    with torch.tpu.trace(None):
        try:
            with torch.tpu.trace(None):
                pass
        except RuntimeError as e:
            assert "already active" in str(e)
        else:
            raise AssertionError("a nested trace started")


def test_profiler_shows_tpu_work(tmp_path, op_by_op):
    torch.manual_seed(0)
    ref = torch.nn.Linear(6, 2)
    model = torch.nn.Linear(6, 2)
    model.load_state_dict(ref.state_dict())
    model.to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(9, 6), torch.randn(9, 2)
    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]) as prof:
        xt = x.to("tpu")
        loss = train_step(model, opt, xt, y.to("tpu")).item()
        torch.tpu.synchronize()
    assert abs(loss - torch.nn.functional.mse_loss(ref(x), y).item()) < 1e-5
    path = tmp_path / "prof.json"
    prof.export_chrome_trace(str(path))
    events = load(path)
    names = {e.get("name") for e in events}
    # Host-side ranges: the step mark of optimizer.step, the synchronize, and the aten ops on tpu tensors.
    assert {"torchtpu::mark_step", "torchtpu::synchronize", "aten::addmm", "aten::mse_loss"} <= names
    # The engine's events on the tpu rows, beside them: executions with a device duration,
    # flushes with their reason, transfers with their bytes.
    rows = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    device = [e for e in events if e.get("ph") == "X" and rows.get((e["pid"], e["tid"])) == "tpu:0"]
    assert device and all(e["dur"] > 0 and e["name"] == "tpu program" for e in device)
    host = [e for e in events if e.get("ph") == "X" and rows.get((e["pid"], e["tid"])) == "host (engine)"]
    kinds = {e["args"]["kind"] for e in host}
    assert {"flush", "execute", "h2d", "d2h"} <= kinds
    assert any(e["name"] == "flush: eager op" for e in host)  # strict mode: each op flushes
    assert any(e["args"]["kind"] == "h2d" and e["args"]["bytes"] == 9 * 6 * 4 for e in host)
    assert [e["args"]["bytes"] for e in host if e["args"]["kind"] == "d2h"] == [4]
    # Both sit in the profiler's window, on one clock.
    cpu = [e for e in events if e.get("name") == "aten::addmm"]
    assert min(e["ts"] for e in host) < cpu[0]["ts"] < max(e["ts"] for e in host)


RECOMPILE = """
import torch
torch.tpu.reset_metrics()
for n in (3, 5):
    x = torch.arange(float(n), device="tpu")
    print(torch.cumsum(x, 0).sum().item())
print("shapes", torch.tpu.metrics()["compiles_by_reason"].get("shapes", 0))
"""


def test_recompile_reason_names_the_shape():
    env = dict(os.environ, TORCHTPU_LOG="recompiles")
    r = fork_server.run(RECOMPILE, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "aten::cumsum" in ln]
    assert lines, r.stderr
    assert all(ln.startswith("torchtpu: ") for ln in lines)
    # cumsum's own program names its input; a cold run (TORCHTPU_COLD_RUNS=1) names the run's result.
    assert re.search(r"shapes: (input|result) 0 is tensor<5xf32>, was tensor<3xf32>", lines[0]), lines
    assert int(r.stdout.split("shapes")[-1]) >= 1
    # Without TORCHTPU_LOG the same script prints nothing on stderr.
    env.pop("TORCHTPU_LOG")
    r = fork_server.run(RECOMPILE, env=env, timeout=300)
    assert r.returncode == 0 and r.stderr == "", r.stderr
