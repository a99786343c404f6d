"""generate: how long greedy generate() takes on tpu, cold and warm, against CPU eager (and torch_xla 2.9).

The model is GPT-2 from a small config (2 layers, n_embd 128, 4 heads, vocabulary 1024, 128 positions, random
weights; nothing is downloaded), batch 1, a 16-token prompt and 64 new tokens, greedy. For each backend (CPU
eager; tpu strict, fused and compiled, the last with `torch.compile(model.forward, backend="tpu")`; torch_xla's
lazy tensors when its environment exists) and each cache (transformers' default dynamic cache, and
`cache_implementation="static"`; transformers then compiles the decoding step with the default backend,
which the tpu backend takes on tpu, and which CPU eager is told not to do), one round runs two fresh processes on a new, empty compile cache folder
(`TORCHTPU_CACHE_DIR`, or torch_xla's persistent cache): the first process times a cold call and then a second
call in the same process; the second process, on the same folder, times a warm first call. Every backend's tokens
must equal CPU eager's (greedy). Cells are medians over rounds; ratios are against CPU eager's call.

    python bench/generate.py                       # every backend and cache, 3 rounds
    python bench/generate.py --rounds 1 --backends fused --caches static
    python bench/generate.py --search beam --caches dynamic  # num_beams=4 (or penalty: repetition_penalty=1.3)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "GENERATE "
VOCAB, PROMPT, NEW = 1024, 16, 64
BACKENDS = ["cpu", "strict", "fused", "compiled", "xla-lazy"]
CACHES = ["dynamic", "static"]
SEARCHES = {"greedy": {}, "beam": {"num_beams": 4}, "penalty": {"repetition_penalty": 1.3}}


def build():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=128, n_embd=128, n_layer=2, n_head=4, resid_pdrop=0.0,
                     embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    model = GPT2LMHeadModel(cfg).eval()
    ids = torch.randint(0, VOCAB - 1, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    return model, ids


def worker(backend, cache, tokens_file, search="greedy"):
    """Runs in a fresh process: two generate() calls; prints one MARK line."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch

    t_start = time.perf_counter()
    model, ids = build()
    sync, metrics = (lambda: None), (lambda: {})
    if backend == "cpu":
        device = "cpu"
    elif backend.startswith("xla"):
        import torch_xla
        import torch_xla.runtime as xr

        xr.initialize_cache(os.environ["XLA_CACHE_DIR"], readonly=False)
        device = torch_xla.device()
        sync = torch_xla.sync
    else:
        device = "tpu"
        torch.tpu.set_mode("strict" if backend == "compiled" else backend)
        sync = torch.tpu.synchronize

        def metrics():
            m = torch.tpu.metrics()
            return {k: m[k] for k in ("graphs_compiled", "compile_seconds", "disk_cache_hits", "compiled_programs",
                                      "compiled_fallbacks", "cache_load_seconds")}
    model = model.to(device)
    if backend == "compiled":
        model.forward = torch.compile(model.forward, backend="tpu")
    kw = dict(max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0, **SEARCHES[search])
    if cache == "static":
        kw["cache_implementation"] = "static"
        if backend == "cpu":
            kw["disable_compile"] = True  # eager: transformers would compile the static decoding step with Inductor
    calls, counts, out = [], [], None
    for _ in range(2):
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(ids.to(device), **kw).cpu()
        sync()
        calls.append(time.perf_counter() - start)
        counts.append(metrics())
    ok = None
    if tokens_file and os.path.exists(tokens_file):
        ok = json.load(open(tokens_file)) == out.tolist()
    elif tokens_file:
        json.dump(out.tolist(), open(tokens_file, "w"))
    print(MARK + json.dumps({"calls": calls, "counts": counts, "match": ok, "shape": list(out.shape),
                             "process": time.perf_counter() - t_start}), flush=True)


def run_worker(backend, cache, folder, tokens_file, python, timeout, search):
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHTPU_CACHE_DIR",)}
    env.update(TORCHTPU_CACHE_DIR=folder, XLA_CACHE_DIR=folder, HF_HUB_OFFLINE="1")
    if backend == "cpu" or backend.startswith("xla"):
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    if backend.startswith("xla"):
        env.pop("PYTHONPATH", None)
        env["PJRT_DEVICE"] = "CPU"
    cmd = [python, os.path.abspath(__file__), "--worker", backend, "--cache", cache, "--tokens", tokens_file,
           "--search", search]
    try:
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout} s"}
    for line in r.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])
    last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
    if backend.startswith("xla") and "allocate" in " ".join(last).lower():
        # torch_xla keeps every program it compiled for each sequence length, each mapped in many
        # regions: 64 new tokens pass Linux's default limit of 65530 mappings, and LLVM's next mmap fails.
        with open("/proc/sys/vm/max_map_count") as f:
            last.append(f"vm.max_map_count is {f.read().strip()}; torch_xla's generate() needs more "
                        "(sysctl -w vm.max_map_count=1048576)")
    return {"error": last}


