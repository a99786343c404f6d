"""train_mlp: a multilayer perceptron on a synthetic classification task.

    python examples/train_mlp.py --device tpu --mode fused --steps 200
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import StepTimer, maybe_compile, parse_args, set_mode


def make_data(n=2048, dim=32, classes=8, seed=0):
    """Points around random class centers, made on CPU so every device sees the same data."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(classes, dim, generator=g) * 0.6
    y = torch.randint(0, classes, (n,), generator=g)
    x = centers[y] + torch.randn(n, dim, generator=g)
    return x, y


class MLP(nn.Module):
    def __init__(self, dim=32, hidden=128, classes=8, dropout=0.1):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        x = self.drop(F.gelu(self.fc2(x)))
        return self.fc3(x)


def train(device="tpu", mode=None, steps=100, seed=0, dropout=0.1, batch=128, log=print, autocast=None, compile=False):
    """Trains the MLP and returns the per-step losses, the step times and the final accuracy."""
    set_mode(device, mode)
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    model = MLP(dropout=dropout).to(device)
    step_model = maybe_compile(model, device, compile)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    x, y = x.to(device), y.to(device)
    timer, losses = StepTimer(device), []
    for step in range(steps):
        i = (step * batch) % x.shape[0]
        xb, yb = x[i:i + batch], y[i:i + batch]
        timer.start()
        with torch.autocast(device_type=torch.device(device).type, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            loss = F.cross_entropy(step_model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        dt = timer.stop()
        if log and (step % 20 == 0 or step == steps - 1):
            log(f"step {step:4d}  loss {losses[-1]:.4f}  {dt * 1e3:.1f} ms")
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    return losses, timer, acc


if __name__ == "__main__":
    a = parse_args("MLP on synthetic classification", steps=200)
    losses, timer, acc = train(a.device, a.mode, a.steps, a.seed, 0.1 if a.dropout is None else a.dropout,
                               log=None if a.quiet else print, compile=a.compile)
    print(f"final loss {losses[-1]:.4f}  accuracy {acc:.3f}  median step {timer.median() * 1e3:.2f} ms")
