"""What a decoding loop computes from its growing tensors stays padded (engine/pad_ops.go): an arange of a
growing tensor's size, elementwise ops, sums, a padding mask indexed by key positions, copies to other dtypes,
and attention with the mask made so. Batched generate() with left padding builds its attention mask that way
each step; its repetition penalty gathers the scores at the growing ids and scatters them back. Every step must give CPU's values, dtypes and strides, inside a capacity and across its edge, and the
steps inside one capacity must compile nothing."""

import math

import pytest
import torch
import torch.nn.functional as F

from conftest import Draws
from test_padded import compiles, same

randn, randint = Draws(11).pair()
pytestmark = pytest.mark.usefixtures("fresh_metrics")


def mask_loop(mask, k, v, q, steps, on_step):
    """One step of batched decoding with left padding, as transformers' masks make it: the padding mask and the
    key/value cache grow by a column (and the mask is padded to a static cache's length); the step's key positions (an arange of the cache's length) are compared
    with the query's position, the padding mask is indexed by batch and key position, and the combined mask is
    turned into an additive bias for attention. on_step(k, results) sees each step's results."""
    b = mask.shape[0]
    for s in range(steps):
        mask = torch.cat([mask, mask.new_ones(b, 1)], dim=-1)
        k = torch.cat([k, q * (s + 1)], dim=-2)
        v = torch.cat([v, q - s], dim=-2)
        n = k.shape[-2]
        kv = torch.arange(n, device=q.device) + 0
        qi = torch.arange(1, device=q.device) + (n - 1)
        causal = kv[None, None, None, :] <= qi[None, None, :, None]
        pad = mask.bool()[torch.arange(b, device=q.device)[:, None, None, None], kv[None, None, None, :]]
        allowed = causal & pad
        bias = torch.where(allowed, torch.tensor(0.0, device=q.device), torch.tensor(float("-inf"), device=q.device))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        seen = mask.sum()
        valid = (mask.long().sum(dim=-1, keepdim=True), (kv * 2 - 1).clone(), mask.to(torch.float32) * 0.5)
        # A static cache's mask: the padding mask padded with zeros (or cut) to the cache's fixed length.
        fixed = F.pad(mask, (0, 60 - mask.shape[-1])).bool()[:, None, None, :] & (kv.new_ones(60) > 0)
        on_step(s, dict(mask=mask, kv=kv, allowed=allowed, bias=bias, out=out, seen=seen, valid=valid, k=k,
                        fixed=fixed))
    return mask, k, v


def start(n):
    mask = torch.ones(2, n, dtype=torch.long)
    mask[1, :3] = 0  # the second row is left-padded
    return mask, randn(2, 4, n, 8), randn(2, 4, n, 8), randn(2, 4, 1, 8)


@pytest.mark.parametrize("n", [10, 120])  # inside the first capacity (128), and across its edge
def test_a_left_padded_mask_over_a_growing_cache_matches_cpu(mode, n):
    mask, k, v, q = start(n)
    want = {}
    mask_loop(mask, k, v, q, 16, lambda s, r: want.setdefault(s, r))

    def check(s, r):
        w = want[s]
        for name in ("mask", "kv", "allowed", "bias", "seen", "k", "fixed"):
            same(r[name], w[name])
        for g, x in zip(r["valid"], w["valid"]):
            same(g, x)
        same(r["out"], w["out"], atol=2e-6, rtol=2e-5)
    mask_loop(*(t.to("tpu") for t in (mask, k, v, q)), 16, check)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_mask_steps_inside_one_capacity_compile_nothing(mode):
    mask, k, v, q = start(10)
    outs, marks = [], {}
    # Aranges of many other starts, before the loop and at every step, as other code of a long process makes
    # them: the loop's own aranges keep their recent lengths (engine/pad.go, Grows). And aranges of every length
    # the loop reaches, made before it plain: no plan learned for them may replay in the loop (Needs.Grows).
    for s in range(600):
        torch.arange(s, s + 3, device="tpu")
    for n in range(11, 51):
        torch.arange(n, device="tpu")
    torch.tpu.synchronize()
    torch.tpu.await_compiles()  # strict mode compiles those in the background: counted before the loop

    def step(s, r):
        outs.append(r["out"])
        torch.tpu.synchronize()
        torch.tpu.await_compiles()
        marks[s] = compiles()
        for j in range(20):
            torch.arange(1000 + 20 * s + j, 1002 + 20 * s + j, device="tpu")
    mask_loop(*(t.to("tpu") for t in (mask, k, v, q)), 40, step)
    want = []
    mask_loop(mask, k, v, q, 40, lambda s, r: want.append(r["out"]))
    for g, w in zip(outs, want):
        same(g, w, atol=2e-6, rtol=2e-5)
    # Step 0 appends to the prompt, step 1 starts the padding and step 2 is the first whose key positions are
    # an arange of a padded size; from then on every size up to 128 runs the same programs.
    assert marks[39] == marks[3], [(s, c) for s, c in sorted(marks.items()) if c != marks.get(s - 1)]


