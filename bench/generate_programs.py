"""generate_programs: how many XLA programs greedy generate() compiles in a cold process, by new-token count.

The model and prompt are bench/generate.py's (GPT-2 from a small config, a 16-token prompt, greedy). Each cell is
one fresh process with the persistent compile cache off, so every program it needs is compiled: the count is
`graphs_compiled` over one generate() call. A count that stays the same as the token count grows means the
decoding steps share their programs. Every run's tokens must equal CPU eager's.

    python bench/generate_programs.py                                  # strict and fused, both caches, 8/16/64
    python bench/generate_programs.py --modes fused --caches static --tokens 16,64
    python bench/generate_programs.py --prompts leftpad --caches dynamic   # a batch of two, one row left-padded
    python bench/generate_programs.py --prompts beam,penalty --caches dynamic  # num_beams=4; repetition_penalty=1.3
    TORCHTPU_PAD=0 python bench/generate_programs.py                   # without padded storages
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MARK = "PROGRAMS "


def worker(mode, cache, new, prompt):
    """Runs in a fresh process: one CPU eager and one tpu generate(); prints one MARK line. prompt "leftpad" is a
    batch of two rows, the second left-padded by three tokens, with its attention mask; "beam" the one row with
    beam search (num_beams=4); "penalty" the one row with repetition_penalty=1.3."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import torch

    sys.path.insert(0, HERE)
    from generate import build

    model, ids = build()
    kw = dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0)
    extra = {}
    if prompt == "leftpad":
        ids = torch.cat([ids, ids.roll(3, dims=1)])
        mask = torch.ones_like(ids)
        ids[1, :3], mask[1, :3] = 0, 0
        extra["attention_mask"] = mask
    if prompt == "beam":
        kw["num_beams"] = 4
    if prompt == "penalty":
        kw["repetition_penalty"] = 1.3
    if cache == "static":
        kw["cache_implementation"] = "static"
    with torch.no_grad():
        want = model.generate(ids, **kw, **extra, **({"disable_compile": True} if cache == "static" else {}))
    torch.tpu.set_mode(mode)
    model = model.to("tpu")
    torch.tpu.reset_metrics()
    with torch.no_grad():
        got = model.generate(ids.to("tpu"), **kw, **{k: v.to("tpu") for k, v in extra.items()}).cpu()
    m = torch.tpu.metrics()
    print(MARK + json.dumps({"compiled": m["graphs_compiled"], "match": torch.equal(got, want),
                             "captured": m["compiled_programs"]}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=4)
    ap.add_argument("--modes", default="strict,fused")
    ap.add_argument("--caches", default="dynamic,static")
    ap.add_argument("--tokens", default="8,16,64")
    ap.add_argument("--prompts", default="plain",
                    help="plain (one row), leftpad (two rows, one left-padded), beam (num_beams=4), penalty "
                    "(repetition_penalty=1.3)")
    args = ap.parse_args()
    if args.worker:
        mode, cache, new, prompt = args.worker
        return worker(mode, cache, int(new), prompt)
    tokens = [int(t) for t in args.tokens.split(",")]
    env = dict(os.environ, TORCHTPU_CACHE_DIR="", HF_HUB_OFFLINE="1")
    print(f"programs compiled by one cold generate() call (TORCHTPU_PAD={os.environ.get('TORCHTPU_PAD', '1')}); "
          "tokens equal CPU's")
    print()
    print("| prompt | mode | cache | " + " | ".join(f"{n} new tokens" for n in tokens) + " |")
    print("|---|---|---|" + "---|" * len(tokens))
    for prompt, mode, cache in [(p, m, c) for p in args.prompts.split(",") for m in args.modes.split(",")
                                for c in args.caches.split(",")]:
        cells = []
        for n in tokens:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", mode, cache, str(n), prompt],
                               env=env, capture_output=True, text=True)
            line = next((x for x in r.stdout.splitlines() if x.startswith(MARK)), None)
            if line is None:
                cells.append("error: " + ((r.stderr or r.stdout).strip().splitlines() or ["no output"])[-1])
                continue
            res = json.loads(line[len(MARK):])
            cells.append(f"{res['compiled']}" + ("" if res["match"] else " (tokens differ)"))
        print(f"| {prompt} | {mode} | {cache} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
