"""Strict mode's cold runs: new ops record as a run while their one-op programs compile in a pool on every
core, and the run launches them one by one (engine/cold_run.go, engine/cold_run_steps.go,
engine/compile_pool.go). Values stay CPU's, in order and equal to op by op's bit for bit, an error in the
middle of a run surfaces at the op that failed, compiles are counted once finished, and a process killed while
the pool compiles leaves a compile cache the next process runs from."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import fork_server
from conftest import Draws

randn, randint = Draws(7).pair()


@pytest.fixture(autouse=True)
def cold_runs():
    """Strict mode with cold runs on, whatever the environment says."""
    torch.tpu.set_mode("strict")
    was = torch.tpu.set_cold_runs(True)
    yield
    torch.tpu.await_compiles()
    torch.tpu.set_cold_runs(was)


def chain(xs):
    """Distinct small programs: every step has its own shapes, so every op is new."""
    outs = []
    for k, x in enumerate(xs):
        y = (x * (k + 2) + 1).relu()
        z = y.sum(0) - x.mean() * k
        outs.append(torch.cat([z, y.amax(0)]).tanh())
    return outs


def metrics():
    m = torch.tpu.metrics()
    return {k: m[k] for k in ("graphs_compiled", "strict_cold_runs", "strict_cold_run_steps", "background_compiles",
                              "executions", "strict_fast_path_hits", "compile_waits")}


def test_many_new_programs_match_cpu_in_order():
    assert torch.tpu.get_mode() == "strict"
    xs = [randn(3 + k, 2 + k % 3) for k in range(12)]
    torch.tpu.await_compiles()
    torch.tpu.reset_metrics()
    got = chain([x.to("tpu") for x in xs])
    want = chain(xs)
    for k, (g, w) in enumerate(zip(got, want)):  # the host read of the first launches the run
        torch.testing.assert_close(g.cpu(), w, msg=f"step {k}")
    m = metrics()
    # Every launch ran one op of a run on its one-op program: no program was compiled for a run.
    assert m["strict_cold_runs"] >= 1 and m["strict_cold_run_steps"] == m["executions"] >= 12 * 5, m
    assert m["graphs_compiled"] <= m["executions"], m
    # The same ops again run one program each: no compile, no run.
    torch.tpu.reset_metrics()
    got = chain([x.to("tpu") for x in xs])
    for k, (g, w) in enumerate(zip(got, want)):
        torch.testing.assert_close(g.cpu(), w, msg=f"step {k}, op by op")
    again = metrics()
    assert again["graphs_compiled"] == 0 and again["strict_cold_runs"] == 0, again
    assert again["strict_fast_path_hits"] >= 12 * 5, again


def test_new_numbers_find_the_programs_a_cold_run_compiled():
    """A learning-rate schedule gives AdamW's foreach ops new numbers every step, so from the second step they take
    the strict path, not their plans: each op's one-op program has one parameter order whichever path made it, so
    they find the programs the first step's cold run compiled (each compiled one more program, steps 2-4, before),
    and the parameters stay CPU's."""
    x_cpu, y_cpu = randn(9, 11), randint(0, 5, 9)

    def train(device, steps, per_step=None):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(11, 23), torch.nn.GELU(), torch.nn.Linear(23, 5)).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.8 ** s)
        x, y = x_cpu.to(device), y_cpu.to(device)
        for _ in range(steps):
            before = sum(torch.tpu.metrics()["compiles_by_reason"].values())
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            sched.step()
            if per_step is not None:
                torch.tpu.synchronize()
                torch.tpu.await_compiles()
                per_step.append(sum(torch.tpu.metrics()["compiles_by_reason"].values()) - before)
        return [p.detach().cpu() for p in model.parameters()]

    per_step = []
    got = train("tpu", 6, per_step)
    want = train("cpu", 6)
    assert per_step[0] > 0 and per_step[1:] == [0] * 5, per_step
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_a_cold_run_of_writes_at_moving_positions_shares_programs():
    """A loop of element reads and writes at moving positions, new to the process: its cold run records views at
    runtime offsets, as strict mode runs them, so the one-op programs serve every position (147 programs for 24
    positions before, one per position), and the values equal CPU's."""
    def run(device):
        x = torch.zeros(7, 5, 3, device=device)
        y = torch.arange(105.0, device=device).view(7, 5, 3)
        for i in range(7):
            for j in range(3):
                x[i, j, 1] += y[i, j + 1, 2]
                x[i, :, j] = y[6 - i, :, j] * 3
        return x.cpu()
    torch.tpu.await_compiles()
    before = sum(torch.tpu.metrics()["compiles_by_reason"].values())
    got = run("tpu")
    torch.tpu.await_compiles()
    compiled = sum(torch.tpu.metrics()["compiles_by_reason"].values()) - before
    assert torch.equal(got, run("cpu"))
    assert torch.tpu.metrics()["strict_cold_runs"] >= 1
    assert compiled <= 12, f"{compiled} programs for 21 positions"


