"""peer_workloads_torch: the benchmark workloads in PyTorch, and the worker that times them.

Runs in the project's environment (backends cpu, inductor, strict, fused,
compiled, compiled-step: torch.compile in fused mode, one program per step; graph: the step captured as a
torch.tpu.TPUGraph and replayed) and in the torch_xla peer environment (xla-lazy, xla-openxla). Weights
and data come from <workload>.init.npz, written once by `--dump` on CPU, so every
backend (and the JAX twins) starts from the same numbers.

    python bench/peer_workloads_torch.py --backend fused --workloads gpt,norm --dir DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import train_cnn  # noqa: E402
import train_gpt  # noqa: E402
import train_mlp  # noqa: E402
from peer_timing import WORKLOADS, run_all, worker_args  # noqa: E402

GPT = dict(ctx=64, dim=128, heads=4, layers=4, batch=12)
MLP_BATCH, CNN_BATCH = 32, 64
NORM_SHAPE = (256, 1024)
ATTN = dict(batch=4, heads=4, head_dim=32)
ATTN_LENGTHS = (64, 256, 512)
assert WORKLOADS[4:] == [f"attn{t}" for t in ATTN_LENGTHS]
KIND = {"gpt": "train", "cnn": "train", "mlp": "train"}


def norm_block(x, w, b):
    """Pointwise and normalization chain: a hand-written layer norm, activations, softmax."""
    m = x.mean(-1, keepdim=True)
    v = ((x - m) ** 2).mean(-1, keepdim=True)
    y = (x - m) / torch.sqrt(v + 1e-5) * w + b
    y = F.gelu(y, approximate="tanh")
    y = y * torch.sigmoid(y) + 0.5 * torch.tanh(y)
    y = F.layer_norm(y, (x.shape[-1],), w, b, 1e-5)
    return torch.softmax(y, dim=-1) * 2.0 + y.clamp(-3.0, 3.0)


def attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


# Tiny twins (bench/floors.py): the same modules, ops and optimizers on the smallest tensors they
# take, so that on CPU a step costs PyTorch's dispatch, autograd and Python and almost no arithmetic.


def make_model(name, tiny=False):
    torch.manual_seed(0)
    if name == "gpt":
        if tiny:
            return train_gpt.GPT(2, ctx=1, dim=4, heads=4, layers=GPT["layers"], dropout=0.0)
        vocab = len(set(train_gpt.make_text(seed=0)))
        return train_gpt.GPT(vocab, ctx=GPT["ctx"], dim=GPT["dim"], heads=GPT["heads"], layers=GPT["layers"], dropout=0.0)
    if name == "cnn":
        return train_cnn.CNN(classes=2 if tiny else 4, dropout=0.0)
    if tiny:
        return train_mlp.MLP(dim=1, hidden=1, classes=2, dropout=0.0)
    return train_mlp.MLP(dropout=0.0)


def dump_tiny(name, path):
    """Writes the weights and data of the tiny twin of workload name (batch 1, every free size 1)."""
    g = torch.Generator().manual_seed(0)
    arrays = {}
    if name in KIND:
        for k, t in make_model(name, tiny=True).state_dict().items():
            arrays["p:" + k] = t.numpy()
        x = {"gpt": torch.zeros(1, 1, dtype=torch.long), "cnn": torch.randn(1, 3, 4, 4, generator=g),
             "mlp": torch.randn(1, 1, generator=g)}[name]
        arrays["y"] = (torch.zeros(1, 1) if name == "gpt" else torch.zeros(1)).long().numpy()
    elif name == "norm":
        x = torch.randn(1, 8, generator=g)
        arrays["w"], arrays["b"] = torch.ones(8).numpy(), torch.zeros(8).numpy()
    else:
        x = torch.randn(3, 1, 1, 1, 1, generator=g)
    arrays["x"] = x.numpy()
    np.savez(path, **arrays)


def make_optimizer(name, params, capturable=False):
    """The workload's optimizer; capturable (AdamW's step count on the device) for graph capture."""
    if name == "cnn":  # as examples/train_cnn.py, without its learning-rate schedule
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-4)
    if name == "gpt":  # as examples/train_gpt.py, at a fixed learning rate
        return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.1, betas=(0.9, 0.95), capturable=capturable)
    return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01, capturable=capturable)


def dump(name, path):
    """Writes the initial weights ("p:" + state_dict key) and the data of workload name."""
    arrays = {}
    if name in KIND:
        for k, t in make_model(name).state_dict().items():
            arrays["p:" + k] = t.numpy()
    if name == "gpt":
        text = train_gpt.make_text(seed=0)
        stoi = {c: i for i, c in enumerate(sorted(set(text)))}
        data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
        x, y = next(train_gpt.batches(data, GPT["ctx"], GPT["batch"], seed=0))
    elif name == "cnn":
        x, y = train_cnn.make_data(seed=0)
        x, y = x[:CNN_BATCH], y[:CNN_BATCH]
    elif name == "mlp":
        x, y = train_mlp.make_data(seed=0)
        x, y = x[:MLP_BATCH], y[:MLP_BATCH]
    elif name == "norm":
        g = torch.Generator().manual_seed(0)
        x = torch.randn(NORM_SHAPE, generator=g) * 2 + 0.5
        arrays["w"] = (1 + 0.1 * torch.randn(NORM_SHAPE[-1], generator=g)).numpy()
        arrays["b"] = (0.1 * torch.randn(NORM_SHAPE[-1], generator=g)).numpy()
        y = None
    else:
        g = torch.Generator().manual_seed(0)
        shape = (ATTN["batch"], ATTN["heads"], int(name[4:]), ATTN["head_dim"])
        x = torch.randn((3, *shape), generator=g)
        y = None
    arrays["x"] = x.numpy()
    if y is not None:
        arrays["y"] = y.numpy()
    np.savez(path, **arrays)


class Backend:
    """Where a workload runs and how its function is wrapped and synchronized."""

    def __init__(self, name):
        self.name, self.compile, self.after_step = name, None, lambda: None
        # torch_xla's dynamo bridge compiles a model (forward, and backward through AOTAutograd); a
        # step function with backward() and the optimizer inside fails there, so those stay lazy.
        self.whole_step = name != "xla-openxla"
        if name in ("cpu", "inductor"):
            self.device = torch.device("cpu")
            if name == "inductor":
                self.compile = lambda f: torch.compile(f)
        elif name in ("strict", "fused", "compiled", "compiled-step", "graph"):
            self.device = torch.device("tpu")
            # In fused mode the compiled graphs of a step are recorded and launched as one program.
            torch.tpu.set_mode("fused" if name in ("fused", "compiled-step", "graph") else "strict")
            if name in ("compiled", "compiled-step"):
                self.compile = lambda f: torch.compile(f, backend="tpu")
            elif name == "graph":
                self.compile = graphed
        elif name in ("xla-lazy", "xla-openxla"):
            import torch_xla
            self.device = torch_xla.device()
            self.after_step = torch_xla.sync
            if name == "xla-openxla":
                self.compile = lambda f: torch.compile(f, backend="openxla")
        else:
            raise ValueError(f"unknown backend {name}")

    def wrap(self, f):
        return self.compile(f) if self.compile else f


def graphed(fn):
    """fn(*args) as a TPUGraph: the first call runs eagerly (a warm-up that makes the optimizer's state
    and the gradients, as CUDA graphs ask), the second captures the call and replays it, and every later
    call replays. The arguments are the same tensors at every call (static inputs); the second call's
    replay is the workload's second step, so the correctness gate checks a replayed step."""
    state = {"calls": 0, "graph": None, "out": None}

    def call(*args):
        state["calls"] += 1
        if state["calls"] == 1:
            return fn(*args)
        if state["graph"] is None:
            g = torch.tpu.TPUGraph()
            with torch.tpu.graph(g):
                state["out"] = fn(*args)
            state["graph"] = g
        state["graph"].replay()
        return state["out"]
    return call


