"""Tensors that grow by appending (token ids, a key/value cache) are held padded to a power-of-two capacity of
at least 128 from their second append on (engine/pad.go): each step's cat, the reads of its newest elements and
attention over the keys then run in programs that serve every size up to the capacity. Every step must give
CPU's values, dtypes and strides, inside a capacity and across its edge; the steps inside one capacity must
compile nothing; and whatever else reads, writes or binds a padded tensor must see it at its own size."""

import pytest
import torch
import torch.nn.functional as F

from conftest import Draws

randn, randint = Draws(7).pair()
pytestmark = pytest.mark.usefixtures("fresh_metrics")


def same(got, want, **tol):
    """got (tpu) equals want (CPU): values (exactly for integers), dtype, sizes and strides."""
    assert got.device.type == "tpu"
    assert got.dtype == want.dtype and got.shape == want.shape and got.stride() == want.stride(), \
        (got.dtype, got.shape, got.stride(), want.dtype, want.shape, want.stride())
    got = got.cpu()
    if want.dtype == torch.complex32:  # CPU compares no complex32: compare the float16 parts
        got, want = torch.view_as_real(got), torch.view_as_real(want)
    if want.is_floating_point():
        torch.testing.assert_close(got, want, **tol)
    else:
        assert torch.equal(got, want), (got, want)


def compiles():
    return torch.tpu.metrics()["graphs_compiled"]


def token_loop(ids, steps, on_step=None, whole=True):
    """Appends one token a step as generate() does: the next token is derived from the last one and, with
    whole, from the sum of all (a read of the whole tensor, which compiles a program per size); the position
    row grows beside it. Returns the ids and positions."""
    pos = torch.arange(ids.shape[1], device=ids.device).expand(ids.shape[0], -1)
    for k in range(steps):
        last = ids[:, -1:]
        nxt = (last * 3 + (ids.sum(dim=1, keepdim=True) if whole else 0) + k) % 1000
        ids = torch.cat([ids, nxt], dim=-1)
        pos = torch.cat([pos, pos[:, -1:] + 1], dim=-1)
        if on_step is not None:
            on_step(k, ids, pos)
    return ids, pos


@pytest.mark.parametrize("start", [16, 120])  # inside the first capacity (128), and across its edge
def test_appended_ids_match_cpu_at_every_step(mode, start):
    ids0 = randint(0, 1000, 2, start)
    want = {}
    token_loop(ids0, 20, lambda k, ids, pos: want.setdefault(k, (ids.clone(), pos.clone())))

    def check(k, ids, pos):
        w_ids, w_pos = want[k]
        same(ids, w_ids)
        same(pos, w_pos)
        same(ids[:, -1], w_ids[:, -1])           # the newest column, at a runtime offset
        same(ids[1, 3:7], w_ids[1, 3:7])         # a window that stays put
        same(ids[:, ::2], w_ids[:, ::2])         # a strided view: read at its size
        same(ids.float().mean(dim=1), w_ids.float().mean(dim=1))
        same(ids.t().contiguous(), w_ids.t().contiguous())
    token_loop(ids0.to("tpu"), 20, check)


# Debug mode checks whole values after every op and pads nothing.
@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_steps_inside_one_capacity_compile_nothing(mode):
    ids0 = randint(0, 1000, 1, 16)
    want, _ = token_loop(ids0, 112, whole=False)
    marks, newest = {}, []

    def step(k, ids, pos):
        newest.append(ids[:, -1:] * 2)  # the newest token read in the step that appended it
        torch.tpu.synchronize()  # one step, one flush, as generate()'s stop check makes it
        marks[k] = compiles()
    got, _ = token_loop(ids0.to("tpu"), 112, step, whole=False)
    same(got, want)
    assert [int(v) for v in newest] == [2 * int(v) for v in want[0, 16:]]
    # Step 0 appends to the prompt, step 1 starts the padding; from step 2 on every size up to 128 (the last
    # step fills the capacity exactly) is one set of programs, compiled at step 2.
    assert marks[111] == marks[2], [(k, v) for k, v in sorted(marks.items()) if v != marks.get(k - 1)]


