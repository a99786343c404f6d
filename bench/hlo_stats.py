"""hlo_stats: what XLA made of a program, counted from its optimized HLO.

XLA writes the optimized HLO of every program it compiles when asked
(TORCHTPU_XLA_OPTIONS=xla_dump_to=DIR for ours, XLA_FLAGS=--xla_dump_to=DIR
for JAX); this reads the *cpu_after_optimizations.txt file of a dump folder
and counts:

- kernels: the instructions of the entry computation that do work (each
  fusion is one kernel; parameters, constants, tuples and bitcasts are free),
  split into loop fusions, reduction fusions (kInput), output fusions,
  library calls (kCustom fusions and custom-calls: oneDNN, XNNPACK, YNNPACK)
  and unfused instructions;
- dots and convolutions anywhere in the program;
- copies and transposes in the entry computation (real memory moves; inside a
  fusion they are only index arithmetic);
- gathers and scatters anywhere;
- f64 values: instructions anywhere that compute an f64 result (parameters
  and constants aside: scalars that enter as f64 and are converted once).

    python bench/hlo_stats.py DUMP_DIR [DUMP_DIR ...]

bench/floors.py prints these counts for our program and JAX's, side by side,
for every workload.
"""
import collections
import glob
import os
import re
import sys

FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}
# An instruction line: "  [ROOT ]%name = TYPE opcode(operands), attributes".
INSTR = re.compile(r"^\s*(?:ROOT\s+)?%\S+\s*=\s*(.*?)\s([a-z][\w-]*)\(")
KIND = re.compile(r"kind=(k\w+)")
COLUMNS = ("kernels", "loop", "reduction", "output", "library", "unfused", "dot", "convolution",
           "copy/transpose", "gather/scatter", "f64")


def optimized_hlo(folder):
    """Returns the path of the largest optimized-HLO file under folder."""
    files = glob.glob(os.path.join(folder, "**", "*cpu_after_optimizations.txt"), recursive=True)
    if not files:
        raise FileNotFoundError(f"no *cpu_after_optimizations.txt under {folder}")
    return max(files, key=os.path.getsize)


def count(text):
    """Returns the counts (COLUMNS) of one optimized HLO module's text."""
    c = collections.Counter({k: 0 for k in COLUMNS})
    in_entry = False
    for line in text.splitlines():
        if line.startswith("ENTRY "):
            in_entry = True
            continue
        if in_entry and line.startswith("}"):
            in_entry = False
            continue
        m = INSTR.match(line)
        if not m:
            continue
        typ, op = m.group(1), m.group(2)
        if typ.startswith("f64[") and op not in ("parameter", "constant"):
            c["f64"] += 1
        if op in ("dot", "convolution"):
            c[op] += 1
        if op in ("gather", "scatter"):
            c["gather/scatter"] += 1
        if not in_entry or op in FREE:
            continue
        c["kernels"] += 1
        if op in ("copy", "transpose"):
            c["copy/transpose"] += 1
        if op == "custom-call":
            c["library"] += 1
        elif op == "fusion":
            k = KIND.search(line)
            kind = k.group(1) if k else ""
            c[{"kLoop": "loop", "kInput": "reduction", "kOutput": "output"}.get(kind, "library")] += 1
        else:
            c["unfused"] += 1
    return c


def stats(folder):
    """Returns the counts of the optimized HLO dumped under folder."""
    with open(optimized_hlo(folder)) as f:
        return count(f.read())


def main():
    folders = sys.argv[1:]
    if not folders:
        sys.exit(__doc__)
    print("| dump | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---:|" * len(COLUMNS))
    for d in folders:
        c = stats(d)
        print(f"| {d} | " + " | ".join(str(c[k]) for k in COLUMNS) + " |")


if __name__ == "__main__":
    main()
