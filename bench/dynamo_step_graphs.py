"""dynamo_step_graphs: how many graphs a compiled training step reaches the "tpu" backend as, and how many
programs it launches per step, under torch's Dynamo settings for backward().

Each configuration runs in a fresh interpreter: the default, compiled autograd
(torch._dynamo.config.compiled_autograd) and trace_autograd_ops (Dynamo traces
loss.backward() as autograd.grad), each with the loss returned as is and detached,
in strict and fused mode. Printed per run: the call_function nodes of each Dynamo
graph handed to the backend, the launches of a warm step and Dynamo's graph-break
reasons (first line each).

    python bench/dynamo_step_graphs.py
"""
import json
import subprocess
import sys

CHILD = r"""
import json, torch, torch.nn as nn, torch.nn.functional as F
import torchtpu
from torch._dynamo.utils import counters
from torchtpu.compile import backend as B
torch._dynamo.config.compiled_autograd = {autograd}
torch._dynamo.config.trace_autograd_ops = {trace_ops}
torch.tpu.set_mode({mode!r})
graphs = []
def counting(gm, example_inputs, **kw):
    graphs.append(sum(n.op == "call_function" for n in gm.graph.nodes))
    return B.tpu_backend(gm, example_inputs, **kw)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 4)).to("tpu")
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
@torch.compile(backend=counting)
def step(x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach() if {detach} else loss
x, y = torch.randn(16, 8, device="tpu"), torch.randint(0, 4, (16,), device="tpu")
for _ in range(3):
    step(x, y).item()
before = torch.tpu.metrics()["executions"]
step(x, y).item()
breaks = sorted({{k.strip().splitlines()[0][:90] for k in counters["graph_break"]}})
print("RESULT " + json.dumps({{"graphs": graphs, "launches": torch.tpu.metrics()["executions"] - before, "breaks": breaks}}))
"""


def main():
    for mode in ("strict", "fused"):
        for name, autograd, trace_ops in (("default", False, False), ("compiled_autograd", True, False),
                                          ("trace_autograd_ops", False, True)):
            for detach in (False, True):
                code = CHILD.format(autograd=autograd, trace_ops=trace_ops, mode=mode, detach=detach)
                r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
                lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
                label = f"{mode:6s} {name:18s} {'loss.detach()' if detach else 'loss':13s}"
                if r.returncode or not lines:
                    print(f"{label} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else '?'}")
                    continue
                res = json.loads(lines[-1][len("RESULT "):])
                print(f"{label} graphs {res['graphs']} launches/step {res['launches']}")
                for b in res["breaks"]:
                    print(f"    break: {b}")


if __name__ == "__main__":
    main()
