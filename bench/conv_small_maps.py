"""conv_small_maps: convolutions whose kernel is larger than their input map, on tpu, CPU eager and JAX jit.

A ResNet's last stage on small images convolves a 2x2 or 1x1 map with 3x3 kernels. For each shape below, the
forward convolution, its input gradient and its weight gradient (ms, median of 10 after 3 warm-up calls), then a
ResNet-18 SGD step (batch 8) at 32 and 64 pixels. tpu runs in fused mode; CPU eager on two threads; JAX jit on
the XLA CPU backend in its own environment (bench/peer_envs.py), forward only. Every column runs in its own
process; --variants adds tpu columns with other environments, e.g. a build before a change:

    python bench/conv_small_maps.py --rounds 3
    python bench/conv_small_maps.py --variants "before:PYTHONPATH=/path/to/old/python"
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = [(4, 512, 2), (16, 512, 2), (4, 512, 1), (4, 256, 4), (4, 64, 16)]  # batch, channels, map size
RESNET = [32, 64]

TORCH_CHILD = r"""
import json, statistics, sys, time
import torch, torch.nn.functional as F
dev, shapes, sizes = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
torch.set_num_threads(2)
if dev == "tpu":
    import torchtpu
    torch.tpu.set_mode("fused")
sync = torch.tpu.synchronize if dev == "tpu" else (lambda: None)
def timed(f, n=10):
    for _ in range(3):
        r = f(); sync()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); r = f(); sync(); ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3
out = {}
g = torch.Generator().manual_seed(0)
for n, c, h in shapes:
    x, w, gy = (torch.randn(s, generator=g).to(dev) for s in [(n, c, h, h), (c, c, 3, 3), (n, c, h, h)])
    bw = lambda mask: torch.ops.aten.convolution_backward(gy, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)
    out[f"{n}x{c}x{h}x{h}"] = [timed(lambda: F.conv2d(x, w, padding=1)), timed(lambda: bw([True, False, False])[0]),
                               timed(lambda: bw([False, True, False])[1])]
import torchvision
for px in sizes:
    torch.manual_seed(0)
    m = torchvision.models.resnet18(num_classes=10).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(8, 3, px, px, generator=g).to(dev), torch.randint(0, 10, (8,), generator=g).to(dev)
    def step():
        loss = F.cross_entropy(m(x), y); loss.backward(); opt.step(); opt.zero_grad(); return loss.item()
    out[f"resnet18 {px}px"] = [timed(step, 8)]
print("RESULT " + json.dumps(out))
"""

JAX_CHILD = r"""
import json, statistics, sys, time
import jax, jax.numpy as jnp
out = {}
for n, c, h in json.loads(sys.argv[1]):
    x, w = jnp.ones((n, c, h, h), jnp.float32), jnp.ones((c, c, 3, 3), jnp.float32)
    f = jax.jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), ((1, 1), (1, 1)),
                                                          dimension_numbers=("NCHW", "OIHW", "NCHW")))
    for _ in range(3):
        f(x, w).block_until_ready()
    ts = []
    for _ in range(10):
        t = time.perf_counter(); f(x, w).block_until_ready(); ts.append(time.perf_counter() - t)
    out[f"{n}x{c}x{h}x{h}"] = [statistics.median(ts) * 1e3]
print("RESULT " + json.dumps(out))
"""


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{cmd[0]} failed:\n{p.stderr[-2000:]}")


def parse_variants(spec):
    out = []
    for part in filter(None, (s.strip() for s in spec.split(";"))):
        label, _, assigns = part.partition(":")
        out.append((label, dict(a.split("=", 1) for a in assigns.split() if "=" in a)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--variants", default="tpu:")
    ap.add_argument("--no-jax", action="store_true")
    args = ap.parse_args()
    shapes, sizes = json.dumps(SHAPES), json.dumps(RESNET)
    columns = [("CPU eager", None)] + parse_variants(args.variants)
    results = {label: [] for label, _ in columns}
    jax_py = None
    if not args.no_jax:
        sys.path.insert(0, HERE)
        import peer_envs
        jax_py = peer_envs.python("jax")
        results["JAX jit"] = []
    for _ in range(args.rounds):
        for label, extra in columns:
            dev = "cpu" if extra is None else "tpu"
            env = dict(os.environ, **(extra or {}), TORCHTPU_CACHE_DIR="")
            results[label].append(run([sys.executable, "-c", TORCH_CHILD, dev, shapes, sizes], env))
        if jax_py:
            results["JAX jit"].append(run([jax_py, "-c", JAX_CHILD, shapes]))
    labels = list(results)
    rows = list(results["CPU eager"][0])
    print(f"ms, median of {args.rounds} round(s); per shape: forward / input gradient / weight gradient")
    print("| case | " + " | ".join(labels) + " |")
    print("|---|" + "---:|" * len(labels))
    for row in rows:
        cells = []
        for label in labels:
            runs = [r[row] for r in results[label] if row in r]
            if not runs:
                cells.append("-")
                continue
            med = [statistics.median(v[i] for v in runs) for i in range(len(runs[0]))]
            cells.append(" / ".join(f"{v:.2f}" for v in med))
        print(f"| {row} | " + " | ".join(cells) + " |")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
