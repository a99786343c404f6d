"""What the engine hands XLA: Python numbers, donation and the structural program cache."""
import glob
import os
import textwrap

import pytest
import torch
import torch.nn.functional as F

import fork_server

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_dumped(code, dump_dir, extra_env=None):
    """Runs code in a process of its own (tests/fork_server.py) with TORCHTPU_DUMP_DIR set; returns the dumped
    modules."""
    env = dict(os.environ, TORCHTPU_DUMP_DIR=str(dump_dir), **(extra_env or {}))
    r = fork_server.run(textwrap.dedent(code), env, ROOT, 300)
    assert r.returncode == 0, r.stderr[-4000:]
    return {os.path.basename(p): open(p).read() for p in glob.glob(os.path.join(dump_dir, "*.mlir"))}


def test_pow_by_a_special_number_lowers_without_power(tmp_path):
    # One process for every exponent: each is a program of its own in strict mode, and none holds a power.
    modules = run_dumped("""
        import torch
        x = torch.rand(64, dtype=torch.float32) + 0.5
        for exponent in (2, 3, 0.5, -0.5, -1, -2):
            got = (x.to("tpu") ** exponent).cpu()
            torch.testing.assert_close(got, x ** exponent)
    """, tmp_path)
    assert len(modules) >= 6, "TORCHTPU_DUMP_DIR received %d modules" % len(modules)
    assert not any("stablehlo.power" in m for m in modules.values()), modules


def test_pow_by_another_number_keeps_power(tmp_path):
    modules = run_dumped("""
        import torch
        x = torch.rand(64) + 0.5
        torch.testing.assert_close((x.to("tpu") ** 2.5).cpu(), x ** 2.5)
    """, tmp_path)
    assert any("stablehlo.power" in m for m in modules.values())


def test_integer_arange_lowers_without_float64(tmp_path):
    # A GPT's positions: integer arithmetic end to end, no f64 values for XLA to compute.
    modules = run_dumped("""
        import torch
        torch.tpu.set_mode("fused")
        pos = torch.arange(3, 67, device="tpu")
        assert torch.equal((pos * 2).cpu(), torch.arange(3, 67) * 2)
    """, tmp_path)
    assert modules, "TORCHTPU_DUMP_DIR received no module"
    assert not any("f64" in m for m in modules.values()), modules


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_special_pow_matches_cpu_in_other_float_dtypes(dtype):
    x = (torch.rand(257, dtype=torch.float32) * 3 + 0.1).to(dtype)
    for p in (0, 1, 2, 3, 0.5, -0.5, -1, -2):
        torch.testing.assert_close((x.to("tpu") ** p).cpu(), x ** p)


def test_learning_rate_schedule_compiles_nothing_after_warm_up():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    cpu_model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    cpu_model.load_state_dict(model.state_dict())
    model = model.to("tpu")
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    runs = []
    for m, dev in ((cpu_model, "cpu"), (model, "tpu")):
        opt = torch.optim.AdamW(m.parameters(), lr=0.05)
        # Warm-up from 0, then cosine decay back to exactly 0 at the last step.
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: s / 3 if s < 3 else 0.5 * (1 + torch.cos(torch.tensor((s - 3) / 16 * 3.141592653589793)).item()))
        xs, ys = x.to(dev), y.to(dev)
        compiled, losses = [], []
        if dev == "tpu":
            torch.tpu.set_mode("fused")
            torch.tpu.reset_metrics()
        try:
            for _ in range(20):
                opt.zero_grad()
                loss = ((m(xs) - ys) ** 2).mean()
                loss.backward()
                opt.step()
                sched.step()
                losses.append(loss.item())
                if dev == "tpu":
                    compiled.append(torch.tpu.metrics()["graphs_compiled"])
        finally:
            if dev == "tpu":
                torch.tpu.synchronize()
                torch.tpu.set_mode("strict")
        runs.append((losses, compiled))
    (cpu_losses, _), (tpu_losses, compiled) = runs
    torch.testing.assert_close(torch.tensor(tpu_losses), torch.tensor(cpu_losses), rtol=1e-4, atol=1e-6)
    # The first step creates AdamW's state (its own program); from the second on, one program serves
    # every learning rate, 0 included.
    assert compiled[1:] == [compiled[1]] * 19, compiled