def test_an_index_past_a_padded_size_still_raises():
    # The padded mask is read as held only where the key positions are known to lie below its size; an index
    # at the size reads nothing padded and raises as on CPU.
    torch.tpu.set_mode("fused")
    m = torch.ones(2, 10, dtype=torch.long, device="tpu")
    for _ in range(3):
        m = torch.cat([m, m[:, :1]], dim=-1)
    bad = torch.arange(m.shape[1] + 1, device="tpu")
    with pytest.raises(IndexError, match="out of bounds"):
        m[torch.arange(2, device="tpu")[:, None], bad[None, :]].cpu()
    assert torch.equal(m.cpu(), torch.ones(2, 13, dtype=torch.long))


def penalty_loop(ids, steps, on_step, vocab=16, penalty=1.3):
    """Greedy decoding with generate()'s repetition penalty, as transformers applies it to growing ids: the
    ids clamped to the vocabulary, the scores padded by a column, gathered at the ids, penalized and scattered
    back (duplicate ids scatter the same value); a mask of the tokens seen scattered in place."""
    for s in range(steps):
        base = torch.arange(vocab, dtype=torch.float32, device=ids.device)
        scores = ((base * 7 + s * 3) % vocab - 5).expand(ids.shape[0], -1)
        x = ids.clamp(max=vocab)
        padded = F.pad(scores, (0, 1))
        got = torch.gather(padded, 1, x)
        got = torch.where(got < 0, got * penalty, got / penalty)
        out = padded.scatter(1, x, got)[..., :vocab]
        seen = torch.zeros(ids.shape[0], vocab + 1, dtype=torch.bool, device=ids.device)
        seen.scatter_(1, x, True)
        ids = torch.cat([ids, out.argmax(-1, keepdim=True)], dim=-1)
        on_step(s, dict(out=out, seen=seen, ids=ids, gathered=got))


def steps_match_cpu(loop, start, steps=12):
    """Runs loop(start, steps, on_step) on CPU, then on tpu from start's copy: every step's results must be CPU's
    (values, dtypes, strides)."""
    want = {}
    loop(start, steps, lambda s, r: want.setdefault(s, r))

    def check(s, r):
        for name, w in want[s].items():
            same(r[name], w, **({"atol": 1e-5, "rtol": 1e-5} if w.is_floating_point() else {}))
    loop(start.to("tpu"), steps, check)


def steps_compile_nothing(loop, start, key, steps=40):
    """Runs loop on tpu, reading result key to the host each step (as generate()'s stop check does), then on CPU:
    the values must agree, and the steps from the fourth on must compile nothing (step 0 appends to the start,
    step 1 starts the padding, step 2 is the first on a padded size)."""
    got, marks = [], {}

    def step(s, r):
        got.append(r[key].cpu())
        torch.tpu.await_compiles()
        marks[s] = compiles()
    loop(start.to("tpu"), steps, step)
    want = []
    loop(start, steps, lambda s, r: want.append(r[key]))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    assert marks[steps - 1] == marks[3], [(s, c) for s, c in sorted(marks.items()) if c != marks.get(s - 1)]


def test_a_repetition_penalty_over_growing_ids_matches_cpu(mode):
    steps_match_cpu(penalty_loop, randint(0, 16, 2, 10))


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_penalty_steps_inside_one_capacity_compile_nothing(mode):
    steps_compile_nothing(penalty_loop, randint(0, 16, 3, 9), "ids")  # shapes the test above does not run


def bias_loop(k, steps, on_step, buckets=8, max_distance=16):
    """T5's relative position bias over a growing cache, as transformers computes it each decoding step: the key
    positions (an arange of the cache's length) less the query's, bucketed through zeros_like, full_like (new
    tensors filled with one value), a log and a where, looked up in an embedding, permuted to [1, heads, 1, keys]
    and made contiguous as attention's mask."""
    emb = torch.arange(buckets * 4, dtype=torch.float32, device=k.device).reshape(buckets, 4) * 0.25 - 3
    for s in range(steps):
        k = torch.cat([k, k[:, :, -1:] * 0.5 + 0.25], dim=-2)
        n = k.shape[-2]
        rel = torch.arange(n, device=k.device)[None, :] - (torch.arange(1, device=k.device)[:, None] + (n - 1))
        rel = -torch.min(rel, torch.zeros_like(rel))
        exact = buckets // 2
        large = exact + (torch.log(rel.float() / exact) / math.log(max_distance / exact) *
                         (buckets - exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, buckets - 1))
        bucket = 0 + torch.where(rel < exact, rel, large)
        bias = F.embedding(bucket, emb).permute([2, 0, 1]).unsqueeze(0).contiguous()
        out = F.scaled_dot_product_attention(k[:, :, -1:], k, k, attn_mask=bias)
        on_step(s, dict(bucket=bucket, bias=bias, out=out))


def test_a_relative_position_bias_over_a_growing_cache_matches_cpu(mode):
    steps_match_cpu(bias_loop, randn(1, 4, 5, 8))


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_bias_steps_inside_one_capacity_compile_nothing(mode):
    steps_compile_nothing(bias_loop, randn(1, 4, 6, 8), "out")  # a length the test above does not run
