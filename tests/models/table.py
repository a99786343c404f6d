"""Turns the JSON lines that TORCHTPU_ZOO_REPORT=FILE collects during a zoo run into a Markdown table.

    TORCHTPU_ZOO_REPORT=/tmp/zoo.jsonl make test-models; python tests/models/table.py /tmp/zoo.jsonl
"""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    print("| model | mode | steps | loss gap | worst gradient error (parameter) | AdamW vs CPU's | CPU fallbacks "
          "| XLA programs (compiled graphs) | first step s | steady step s | CPU eager step s | steady / CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = r["steady_step_s"] / r["cpu_steady_step_s"]
        print(f"| {r['model']} | {r['mode']} | {r['steps']} | {r['loss_gap']:.1e} | {r['grad_err']:.1e} "
              f"(`{r['grad_param']}`) | {r.get('param_err', float('nan')):.1e} | {r['fallbacks']} "
              f"| {r['xla_compiles']} ({r['compiled_programs']}) | {r['first_step_s']:.2f} "
              f"| {r['steady_step_s']:.3f} | {r['cpu_steady_step_s']:.3f} | {ratio:.1f}x |")


if __name__ == "__main__":
    main(sys.argv[1])
