"""train_gpt: a character-level GPT in plain PyTorch, then a sample of its text.

Token and position embeddings, causal self-attention through
scaled_dot_product_attention, LayerNorm, a GELU MLP, weight tying, AdamW,
gradient clipping and a cosine learning-rate schedule.

    python examples/train_gpt.py --device tpu --mode fused --steps 200
"""
import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from common import StepTimer, maybe_compile, parse_args, set_mode


def make_text(n_sentences=400, seed=0):
    """A small corpus from a toy grammar, the same on every run."""
    rng = random.Random(seed)
    subjects = ["the cat", "a dog", "the bird", "my friend", "the old man", "a child", "the teacher"]
    verbs = ["sees", "likes", "follows", "draws", "finds", "calls", "helps"]
    objects = ["the moon", "a red ball", "the river", "an apple", "the small house", "a green tree"]
    tails = ["today", "at night", "in the park", "again", "slowly", "with joy"]
    lines = []
    for _ in range(n_sentences):
        lines.append(f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} {rng.choice(tails)}.")
    return "\n".join(lines) + "\n"


class Block(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"), nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(dropout)
        self.heads = heads
        self.dropout = dropout

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, vocab, ctx=32, dim=64, heads=4, layers=2, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, dropout) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying
        self.drop = nn.Dropout(dropout)
        self.ctx = ctx

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.drop(self.tok(idx) + self.pos(pos))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def batches(data, ctx, batch, seed):
    """Yields (input, target) windows at positions drawn on CPU, the same on every device."""
    g = torch.Generator().manual_seed(seed)
    while True:
        ix = torch.randint(0, len(data) - ctx - 1, (batch,), generator=g)
        x = torch.stack([data[i:i + ctx] for i in ix])
        y = torch.stack([data[i + 1:i + ctx + 1] for i in ix])
        yield x, y


def train(device="tpu", mode=None, steps=100, seed=0, dropout=0.1, batch=16, log=print, lr=3e-3, on_step=None, compile=False):
    """Trains the GPT; returns the per-step losses, the step times, the model and the vocabulary."""
    set_mode(device, mode)
    torch.manual_seed(seed)
    text = make_text(seed=seed)
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    model = GPT(len(chars), dropout=dropout).to(device)
    step_model = maybe_compile(model, device, compile)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1, betas=(0.9, 0.95))
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / warm if s < warm else 0.5 * (1 + math.cos(math.pi * (s - warm) / max(1, steps - warm))))
    timer, losses = StepTimer(device), []
    it = batches(data, model.ctx, batch, seed)
    for step in range(steps):
        xb, yb = next(it)
        xb, yb = xb.to(device), yb.to(device)
        timer.start()
        logits = step_model(xb)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), yb.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        dt = timer.stop()
        if on_step:
            on_step(step)
        if log and (step % 20 == 0 or step == steps - 1):
            log(f"step {step:4d}  loss {losses[-1]:.4f}  lr {sched.get_last_lr()[0]:.2e}  {dt * 1e3:.1f} ms")
    return losses, timer, model, chars


@torch.no_grad()
def sample(model, chars, device, n=120, seed=0, prompt="the "):
    """Samples n characters; the logits come from the device, the draw is made on the host.

    The model always sees a full window of model.ctx characters (the prompt is
    left-padded with newlines), so every step runs the same compiled program.
    """
    model.eval()
    stoi = {c: i for i, c in enumerate(chars)}
    pad = stoi.get("\n", 0)
    text = [stoi[c] for c in prompt]
    g = torch.Generator().manual_seed(seed)
    for _ in range(n):
        window = ([pad] * model.ctx + text)[-model.ctx:]
        idx = torch.tensor([window], dtype=torch.long, device=device)
        logits = model(idx)[:, -1, :]
        probs = torch.softmax(logits / 0.8, dim=-1).cpu()
        text.append(int(torch.multinomial(probs, 1, generator=g)))
    return "".join(chars[i] for i in text)


if __name__ == "__main__":
    a = parse_args("character-level GPT", steps=200)
    losses, timer, model, chars = train(a.device, a.mode, a.steps, a.seed, 0.1 if a.dropout is None else a.dropout,
                                        log=None if a.quiet else print, compile=a.compile)
    print(f"final loss {losses[-1]:.4f}  median step {timer.median() * 1e3:.2f} ms")
    print("sample:")
    print(sample(model, chars, a.device))