def test_a_copy_into_a_new_tensor_runs_op_by_op():
    """copy_ into a new tensor of the same type gives it the value its source holds: two storages of one value
    (generate()'s float copy of its logits). The run launches op by op, each storage with a buffer of its own:
    writing one leaves the other as it was."""
    x_cpu, w_cpu = randn(5, 7), randn(7, 9)
    torch.tpu.await_compiles()
    torch.tpu.reset_metrics()
    x, w = x_cpu.to("tpu"), w_cpu.to("tpu")
    a = (x @ w).tanh()  # new ops: a cold run starts
    b = torch.empty_like(a)
    b.copy_(a)
    c = b * 3
    want_a = (x_cpu @ w_cpu).tanh()
    torch.testing.assert_close(c.cpu(), want_a * 3)  # the run launches: a and b hold one value
    m = metrics()
    assert m["strict_cold_runs"] == 1 and m["strict_cold_run_steps"] == m["executions"] == 4, m
    b.add_(1)
    a.mul_(2)
    torch.testing.assert_close(a.cpu(), want_a * 2)
    torch.testing.assert_close(b.cpu(), want_a + 1)


def test_an_append_in_a_later_run_runs_op_by_op():
    """generate()'s token step: a float copy of the logits (two storages of one value) and the token's first
    append, in a cold run. The run launches op by op (it was compiled whole), and a second call compiles at most
    the copy as an op of its own (its cold run started by the copy was compiled whole as well, the append having
    been marked as never planned)."""
    h_cpu, w_cpu, ids_cpu = randn(2, 8), randn(8, 50), randint(0, 50, 2, 5)
    for call in range(2):
        torch.tpu.await_compiles()
        torch.tpu.reset_metrics()
        h, w, ids = h_cpu.to("tpu"), w_cpu.to("tpu"), ids_cpu.to("tpu")
        logits = h @ w
        scores = torch.empty_like(logits)
        scores.copy_(logits)
        got = torch.cat([ids, scores.argmax(-1, keepdim=True) * 2 + 1], dim=-1)
        want = torch.cat([ids_cpu, (h_cpu @ w_cpu).argmax(-1, keepdim=True) * 2 + 1], dim=-1)
        assert torch.equal(got.cpu(), want), call
        torch.tpu.await_compiles()
        m = metrics()
        assert m["strict_cold_run_steps"] == m["executions"] if call == 0 else m["graphs_compiled"] <= 1, (call, m)


