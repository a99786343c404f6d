"""Quick first compiles (engine/quick_compile.go): strict mode compiles a new small program with LLVM's
optimizations off, and compiles it again with the usual options in the background once it runs in a later
step. A training loop's losses, gradients and parameters stay CPU's through both kinds of program, the
swap is counted, the next process loads the optimized programs from disk, and
TORCHTPU_QUICK_COMPILE=0 turns it off."""
from compile_util import run

LOOP = """
import copy
torch.manual_seed(0)
torch.tpu.set_mode("strict")
model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 5))
g = torch.Generator().manual_seed(1)
batches = [(torch.randn(8, 12, generator=g), torch.randint(0, 5, (8,), generator=g)) for _ in range(6)]

def train(device, steps):
    m = copy.deepcopy(model).to(device)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    losses, grads = [], []
    for x, y in batches[:steps]:
        loss = F.cross_entropy(m(x.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        grads.append([p.grad.detach().cpu() for p in m.parameters()])
        opt.step()
        losses.append(loss.item())
        if device == "tpu" and len(losses) == 3:
            torch.tpu.await_compiles()  # from here on the optimized programs run
    return losses, grads, [p.detach().cpu() for p in m.parameters()]

torch.tpu.reset_metrics()
got = train("tpu", 6)
m = torch.tpu.metrics()
want = train("cpu", 6)
worst = 0.0
for a, b in zip(got[1] + [got[2]], want[1] + [want[2]]):
    for p, q in zip(a, b):
        worst = max(worst, ((p - q).abs().max() / q.abs().max().clamp(min=1e-6)).item())
loss_err = max(abs(p - q) / abs(q) for p, q in zip(got[0], want[0]))
report(worst=worst, loss_err=loss_err, compiled=m["graphs_compiled"], optimized=m["optimized_recompiles"],
       disk_hits=m["disk_cache_hits"], report=torch.tpu.metrics_report())
"""


def loop(tmp_path, **env):
    out, _ = run(LOOP, env={"TORCHTPU_CACHE_DIR": str(tmp_path), **env})
    return out


def test_training_matches_cpu_through_quick_and_optimized_programs(tmp_path):
    first = loop(tmp_path)
    # Gradients and parameters of every step, and the losses, agree with CPU's.
    assert first["worst"] < 1e-4 and first["loss_err"] < 1e-5, first
    # Every op's program ran in a later step, so each was compiled again, in the background.
    assert first["compiled"] > 10, first
    assert first["optimized"] >= first["compiled"] // 2, first
    assert f"  compiled again, optimized {first['optimized']} " in first["report"]
    # The next process finds the optimized programs on disk: it compiles nothing and swaps nothing.
    second = loop(tmp_path)
    assert second["worst"] < 1e-4, second
    assert (second["compiled"], second["optimized"]) == (0, 0), second
    assert second["disk_hits"] >= first["optimized"], second


def test_quick_compiles_off(tmp_path):
    out = loop(tmp_path, TORCHTPU_QUICK_COMPILE="0")
    assert out["worst"] < 1e-4 and out["optimized"] == 0, out
    assert out["compiled"] > 10, out