def build(backend, name, folder, tiny=False):
    """Returns (kind, step, read) for workload name on backend (its tiny twin with tiny, from dump_tiny's file)."""
    z = np.load(os.path.join(folder, f"{name}.init.npz"))
    dev = backend.device
    x = torch.from_numpy(z["x"]).to(dev)
    if name in KIND:
        model = make_model(name, tiny)
        model.load_state_dict({k[2:]: torch.from_numpy(z[k]) for k in z.files if k.startswith("p:")})
        model.to(dev).train()
        y = torch.from_numpy(z["y"]).to(dev)
        opt = make_optimizer(name, model.parameters(), capturable=backend.name == "graph")
        params = list(model.parameters())
        if backend.compile and not backend.whole_step:
            model = backend.compile(model)

        def train_step(xb, yb):
            logits = model(xb)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if name == "gpt":
                torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            return loss.detach()

        fn = backend.wrap(train_step) if backend.whole_step else train_step

        def step():
            loss = fn(x, y)
            backend.after_step()
            return loss

        return "train", step, lambda loss: float(loss.item())
    if name == "norm":
        w, b = torch.from_numpy(z["w"]).to(dev), torch.from_numpy(z["b"]).to(dev)
        fn, args = backend.wrap(norm_block), (x, w, b)
    else:
        fn, args = backend.wrap(attention), (x[0], x[1], x[2])

    def fwd():
        with torch.no_grad():
            out = fn(*args)
        backend.after_step()
        return out

    return "forward", fwd, lambda out: out.cpu().numpy()


def main():
    args = worker_args(__doc__.splitlines()[0])
    torch.set_num_threads(2)
    names = args.workloads.split(",")
    if args.dump:
        for n in names:
            dump(n, os.path.join(args.dir, f"{n}.init.npz"))
        return
    if args.backend in ("compiled", "compiled-step") and "tpu" not in torch._dynamo.list_backends():
        from peer_timing import emit
        for n in names:
            emit(n, {"status": "n/a", "detail": 'torch.compile backend "tpu" is not registered'})
        return
    backend = Backend(args.backend)
    run_all(names, lambda n: build(backend, n, args.dir), args)


if __name__ == "__main__":
    main()
