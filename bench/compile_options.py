"""compile_options: XLA compile options measured on the programs the engine makes.

Dumps representative programs with TORCHTPU_DUMP_DIR: one-op programs as
strict mode compiles them (add, a 64x64 matmul, a 3x3 conv2d on 1x16x32x32,
a sum, softmax, an index gather) and two bigger ones as fused mode compiles
them (an MLP training step, a small conv net's forward and backward). Then
pjrt's BenchmarkCompileOptions compiles each program with every option set
(median compile ms, no cache) and launches it (median run µs), the sets
interleaved. Prints one markdown table with the ratio of each to the defaults.

    python bench/compile_options.py --compiles 5 --runs 300
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

# Option sets measured against the defaults ("label:spec", spec as for TORCHTPU_XLA_OPTIONS).
SETS = [
    "default:",
    "O1:xla_backend_optimization_level=1",
    "O0:xla_backend_optimization_level=0",
    "noexp:xla_llvm_disable_expensive_passes=true",
    "split1:xla_cpu_parallel_codegen_split_count=1",
    "O1+noexp:xla_backend_optimization_level=1,xla_llvm_disable_expensive_passes=true",
    "O0+noexp+split1:xla_backend_optimization_level=0,xla_llvm_disable_expensive_passes=true,"
    "xla_cpu_parallel_codegen_split_count=1",
]

# Each child program makes one kind of module; the name is the module's file name in the table.
STRICT = {
    "add": "a = torch.randn(256, 256); b = torch.randn(256, 256); r = a.to(d) + b.to(d)",
    "matmul64": "a = torch.randn(64, 64); b = torch.randn(64, 64); r = a.to(d) @ b.to(d)",
    "conv3x3": "x = torch.randn(1, 16, 32, 32); w = torch.randn(16, 16, 3, 3);"
               " r = torch.nn.functional.conv2d(x.to(d), w.to(d), padding=1)",
    "sum": "x = torch.randn(256, 256); r = x.to(d).sum(dim=1)",
    "softmax": "x = torch.randn(64, 256); r = torch.softmax(x.to(d), dim=-1)",
    "gather": "x = torch.randn(1000, 64); i = torch.randint(0, 1000, (128,)); r = x.to(d)[i.to(d)]",
}
FUSED = {
    "mlp_step": """
m = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(d)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
x = torch.randn(32, 64).to(d); y = torch.randint(0, 10, (32,)).to(d)
for _ in range(2):
    opt.zero_grad(); torch.nn.functional.cross_entropy(m(x), y).backward(); opt.step()
r = m[0].weight
""",
    "convnet_fwd_bwd": """
nn = torch.nn
m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                  nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 4)).to(d)
x = torch.randn(16, 3, 16, 16).to(d); y = torch.randint(0, 4, (16,)).to(d)
loss = torch.nn.functional.cross_entropy(m(x), y); loss.backward()
r = m[0].weight.grad
""",
}

CHILD = r"""
import sys, torch, torchtpu
torch.tpu.set_mode(sys.argv[1])
d = "tpu"
exec(sys.argv[2])
torch.tpu.synchronize() if hasattr(torch.tpu, "synchronize") else None
r.cpu()
"""


def dump(name, mode, code, out):
    """Runs code in a fresh process and copies the biggest module it compiled to out/name.mlir."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCHTPU_DUMP_DIR=tmp, TORCHTPU_CACHE_DIR="")
        subprocess.run([sys.executable, "-c", CHILD, mode, code], env=env, check=True, timeout=600)
        mods = glob.glob(os.path.join(tmp, "*.mlir"))
        if not mods:
            raise SystemExit(f"{name}: no module was dumped")
        biggest = max(mods, key=os.path.getsize)
        shutil.copy(biggest, os.path.join(out, name + ".mlir"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiles", type=int, default=5)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--modules", help="a folder of modules to reuse instead of dumping new ones")
    ap.add_argument("--sets", default=";".join(SETS))
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = args.modules or tempfile.mkdtemp(prefix="compile_options_")
    if not args.modules:
        for name, code in STRICT.items():
            dump(name, "strict", code, out)
        for name, code in FUSED.items():
            dump(name, "fused", code, out)
    env = dict(os.environ, TORCHTPU_BENCH_MODULES=out, TORCHTPU_BENCH_OPTION_SETS=args.sets,
               TORCHTPU_BENCH_COMPILES=str(args.compiles), TORCHTPU_BENCH_RUNS=str(args.runs),
               CGO_CFLAGS=f"-I{root}/build/include -O2")
    proc = subprocess.run(["go", "test", "./pjrt", "-run", "-", "-bench", "CompileOptions", "-benchtime", "1x"],
                          cwd=root, env=env, check=True, capture_output=True, text=True)
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    base = {r["module"]: r for r in rows if r["set"] == "default"}
    print(f"modules in {out}; compile: median of {args.compiles} compiles, run: median of {args.runs} launches")
    print("| program | option set | compile ms | × default | run µs | × default |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        b = base[r["module"]]
        print(f"| {r['module'][:-5]} | {r['set']} | {r['compile_ms']:.1f} | {r['compile_ms'] / b['compile_ms']:.2f} | "
              f"{r['run_us']:.1f} | {r['run_us'] / b['run_us']:.2f} |")
    small = [r for r in rows if r["module"][:-5] in STRICT] or rows
    print("\nper option set: geometric mean over the one-op programs (all programs when none is one of"
          " STRICT) of compile and run × default, and total compile ms and run µs over all programs")
    print("| option set | compile × | run × | total compile ms | total run µs |")
    print("|---|---:|---:|---:|---:|")
    for s in dict.fromkeys(r["set"] for r in rows):
        rs = [r for r in small if r["set"] == s]
        c = statistics.geometric_mean([r["compile_ms"] / base[r["module"]]["compile_ms"] for r in rs])
        u = statistics.geometric_mean([r["run_us"] / base[r["module"]]["run_us"] for r in rs])
        total_c = sum(r["compile_ms"] for r in rows if r["set"] == s)
        total_u = sum(r["run_us"] for r in rows if r["set"] == s)
        print(f"| {s} | {c:.2f} | {u:.2f} | {total_c:.0f} | {total_u:.0f} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