def test_copies_into_new_tensors_replay_strict_plans():
    """A copy into a new tensor (`empty_like(x).copy_(x)`, `x.to(dtype)`, `x[:, ::2].contiguous()`) gives the
    new storage its dtype and shape; strict mode plans it like any other op, so from the third call on every copy
    replays its plan, with CPU's values, dtypes and strides (only the first replayed before: a new storage did not
    plan)."""
    w, h = randn(8, 16).to("tpu"), randn(2, 8).to("tpu")
    hits = []
    for _ in range(4):
        logits = h @ w
        before = metrics()["strict_fast_path_hits"]
        a = torch.empty_like(logits)
        a.copy_(logits)
        b = logits.to(torch.float64)
        c = logits[:, ::2].contiguous()
        hits.append(metrics()["strict_fast_path_hits"] - before)
        want = logits.cpu()
        for got, ref in ((a, want), (b, want.to(torch.float64)), (c, want[:, ::2].contiguous())):
            assert got.dtype == ref.dtype and got.stride() == ref.stride()
            assert torch.equal(got.cpu(), ref)
    assert hits[2:] == [3, 3], hits


def test_out_of_range_index_in_a_run_raises_at_the_op():
    table_cpu = randn(7, 4)
    rows = [randn(5, 4) for _ in range(3)]
    torch.tpu.await_compiles()
    torch.tpu.reset_metrics()
    table = table_cpu.to("tpu")
    a = (table * 3 - 1).exp()  # new ops: a cold run starts
    assert metrics()["strict_cold_runs"] == 1
    bad = torch.tensor([1, 9, 2])
    with pytest.raises(IndexError) as cpu_err:
        torch.index_select(table_cpu, 0, bad)
    with pytest.raises(IndexError, match="index out of range") as err:
        torch.index_select(a, 0, bad.to("tpu"))
    assert "aten::index_select" in str(err.value) and str(cpu_err.value) in str(err.value)
    # The run's values and those after the error are CPU's.
    b = torch.index_select(a, 0, torch.tensor([6, 0, 3]).to("tpu")) * 2
    c = torch.stack([r.to("tpu") for r in rows]).sum(0) + a[:5]
    want_a = (table_cpu * 3 - 1).exp()
    torch.testing.assert_close(a.cpu(), want_a)
    torch.testing.assert_close(b.cpu(), torch.index_select(want_a, 0, torch.tensor([6, 0, 3])) * 2)
    torch.testing.assert_close(c.cpu(), torch.stack(rows).sum(0) + want_a[:5])


def test_shape_error_in_a_run_names_the_op():
    x_cpu = randn(6, 5)
    torch.tpu.await_compiles()
    x = x_cpu.to("tpu")
    y = x.cos() * 5 + 2  # new ops: a cold run
    with pytest.raises(RuntimeError, match=r"aten::mm") as err:
        torch.mm(y, y)
    with pytest.raises(RuntimeError) as cpu_err:
        torch.mm(x_cpu, x_cpu)
    assert str(cpu_err.value).split(" (")[0] in str(err.value)
    z = torch.mm(y, y.t()).log1p()
    want_y = x_cpu.cos() * 5 + 2
    torch.testing.assert_close(z.cpu(), torch.mm(want_y, want_y.t()).log1p())
    torch.testing.assert_close(y.cpu(), want_y)


CHILD = textwrap.dedent("""
    import sys, time, json, torch
    torch.manual_seed(0)
    outs = []  # one cold run: the pool compiles its one-op programs while the host reads the first result
    for k in range(int(sys.argv[1])):
        x = torch.linspace(-1, 1, 24 + k).reshape(-1, 1).to("tpu")
        outs.append(((x * (k + 1)).sin() + x.pow(2) * 0.5).cumsum(0).softmax(0))
    vals = [o.cpu() for o in outs]
    ref = []
    for k in range(int(sys.argv[1])):
        x = torch.linspace(-1, 1, 24 + k).reshape(-1, 1)
        ref.append(((x * (k + 1)).sin() + x.pow(2) * 0.5).cumsum(0).softmax(0))
    ok = all(torch.allclose(v, r, atol=1e-6, rtol=1e-5) for v, r in zip(vals, ref))
    torch.tpu.await_compiles()
    m = torch.tpu.metrics()
    print("M", json.dumps({"ok": ok, "disk_hits": m["disk_cache_hits"], "compiled": m["graphs_compiled"]}))
""")