def test_strict_plans_replay_growing_tensors():
    """Strict mode plans ops on growing tensors: a padded argument binds its buffer as it is, and a new result is
    held padded (or marked as an append) as the first call's was. A second loop over the same sizes replays those
    plans, writes into a padded tensor included (which leaves it plain), with CPU's values and strides at every
    step, and compiles nothing."""
    torch.tpu.set_mode("strict")

    def loop(ids, on_step):
        for k in range(12):
            ids = torch.cat([ids, (ids[:, -1:] * 3 + ids.sum(dim=1, keepdim=True) + k) % 1000], dim=-1)
            if k == 6:
                ids[:, 0] = k  # a write into the padded tensor
                ids.add_(1)
            on_step(k, ids)
        return ids

    ids0 = randint(0, 1000, 2, 9)
    want = {}
    loop(ids0, lambda k, ids: want.setdefault(k, ids.clone()))

    def check(k, ids):
        same(ids, want[k])
        same(ids[:, -2:], want[k][:, -2:])
        same(ids.float().softmax(dim=1), want[k].float().softmax(dim=1))
    counts = []
    for _ in range(2):
        torch.tpu.await_compiles()
        torch.tpu.reset_metrics()
        loop(ids0.to("tpu"), check)
        torch.tpu.await_compiles()
        m = torch.tpu.metrics()
        counts.append((m["graphs_compiled"], m["strict_fast_path_hits"], m["ops_recorded"]))
    # All but 13 ops replay: the float conversions (strict mode runs `_to_copy`'s rule every time) and the first
    # append, which the first loop ran in a cold run (such an append is left unplanned there).
    assert counts[1][0] == 0 and counts[1][2] - counts[1][1] <= 13 < counts[0][2] - counts[0][1], counts


def test_a_new_capacity_compiles_a_bounded_set_of_programs():
    torch.tpu.set_mode("fused")
    try:
        ids0 = randint(0, 1000, 1, 100)
        want, _ = token_loop(ids0, 60, whole=False)
        marks = {}

        def step(k, ids, pos):
            torch.tpu.synchronize()
            marks[k] = compiles()
        got, _ = token_loop(ids0.to("tpu"), 60, step, whole=False)
        same(got, want)
    finally:
        torch.tpu.set_mode("strict")
    # Sizes 102..128 share programs, 129 grows the capacity to 256, and 130..160 share programs again.
    grow = next(k for k in range(60) if ids0.shape[1] + k + 1 == 129)
    assert marks[grow - 1] == marks[2], marks
    assert marks[59] == marks[grow + 1], marks


def test_a_padded_tensor_read_written_and_bound_at_its_size(mode):
    ids0 = randint(0, 1000, 2, 16)
    want, _ = token_loop(ids0, 5)
    got, _ = token_loop(ids0.to("tpu"), 5)
    # Host reads: the whole tensor, a view, an element.
    same(got, want)
    assert got[1, -1].item() == want[1, -1].item()
    assert got.tolist() == want.tolist()
    # A write into it, then more appends.
    got[:, 0] = 5
    want[:, 0] = 5
    got.add_(1)
    want.add_(1)
    same(got, want)
    got2, _ = token_loop(got, 3)
    want2, _ = token_loop(want, 3)
    same(got2, want2)
    # Views of another dtype and shape, and an op with no padded lowering.
    same(got2.view(torch.int32), want2.view(torch.int32))
    same(got2.reshape(-1), want2.reshape(-1))
    same(torch.sort(got2, dim=1).values, torch.sort(want2, dim=1).values)
    # Into a compiled program as an input: captured, then replayed on another padded tensor.
    f = torch.compile(lambda x: (x * 2).sum(dim=1), backend="tpu")
    same(f(got2), (want2 * 2).sum(dim=1))
    got3, _ = token_loop(got, 3)
    same(f(got3), (want2 * 2).sum(dim=1))


def attention_loop(q0, k0, v0, steps, causal, on_step):
    """A key/value cache grown a step at a time, with attention of the newest queries over it."""
    k, v = k0, v0
    for s in range(steps):
        q = q0 + s * 0.01
        k = torch.cat([k, q.flip(-1)], dim=-2)
        v = torch.cat([v, q * 0.5], dim=-2)
        on_step(s, F.scaled_dot_product_attention(q, k, v, is_causal=causal), k, v)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("start", [8, 116])  # inside the first capacity, and across its edge