def test_donated_parameter_keeps_every_view_correct():
    def run(dev, donate=True):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dev)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        w = model[0].weight
        row, col, t = w[3], w[:, 5], w.t()          # views of a parameter that updates in place
        alias = w.detach()                          # shares the storage
        x = torch.randn(8, 16).to(dev)
        for _ in range(4):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        return [v.detach().cpu().clone() for v in (w, row, col, t, alias, model[2].bias)]

    want = run("cpu")
    torch.tpu.set_mode("fused")
    try:
        torch.tpu.reset_metrics()
        got = run("tpu")
        donated = torch.tpu.metrics()["donated_buffers"]
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
    assert donated > 0
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-6)


def test_no_donation_gives_the_same_parameters(tmp_path):
    code = """
        import torch
        torch.tpu.set_mode("fused")
        torch.manual_seed(0)
        m = torch.nn.Linear(8, 8).to("tpu")
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = torch.randn(4, 8).to("tpu")
        for _ in range(3):
            opt.zero_grad(); m(x).sum().backward(); opt.step()
        print(repr(m.weight.detach().cpu().flatten().tolist()), torch.tpu.metrics()["donated_buffers"] > 0)
    """
    outs = []
    for donate in ("1", "0"):
        env = dict(os.environ, TORCHTPU_DONATE=donate)
        r = fork_server.run(textwrap.dedent(code), env, ROOT, 300)
        assert r.returncode == 0, r.stderr[-4000:]
        outs.append(r.stdout.split())
    assert outs[0][-1] == "True" and outs[1][-1] == "False"
    assert outs[0][:-1] == outs[1][:-1]


def test_repeated_fused_step_hits_the_program_cache():
    x = torch.randn(64, 64).to("tpu")
    torch.tpu.set_mode("fused")
    try:
        for i in range(4):
            if i == 1:
                torch.tpu.reset_metrics()
            y = torch.relu(x @ x + 1.5).sum(0)
            y.cpu()
        m = torch.tpu.metrics()
    finally:
        torch.tpu.set_mode("strict")
    assert m["graphs_compiled"] == 0 and m["cache_hits"] >= 3, m


def test_strict_fast_path_replays_with_the_right_values():
    torch.tpu.set_mode("strict")
    a, b = torch.randn(5, 6), torch.randn(5, 6)
    ta, tb = a.to("tpu"), b.to("tpu")
    torch.tpu.reset_metrics()
    for i in range(5):
        # Same signatures every round, new values every round.
        got = (ta * (i + 0.25) + tb).relu().cpu()
        torch.testing.assert_close(got, (a * (i + 0.25) + b).relu())
        ta.add_(tb, alpha=0.5)
        a.add_(b, alpha=0.5)
    assert torch.tpu.metrics()["strict_fast_path_hits"] > 0
    torch.testing.assert_close(ta.cpu(), a)


def fused_steps(step, inputs):
    """Runs step on each input in fused mode; returns the results and the fast path's metrics."""
    torch.tpu.set_mode("fused")
    try:
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        outs = [step(x) for x in inputs]
        m = torch.tpu.metrics()
    finally:
        torch.tpu.set_mode("strict")
    return outs, m


