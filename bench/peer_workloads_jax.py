"""peer_workloads_jax: JAX twins of the benchmark workloads, jitted on the XLA CPU backend.

Same shapes and math as bench/peer_workloads_torch.py, written the way JAX code
is usually written (jax.numpy, optax, a jitted train step that donates its
parameters and optimizer state). Weights and data are the PyTorch ones, read
from <workload>.init.npz, so the losses agree with CPU eager.

    python bench/peer_workloads_jax.py --backend jax --workloads gpt,norm --dir DIR
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax import lax  # noqa: E402

from peer_timing import run_all, worker_args  # noqa: E402

GPT_LAYERS, GPT_HEADS = 4, 4


def linear(p, name, x, bias=True):
    y = x @ p[name + ".weight"].T
    return y + p[name + ".bias"] if bias else y


def layer_norm(x, w, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / jnp.sqrt(v + eps) * w + b


def norm_block(x, w, b):
    y = layer_norm(x, w, b)
    y = jax.nn.gelu(y, approximate=True)
    y = y * jax.nn.sigmoid(y) + 0.5 * jnp.tanh(y)
    y = layer_norm(y, w, b)
    return jax.nn.softmax(y, axis=-1) * 2.0 + jnp.clip(y, -3.0, 3.0)


def gpt_logits(p, state, idx):
    b, t = idx.shape
    x = p["tok.weight"][idx] + p["pos.weight"][:t]
    c = x.shape[-1]
    for i in range(GPT_LAYERS):
        pre = f"blocks.{i}."
        h = layer_norm(x, p[pre + "ln1.weight"], p[pre + "ln1.bias"])
        q, k, v = jnp.split(linear(p, pre + "qkv", h), 3, axis=-1)
        q, k, v = (z.reshape(b, t, GPT_HEADS, c // GPT_HEADS) for z in (q, k, v))
        y = jax.nn.dot_product_attention(q, k, v, is_causal=True).reshape(b, t, c)
        x = x + linear(p, pre + "proj", y)
        h = layer_norm(x, p[pre + "ln2.weight"], p[pre + "ln2.bias"])
        x = x + linear(p, pre + "mlp.2", jax.nn.gelu(linear(p, pre + "mlp.0", h), approximate=True))
    x = layer_norm(x, p["ln.weight"], p["ln.bias"])
    return x @ p["tok.weight"].T, state  # the head shares the token embedding


def mlp_logits(p, state, x):
    x = jax.nn.relu(linear(p, "fc1", x))
    x = jax.nn.gelu(linear(p, "fc2", x), approximate=False)
    return linear(p, "fc3", x), state


def conv(x, w, b):
    y = lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b[None, :, None, None]


def batch_norm(p, state, name, x, momentum=0.1, eps=1e-5):
    """Training-mode BatchNorm2d: batch statistics, running statistics updated as PyTorch does."""
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    n = x.size // x.shape[1]
    y = (x - mean[:, None, None]) / jnp.sqrt(var[:, None, None] + eps)
    y = y * p[name + ".weight"][:, None, None] + p[name + ".bias"][:, None, None]
    rm, rv = state[name + ".running_mean"], state[name + ".running_var"]
    state = {**state, name + ".running_mean": (1 - momentum) * rm + momentum * lax.stop_gradient(mean),
             name + ".running_var": (1 - momentum) * rv + momentum * lax.stop_gradient(var) * n / (n - 1)}
    return y, state


def max_pool2(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def cnn_logits(p, state, x):
    x, state = batch_norm(p, state, "bn1", conv(x, p["conv1.weight"], p["conv1.bias"]))
    x = max_pool2(jax.nn.relu(x))
    x, state = batch_norm(p, state, "bn2", conv(x, p["conv2.weight"], p["conv2.bias"]))
    x = max_pool2(jax.nn.relu(x))
    return linear(p, "fc", x.mean((2, 3))), state


MODELS = {"gpt": gpt_logits, "mlp": mlp_logits, "cnn": cnn_logits}
OPTIMIZERS = {
    "gpt": lambda: optax.chain(optax.clip_by_global_norm(1.0),
                               optax.adamw(3e-3, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1)),
    "mlp": lambda: optax.adamw(3e-3, b1=0.9, b2=0.999, eps=1e-8, weight_decay=0.01),
    "cnn": lambda: optax.chain(optax.add_decayed_weights(1e-4), optax.sgd(0.05, momentum=0.9)),
}


def build_train(name, z):
    logits_fn, tx = MODELS[name], OPTIMIZERS[name]()
    params, state = {}, {}
    for k in z.files:
        if not k.startswith("p:") or k == "p:head.weight":  # tied to tok.weight
            continue
        arr = jnp.asarray(z[k])
        (state if ("running_" in k or "num_batches" in k) else params)[k[2:]] = arr
    x = jnp.asarray(z["x"])
    y = jnp.asarray(z["y"].astype(np.int32))

    def loss_fn(p, s, xb, yb):
        logits, s = logits_fn(p, s, xb)
        logits = logits.reshape(-1, logits.shape[-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, yb.reshape(-1)).mean(), s

    def train_step(p, s, o, xb, yb):
        (loss, s), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, s, xb, yb)
        updates, o = tx.update(grads, o, p)
        return optax.apply_updates(p, updates), s, o, loss

    train_step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    held = [params, state, tx.init(params)]

    def step():
        held[0], held[1], held[2], loss = train_step(held[0], held[1], held[2], x, y)
        return loss

    step.lower = lambda: train_step.lower(*held, x, y).as_text()
    return "train", step, lambda loss: float(loss)


def build(name, folder):
    z = np.load(os.path.join(folder, f"{name}.init.npz"))
    if name in MODELS:
        return build_train(name, z)
    x = jnp.asarray(z["x"])
    if name == "norm":
        fn, args, back = jax.jit(norm_block), (x, jnp.asarray(z["w"]), jnp.asarray(z["b"])), lambda o: o
    else:  # attention: PyTorch's (B, H, T, D) is (B, T, H, D) in JAX
        q, k, v = (jnp.transpose(x[i], (0, 2, 1, 3)) for i in range(3))
        fn = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True))
        args, back = (q, k, v), lambda o: o.transpose(0, 2, 1, 3)
    def step():
        return fn(*args)

    step.lower = lambda: fn.lower(*args).as_text()
    return "forward", step, lambda out: back(np.asarray(out))


def export(names, folder):
    """Writes the StableHLO JAX lowers for each workload to <workload>.jax.mlir in folder."""
    for name in names:
        _, step, _ = build(name, folder)
        with open(os.path.join(folder, f"{name}.jax.mlir"), "w") as f:
            f.write(step.lower())


def main():
    args = worker_args(__doc__.splitlines()[0])
    if args.export:
        return export(args.workloads.split(","), args.dir)
    run_all(args.workloads.split(","), lambda n: build(n, args.dir), args)


if __name__ == "__main__":
    main()
