"""train_cnn: a small CNN with BatchNorm and pooling on synthetic images.

    python examples/train_cnn.py --device tpu --mode fused --steps 100
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from common import StepTimer, maybe_compile, parse_args, set_mode


def make_data(n=512, classes=4, size=16, seed=0):
    """Images whose class decides the orientation of a noisy stripe pattern."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, classes, (n,), generator=g)
    coords = torch.arange(size, dtype=torch.float32)
    yy, xx = torch.meshgrid(coords, coords, indexing="ij")
    angles = y.float() * (3.14159 / classes)
    phase = torch.cos(angles)[:, None, None] * xx + torch.sin(angles)[:, None, None] * yy
    img = torch.sin(phase * 0.8)[:, None] + 0.5 * torch.randn(n, 1, size, size, generator=g)
    return img.repeat(1, 3, 1, 1), y


class CNN(nn.Module):
    def __init__(self, classes=4, dropout=0.1):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, stride=1)
        self.bn2 = nn.BatchNorm2d(32)
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.bn2(self.conv2(x))))
        x = self.avg(x).flatten(1)
        return self.fc(self.drop(x))


def train(device="tpu", mode=None, steps=60, seed=0, dropout=0.1, batch=64, log=print, compile=False):
    """Trains the CNN and returns the per-step losses, the step times and the final accuracy."""
    set_mode(device, mode)
    torch.manual_seed(seed)
    x, y = make_data(seed=seed)
    model = CNN(dropout=dropout).to(device)
    step_model = maybe_compile(model, device, compile)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    x, y = x.to(device), y.to(device)
    timer, losses = StepTimer(device), []
    for step in range(steps):
        i = (step * batch) % x.shape[0]
        xb, yb = x[i:i + batch], y[i:i + batch]
        timer.start()
        loss = F.cross_entropy(step_model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        dt = timer.stop()
        if log and (step % 10 == 0 or step == steps - 1):
            log(f"step {step:4d}  loss {losses[-1]:.4f}  {dt * 1e3:.1f} ms")
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    return losses, timer, acc


if __name__ == "__main__":
    a = parse_args("small CNN on synthetic images", steps=60)
    losses, timer, acc = train(a.device, a.mode, a.steps, a.seed, 0.1 if a.dropout is None else a.dropout,
                               log=None if a.quiet else print, compile=a.compile)
    print(f"final loss {losses[-1]:.4f}  accuracy {acc:.3f}  median step {timer.median() * 1e3:.2f} ms")