def test_attention_over_a_growing_cache_matches_cpu(mode, causal, start):
    # Decoding attends one query (causal too: then to the oldest key alone, as CPU's top-left mask does);
    # two queries check the masking of padded keys with a row dimension.
    q0, k0, v0 = randn(1, 4, 2, 16), randn(1, 4, start, 16), randn(1, 4, start, 16)
    want = {}
    attention_loop(q0, k0, v0, 20, causal, lambda s, out, k, v: want.setdefault(s, (out, k.clone(), v.clone())))

    def check(s, out, k, v):
        w_out, w_k, w_v = want[s]
        same(out, w_out, atol=2e-6, rtol=2e-5)
        same(k, w_k)
        same(v[:, :, -2:], w_v[:, :, -2:])
    attention_loop(q0.to("tpu"), k0.to("tpu"), v0.to("tpu"), 20, causal, check)


def test_attention_with_a_mask_over_a_growing_cache_matches_cpu(mode):
    # A mask has the keys' own size: attention reads the cache at its size.
    q0, k0, v0 = randn(1, 2, 1, 8), randn(1, 2, 20, 8), randn(1, 2, 20, 8)
    k, v, kt, vt = k0, v0, k0.to("tpu"), v0.to("tpu")
    for s in range(6):
        k, v = torch.cat([k, q0], dim=-2), torch.cat([v, q0 * 2], dim=-2)
        kt, vt = torch.cat([kt, q0.to("tpu")], dim=-2), torch.cat([vt, q0.to("tpu") * 2], dim=-2)
        mask = (torch.arange(k.shape[-2]) % 3 != 1).expand(1, -1)
        want = F.scaled_dot_product_attention(q0, k, v, attn_mask=mask)
        same(F.scaled_dot_product_attention(q0.to("tpu"), kt, vt, attn_mask=mask.to("tpu")), want,
             atol=2e-6, rtol=2e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bool, torch.complex64, torch.complex32], ids=str)
def test_appends_of_other_dtypes_match_cpu(dtype):
    # complex32 is stored as float16 pairs and is never padded; the others pad like the ids.
    torch.tpu.set_mode("fused")
    try:
        x0, step = randn(3, 20).to(dtype), randn(3, 1).to(dtype)
        x, xt = x0, x0.to("tpu")
        for k in range(6):
            x, xt = torch.cat([x, step], dim=1), torch.cat([xt, step.to("tpu")], dim=1)
            same(xt[:, -2:], x[:, -2:])
        same(xt, x)
    finally:
        torch.tpu.set_mode("strict")


def test_a_graph_capture_binds_a_padded_tensor_at_its_size():
    # torch.tpu.graph binds every storage its region reads by address: a padded one is first made plain.
    torch.tpu.set_mode("fused")
    try:
        ids0 = randint(0, 1000, 2, 30)
        want, _ = token_loop(ids0, 4)
        got, _ = token_loop(ids0.to("tpu"), 4)
        g = torch.tpu.TPUGraph()
        with torch.tpu.graph(g):
            out = got * 2 + got[:, -1:]
        g.replay()
        same(out, want * 2 + want[:, -1:])
        got.add_(1)  # a write into a bound storage is seen by the next replay
        g.replay()
        same(out, (want + 1) * 2 + want[:, -1:] + 1)
    finally:
        torch.tpu.set_mode("strict")


def test_the_compile_log_names_a_programs_bucket():
    # TORCHTPU_LOG=compiles (and recompiles) says which capacity a program over growing tensors serves.
    import compile_util

    _, err = compile_util.run("""
torch.tpu.set_mode("fused")
ids = torch.randint(0, 1000, (1, 100), device="tpu")
for k in range(40):   # sizes 101 to 140: capacity 128, then 256
    ids = torch.cat([ids, (ids[:, -1:] * 3 + k) % 1000], dim=-1)
    torch.tpu.synchronize()
report(size=ids.shape[1])
""", env={"TORCHTPU_LOG": "compiles"})
    lines = [ln for ln in err.splitlines() if "bucket:" in ln]
    assert any("padded to capacity 128," in ln for ln in lines), err[-3000:]
    assert any("padded to capacity 256," in ln for ln in lines), err[-3000:]
    assert all("every size up to it runs this program" in ln for ln in lines)