def child_env(cache):
    env = dict(os.environ, TORCHTPU_CACHE_DIR=str(cache), TORCHTPU_COMPILE_WORKERS="2")
    env["TORCHTPU_COLD_RUNS"] = "1"
    return env


def test_killed_during_parallel_compiles_leaves_a_usable_cache(tmp_path):
    n = 40
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(n), "kill"], env=child_env(tmp_path),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while len(list(tmp_path.glob("*.exe"))) < 3:  # some programs are on disk, many still compile
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() is not None else ""
            time.sleep(0.01)
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    entries = list(tmp_path.glob("*.exe"))
    assert 3 <= len(entries) < n * 5, len(entries)
    r = fork_server.run(CHILD, child_env(tmp_path), timeout=600, args=[n, "run"])
    assert r.returncode == 0, r.stderr
    assert "does not load" not in r.stderr and "warning" not in r.stderr, r.stderr
    m = json.loads(r.stdout.split("M ")[1])
    assert m["ok"] and m["disk_hits"] >= 1, m
    # A third process finds every program: the second one finished the pool's queue before it exited.
    r = fork_server.run(CHILD, child_env(tmp_path), timeout=600, args=[n, "run"])
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.split("M ")[1])
    assert m["ok"] and m["compiled"] == 0 and m["disk_hits"] >= 1, m


def test_fork_while_the_pool_compiles():
    xs = [randn(9 + k, 3) for k in range(8)]
    got = chain([x.to("tpu") for x in xs])  # a cold run: the pool compiles its one-op programs
    pid = os.fork()
    if pid == 0:  # the child touches no tpu tensor
        code = 0 if float(torch.ones(3).sum()) == 3.0 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    for g, w in zip(got, chain(xs)):
        torch.testing.assert_close(g.cpu(), w)
    torch.tpu.await_compiles()


TRAIN = textwrap.dedent("""
    import hashlib, json, torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.GELU(),
                                torch.nn.Linear(32, 4)).to("tpu")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    for _ in range(5):
        x, y = torch.randn(8, 16), torch.randn(8, 4)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x.to("tpu")), y.to("tpu"))
        loss.backward()
        opt.step()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    torch.tpu.await_compiles()
    m = torch.tpu.metrics()
    print("M", json.dumps({"params": h.hexdigest(), "runs": m["strict_cold_runs"], "compiled": m["graphs_compiled"],
                           "background": m["background_compiles"], "disk_hits": m["disk_cache_hits"]}))
""")


def test_values_do_not_depend_on_compile_timing_or_a_warm_cache(tmp_path):
    """Every op runs on its one-op program, in a cold run or not, whatever the pool's timing or the disk holds
    (a warm process's pool loads the programs):
    a process with a cold cache, one with that cache warm, one with a single slow compile worker and one with
    cold runs off train to the same parameters, bit for bit."""
    def train(cache, **extra):
        env = dict(child_env(cache), **extra)
        r = fork_server.run(TRAIN, env, timeout=600)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.split("M ")[1])
    cold = train(tmp_path / "shared")
    warm = train(tmp_path / "shared")
    slow = train(tmp_path / "own", TORCHTPU_COMPILE_WORKERS="1")
    off = train(tmp_path / "off", TORCHTPU_COLD_RUNS="0")
    assert cold["runs"] >= 2 and warm["runs"] == cold["runs"] == slow["runs"] and off["runs"] == 0, (cold, warm, slow, off)
    # The warm process's pool loaded what the cold one compiled: hits, not compiles.
    assert warm["compiled"] == warm["background"] == 0 and warm["disk_hits"] == cold["compiled"] > 0, (cold, warm)
    assert cold["params"] == warm["params"] == slow["params"] == off["params"], (cold, warm, slow, off)