def test_fused_fast_path_replays_with_the_right_values():
    # The same ops on new values each round: from the second round on, every op pastes the ops
    # its first call recorded or, matching the first round's step tape, records nothing at all,
    # and the program is the first round's again.
    w = torch.randn(6, 6)
    tw = w.to("tpu")

    def step(x):
        y = torch.softmax(x @ tw, dim=-1) * 2 + x.clamp(-1, 1)
        y.mul_(0.5)
        return y.sum(0).cpu()

    xs = [torch.randn(4, 6) for _ in range(4)]
    outs, m = fused_steps(step, [x.to("tpu") for x in xs])
    for x, got in zip(xs, outs):
        y = torch.softmax(x @ w, dim=-1) * 2 + x.clamp(-1, 1)
        torch.testing.assert_close(got, (y * 0.5).sum(0))
    assert m["fused_fast_path_hits"] + m["step_replay_ops"] >= 3 * 6, m
    assert m["cache_misses"] == 1, m


def test_fused_fast_path_gives_a_first_write_its_shape():
    # copy_ into a fresh storage shapes it; a pasted or step-replayed copy_ must shape it too, or
    # later reads would see zeros.
    def step(src):
        t = torch.empty(3, 4, device="tpu")
        t.copy_(src)
        return (t * 2).cpu()

    xs = [torch.randn(3, 4) for _ in range(3)]
    outs, m = fused_steps(step, [x.to("tpu") for x in xs])
    for x, got in zip(xs, outs):
        torch.testing.assert_close(got, x * 2)
    assert m["fused_fast_path_hits"] + m["step_replay_ops"] >= 4, m


def test_fused_fast_path_tells_shared_values_apart():
    # b holds the same graph value as a in the first round; a plan made there would read one
    # input for both, so the op is not planned, and the third round (a and b differ) stays right.
    def step(x):
        a = x * 2
        b = a.clone() if x[0, 0].item() < 100 else a + 1
        return (a + b * 3).cpu()

    xs = [torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3) + 200]
    outs, _ = fused_steps(step, [x.to("tpu") for x in xs])
    for x, got in zip(xs, outs):
        a = x * 2
        b = a.clone() if x[0, 0].item() < 100 else a + 1
        torch.testing.assert_close(got, a + b * 3)


def test_fused_fast_path_keeps_index_checks():
    # The first index_select reads indices whose range the engine knows and is planned; indices
    # uploaded with an out-of-range value have another known range, so the call takes the full
    # path and raises.
    w = torch.randn(10, 3)
    tw = w.to("tpu")
    torch.tpu.set_mode("fused")
    try:
        for _ in range(2):
            torch.testing.assert_close(tw.index_select(0, torch.arange(5, device="tpu")).cpu(), w[:5])
        with pytest.raises(IndexError, match="index out of range"):
            tw.index_select(0, torch.tensor([0, 12]).to("tpu")).cpu()
    finally:
        torch.tpu.set_mode("strict")


def test_fused_fast_path_never_replays_random_draws():
    torch.tpu.set_mode("fused")
    try:
        x = torch.ones(1000, device="tpu")
        a, b = (torch.nn.functional.dropout(x, 0.5).cpu() for _ in range(2))
    finally:
        torch.tpu.set_mode("strict")
    assert not torch.equal(a, b)


def test_fused_fast_path_off_gives_the_same_values(tmp_path):
    code = """
        import torch
        torch.tpu.set_mode("fused")
        torch.manual_seed(0)
        x, w = torch.randn(8, 8).to("tpu"), torch.randn(8, 8).to("tpu")
        for i in range(3):
            x = torch.tanh(x @ w) + x
        print(repr(x.sum().item()), torch.tpu.metrics()["fused_fast_path_hits"])
    """
    out = {}
    for flag in ("1", "0"):
        r = fork_server.run(textwrap.dedent(code), dict(os.environ, TORCHTPU_FUSED_FAST_PATH=flag), ROOT, 300)
        assert r.returncode == 0, r.stderr
        out[flag] = r.stdout.split()
    assert out["1"][0] == out["0"][0]
    assert int(out["1"][1]) > 0 and int(out["0"][1]) == 0, out


