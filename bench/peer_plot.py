"""peer_plot: the grouped bar chart of bench/peers.py (runs in the JAX peer environment, which has matplotlib).

    python bench/peer_plot.py summary.json out.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402


def main(src, dst):
    d = json.load(open(src))
    n_w, n_b = len(d["workloads"]), len(d["backends"])
    width = 0.8 / n_b
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * n_w + 2), 5.5))
    colors = plt.get_cmap("tab10").colors
    handles = []
    for j, label in enumerate(d["backends"]):
        xs = [i + (j - (n_b - 1) / 2) * width for i in range(n_w)]
        ys = [row[j] for row in d["ms"]]
        ax.bar([x for x, y in zip(xs, ys) if y], [y for y in ys if y], width, color=colors[j % 10])
        handles.append(Patch(color=colors[j % 10], label=label if any(ys) else label + " (not timed)"))
        for x, y in zip(xs, ys):
            if y is None:  # not timed: n/a, MISMATCH, error
                ax.text(x, 0.02, "×", ha="center", va="bottom", fontsize=8, color=colors[j % 10],
                        transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    ax.set_ylabel("median step time, ms (log scale)")
    ax.set_xticks(range(n_w))
    ax.set_xticklabels(d["workloads"])
    ax.set_title("bench/peers.py: median step time per workload (lower is better; × = not timed)")
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(handles=handles, ncol=4, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