def xla_python(make):
    """The torch_xla 2.9 environment's interpreter, or None and why not."""
    sys.path.insert(0, HERE)
    import peer_envs

    path = peer_envs.env_dir("xla")
    if os.path.exists(os.path.join(path, ".complete")):
        return peer_envs.python("xla"), ""
    if not make:
        return None, f"no torch_xla 2.9 environment at {path} (--make-xla creates it from PyPI; needs the network)"
    try:
        return peer_envs.python("xla"), ""
    except Exception as e:  # noqa: BLE001 - offline or a failed install: say so and go on
        return None, f"creating the torch_xla 2.9 environment failed: {str(e).splitlines()[0]}"


def fmt(x):
    return "-" if x is None else f"{x:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--cache", default="dynamic")
    ap.add_argument("--tokens", default="")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--caches", default=",".join(CACHES))
    ap.add_argument("--make-xla", action="store_true", help="create the torch_xla environment if it is missing")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--search", default="greedy", choices=sorted(SEARCHES),
                    help="greedy; beam (num_beams=4); penalty (greedy with repetition_penalty=1.3)")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.cache, args.tokens, args.search)

    backends, caches = args.backends.split(","), args.caches.split(",")
    pythons = {b: sys.executable for b in backends}
    notes = []
    if any(b.startswith("xla") for b in backends):
        py, why = xla_python(args.make_xla)
        if py is None:
            notes.append(why)
            backends = [b for b in backends if not b.startswith("xla")]
        for b in backends:
            if b.startswith("xla"):
                pythons[b] = py
    scratch = tempfile.mkdtemp(prefix="generate-bench-")
    rows = {(b, c): [] for b in backends for c in caches}
    for rnd in range(args.rounds):
        order = backends[rnd % len(backends):] + backends[:rnd % len(backends)]
        for c in caches:
            tokens = os.path.join(scratch, f"tokens-{c}.json")
            for b in (["cpu"] if "cpu" in order else []) + [b for b in order if b != "cpu"]:
                folder = tempfile.mkdtemp(prefix=f"{b}-{c}-", dir=scratch)
                cold = run_worker(b, c, folder, tokens, pythons[b], args.timeout, args.search)
                warm = run_worker(b, c, folder, tokens, pythons[b], args.timeout, args.search)
                rows[(b, c)].append((cold, warm))
                print(f"round {rnd} {b:9s} {c:8s} cold {cold} warm {warm}", file=sys.stderr, flush=True)
    report(rows, backends, caches, args, notes)


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def report(rows, backends, caches, args, notes):
    print(f"GPT-2 (2 layers, n_embd 128, 4 heads, vocab {VOCAB}), batch 1, {PROMPT}-token prompt, {NEW} new tokens, "
          f"{args.search} {SEARCHES[args.search] or ''}; medians of {args.rounds} rounds; seconds per generate() call")
    print()
    print("| cache | backend | cold call | warm call (2nd process) | 2nd call in process | x CPU (2nd call) "
          "| programs compiled cold / warm | disk hits warm | tokens = CPU |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in caches:
        cpu = med([cold["calls"][1] for cold, _ in rows.get(("cpu", c), []) if "calls" in cold])
        for b in backends:
            runs = rows[(b, c)]
            errs = [r.get("error") for pair in runs for r in pair if "error" in r]
            good = [(cold, warm) for cold, warm in runs if "calls" in cold and "calls" in warm]
            if not good:
                print(f"| {c} | {b} | error: {errs[:1]} | | | | | | |")
                continue
            first = med([cold["calls"][0] for cold, _ in good])
            wfirst = med([warm["calls"][0] for _, warm in good])
            second = med([cold["calls"][1] for cold, _ in good])
            ratio = f"{second / cpu:.2f}" if cpu and second else "-"
            comp = [(cold["counts"][0].get("graphs_compiled"), warm["counts"][0].get("graphs_compiled"))
                    for cold, warm in good]
            comp = f"{med([a for a, _ in comp]) if comp[0][0] is not None else '-'} / " \
                   f"{med([w for _, w in comp]) if comp[0][1] is not None else '-'}"
            hits = med([warm["counts"][0].get("disk_cache_hits") for _, warm in good])
            match = {cold.get("match") for cold, _ in good} | {warm.get("match") for _, warm in good}
            print(f"| {c} | {b} | {fmt(first)} | {fmt(wfirst)} | {fmt(second)} | {ratio} | {comp} "
                  f"| {'-' if hits is None else hits} | {'reference' if b == 'cpu' else match == {True}} |")
    for n in notes:
        print(f"\nNote: {n}")


if __name__ == "__main__":
    main()