def test_strict_fast_path_respects_aliasing_and_views():
    x = torch.arange(12.0).reshape(3, 4)
    y = torch.ones(3, 4)
    tx, ty = x.clone().to("tpu"), y.to("tpu")
    for _ in range(3):
        tx.add_(ty)            # recorded with two storages
        x.add_(y)
    for _ in range(3):
        tx.add_(tx)            # same op, one storage: another signature
        x.add_(x)
    col = tx[:, 1]             # a view of the updated storage
    for _ in range(3):
        col.mul_(2.0)
        x[:, 1].mul_(2.0)
    torch.testing.assert_close(tx.cpu(), x)
    torch.testing.assert_close(col.cpu(), x[:, 1])


def test_strict_fast_path_never_replays_random_draws():
    torch.manual_seed(0)
    t = torch.empty(1000, device="tpu")
    draws = [t.uniform_().cpu().clone() for _ in range(3)]
    assert not torch.equal(draws[0], draws[1]) and not torch.equal(draws[1], draws[2])
    torch.manual_seed(0)
    again = torch.empty(1000, device="tpu").uniform_().cpu()
    assert torch.equal(again, draws[0])


def test_strict_fast_path_checks_memory_limit(tmp_path):
    code = """
        import torch
        x = torch.zeros(1024, device="tpu")           # 4 KiB
        keep = [x + 1 for _ in range(3)]              # the signature is planned
        try:
            keep += [x + 1 for _ in range(100)]
        except torch.OutOfMemoryError as e:
            print("OOM", "out of memory" in str(e))
        print(float((keep[0] + keep[1]).sum()))
    """
    env = dict(os.environ, TORCHTPU_MEMORY_LIMIT="40K")
    r = fork_server.run(textwrap.dedent(code), env, ROOT, 300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["OOM", "True", "2048.0"], r.stdout


ADAMW_PEAK = """
    import sys, torch
    torch.tpu.set_mode("fused")
    torch.manual_seed(0)
    m = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)]).to("tpu")
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, fused=sys.argv[1] == "fused")
    x = torch.randn(4, 256).to("tpu")
    S = 4 * sum(p.numel() * 4 for p in m.parameters())   # parameters + grads + two moments
    for i in range(3):
        opt.zero_grad()
        m(x).square().mean().backward()
        if i == 2:
            torch.tpu.synchronize()
            torch.tpu.reset_peak_memory_stats()
        opt.step()
    torch.tpu.synchronize()
    print(torch.tpu.max_memory_allocated() / S)
"""


@pytest.mark.parametrize("impl", ["fused", "foreach"])
def test_adamw_step_updates_in_place(impl):
    ratios = {}
    for donate in ("1", "0"):
        env = dict(os.environ, TORCHTPU_DONATE=donate)
        r = fork_server.run(textwrap.dedent(ADAMW_PEAK), env, ROOT, 300, args=[impl])
        assert r.returncode == 0, r.stderr[-4000:]
        ratios[donate] = float(r.stdout.split()[-1])
    # With donation the step's peak stays within 1.3x the state (parameters, grads, moments);
    # without, every overwritten tensor briefly exists twice.
    assert ratios["1"] <= 1.3, ratios
    assert ratios["0"] >= 1.5, ratios


@pytest.mark.parametrize("mode", ["strict", "fused"])
def test_batches_sliced_on_the_device_share_one_program(mode):
    data = torch.randn(64, 8)
    w = torch.randn(8, 3)
    tdata, tw = data.to("tpu"), w.to("tpu")
    torch.tpu.set_mode(mode)
    try:
        got = []
        for i in range(8):
            if i == 2:
                torch.tpu.synchronize()
                torch.tpu.reset_metrics()
            xb = tdata[i * 8:(i + 1) * 8]          # a window that starts somewhere else each step
            got.append((xb @ tw).tanh().sum(0).cpu())
        compiled = torch.tpu.metrics()["graphs_compiled"]
    finally:
        torch.tpu.set_mode("strict")
    for i, g in enumerate(got):
        torch.testing.assert_close(g, (data[i * 8:(i + 1) * 8] @ w).tanh().sum(0))
    assert compiled == 0


def test_uploaded_targets_keep_the_loss_in_the_step_graph():
    # Targets uploaded whole from the host have a known range, so cross_entropy checks them
    # without reading the device: a fused training step runs its three programs (forward, backward,
    # optimizer step) and no flush of its own.
    torch.tpu.set_mode("fused")
    try:
        torch.manual_seed(0)
        model = torch.nn.Linear(6, 4).to("tpu")
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 6), torch.randint(0, 4, (8,))
        xt, yt = x.to("tpu"), y.to("tpu")
        ref = torch.nn.Linear(6, 4)
        ref.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
        ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        for _ in range(3):
            loss = torch.nn.functional.cross_entropy(model(xt), yt)
            opt.zero_grad()
            loss.backward()
            opt.step()
            want = torch.nn.functional.cross_entropy(ref(x), y)
            ref_opt.zero_grad()
            want.backward()
            ref_opt.step()
            torch.testing.assert_close(loss.item(), want.item(), rtol=1e-5, atol=1e-6)
        m = torch.tpu.metrics()
        assert m["flushes_by_reason"] == {"backward start": 3, "backward end": 3, "step mark": 3}, m["flushes_by_reason"]
        assert m["executions"] == 9, m["executions"]
        # An uploaded target out of range is still an error at the call.
        with pytest.raises(IndexError, match="Target 4 is out of bounds"):
            torch.nn.functional.cross_entropy(model(xt), torch.tensor([0, 4, 1, 2, 3, 0, 1, 2]).to("tpu"))
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")


