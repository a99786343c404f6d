"""A beam search's step, as transformers takes it: the key/value cache grows by a column and is reordered by beam
(index_select along the batch, which keeps it padded: engine/pad_ops.go), and the running sequences, gathered by
beam, get the step's token written at the step's position and read back there. That position is a window of a
tensor computed in the same program; once such a window has moved between programs it lands at runtime offsets
(engine/offsets.go), so the steps share their programs. Every step must give CPU's values, dtypes and strides,
and the steps after the first few must compile nothing. Windows that differ within one program and repeat in the
next (a projection split into query, key and value) keep their constant offsets and compile once."""

import pytest
import torch
import torch.nn.functional as F

from conftest import Draws
from test_padded import compiles, same

pytestmark = pytest.mark.usefixtures("fresh_metrics")

BEAMS, HEADS, DIM, PROMPT, STEPS = 4, 2, 8, 10, 40


def beam_loop(k, v, seqs, scores, steps, on_step):
    """steps of beam search over a cache k, v (beams, heads, length, DIM) and running sequences seqs (beams,
    PROMPT + steps) filled up to the cache's length; on_step(s, results) sees each step's results."""
    for s in range(steps):
        n = k.shape[-2]
        q = k[:, :, -1:, :] * 0.5 + 0.25  # the newest key, read at its position
        k = torch.cat([k, q], dim=-2)
        v = torch.cat([v, q - 1], dim=-2)
        logits = F.scaled_dot_product_attention(q, k, v).sum(dim=(1, 2))  # (beams, DIM)
        total = (scores[:, None] + logits.log_softmax(-1)).reshape(-1)
        top, idx = total.topk(BEAMS)
        beam, token = idx // DIM, idx % DIM
        seqs = torch.take_along_dim(seqs, beam[:, None], dim=0)
        seqs[:, n] = token
        scores = top
        k, v = k.index_select(0, beam), v.index_select(0, beam)
        on_step(s, dict(k=k, v=v, seqs=seqs, scores=scores, last=seqs[:, n].clone(), beam=beam))


def start(prompt=PROMPT):
    """The same prompt, cache and scores at every call."""
    randn, randint = Draws(23).pair()
    seqs = torch.zeros(BEAMS, prompt + STEPS + 1, dtype=torch.long)
    seqs[:, :prompt] = randint(0, DIM, 1, prompt)
    scores = torch.tensor([0.0] + [-1e9] * (BEAMS - 1))
    return randn(BEAMS, HEADS, prompt, DIM), randn(BEAMS, HEADS, prompt, DIM), seqs, scores


def test_beam_steps_match_cpu(mode):
    want = {}
    beam_loop(*start(), 16, lambda s, r: want.setdefault(s, r))

    def check(s, r):
        for name, w in want[s].items():
            tol = dict(atol=1e-5, rtol=1e-5) if w.dtype.is_floating_point else {}
            same(r[name], w, **tol)
    beam_loop(*(t.to("tpu") for t in start()), 16, check)


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_beam_steps_compile_nothing_after_the_first(mode):
    marks, got = {}, []
    prompt = PROMPT + 3  # shapes the other tests do not run, so that the programs counted are this test's

    def step(s, r):
        got.append((r["seqs"].cpu(), r["scores"].cpu()))  # a host read each step, as generate()'s stop check
        torch.tpu.await_compiles()
        marks[s] = compiles()
    beam_loop(*(t.to("tpu") for t in start(prompt)), STEPS, step)
    want = []
    beam_loop(*start(prompt), STEPS, lambda s, r: want.append((r["seqs"], r["scores"])))
    for (gs, gc), (ws, wc) in zip(got, want):
        assert torch.equal(gs, ws)
        torch.testing.assert_close(gc, wc, atol=1e-5, rtol=1e-5)
    # Step 0 appends to the prompt, step 1 starts the padding, step 2 writes at a position that moved: from
    # step 3 on every step runs the programs of the step before.
    assert marks[STEPS - 1] == marks[3], [(s, c) for s, c in sorted(marks.items()) if c != marks.get(s - 1)]


@pytest.mark.parametrize("mode", ["fused"], indirect=True)
def test_windows_that_repeat_keep_their_programs(mode):
    # Three windows of one computed tensor at three offsets, and eight writes at eight positions, in every
    # step's program: the same offsets each step, so the second step runs the first one's program.
    x, w = Draws(29).randn(6, 24), Draws(31).randn(24, 24)

    def run(x, w):
        y = x @ w
        q, k, v = y.split(8, dim=-1)
        out = torch.zeros(6, 8, device=x.device) + q
        for i in range(8):
            out[:, i] = (k[:, i] * v[:, 7 - i]).tanh()
        return out

    want = run(x, w)
    xt, wt = x.to("tpu"), w.to("tpu")
    counts = []
    for _ in range(4):
        same(run(xt, wt), want, atol=1e-5, rtol=1e-5)
        counts.append(compiles())
    assert counts[0] > 0 and counts[1:] == [counts[0]] * 3, counts