@pytest.mark.parametrize("start,step", [(0, 1), (5, -1), (2, 3)])
def test_arange_positions_keep_the_embedding_in_the_graph(start, step):
    # arange knows its values, so an embedding indexed by positions made on the device (a GPT's
    # position embedding) is checked without a device read: no flush before the step's end.
    torch.tpu.set_mode("fused")
    try:
        emb = torch.nn.Embedding(12, 3)
        temb = torch.nn.Embedding(12, 3).to("tpu")
        temb.load_state_dict(emb.state_dict())
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        pos = torch.arange(start, start + 4 * step, step, device="tpu")
        got = temb(pos) * 2
        assert torch.tpu.metrics()["executions"] == 0
        torch.testing.assert_close(got.cpu(), emb(torch.arange(start, start + 4 * step, step)) * 2)
        assert torch.tpu.metrics()["flushes_by_reason"] == {"to-host read": 1}
        # Positions past the table are still an error at the call.
        with pytest.raises((IndexError, RuntimeError), match="index out of range"):
            temb(torch.arange(10, 14, device="tpu"))
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_of_max_pool_indices_checks_them_without_a_device_read(dims):
    # max_unpool refuses indices past its output plane, as CPU does; indices that max_pool made on the device are
    # known to lie in the input plane, so the check reads nothing and the pair stays in one graph.
    pool, unpool = [(F.max_pool1d, F.max_unpool1d), (F.max_pool2d, F.max_unpool2d), (F.max_pool3d, F.max_unpool3d)][dims - 1]
    x = torch.randn((2, 3) + (6,) * dims)
    torch.tpu.set_mode("fused")
    try:
        xt = x.to("tpu")
        torch.tpu.synchronize()
        torch.tpu.reset_metrics()
        y, i = pool(xt, 2, return_indices=True)
        z = unpool(y * 2, i, 2)
        assert torch.tpu.metrics()["executions"] == 0
        yc, ic = pool(x, 2, return_indices=True)
        torch.testing.assert_close(z.cpu(), unpool(yc * 2, ic, 2))
        assert torch.tpu.metrics()["flushes_by_reason"] == {"to-host read": 1}
    finally:
        torch.tpu.synchronize()
        torch.tpu.set_mode("strict")
