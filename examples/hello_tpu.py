"""hello_tpu: tensors on torch.device("tpu"), next to the same computation on CPU."""
import torch

tpu = torch.device("tpu")
torch.manual_seed(0)
a_cpu = torch.randn(3, 4)
b_cpu = torch.randn(4, 2)

a = a_cpu.to(tpu)
b = b_cpu.to(tpu)

steps = [
    ("a + 1", lambda x, y: x + 1),
    ("a * 2 - a.exp()", lambda x, y: x * 2 - x.exp()),
    ("a @ b", lambda x, y: x @ y),
    ("(a @ b).relu().sum(dim=0)", lambda x, y: (x @ y).relu().sum(dim=0)),
    ("a.softmax(dim=1)", lambda x, y: x.softmax(dim=1)),
    ("a.t()[1:, ::2] * 10", lambda x, y: x.t()[1:, ::2] * 10),
    ("a.amax(dim=1), a.argmax(dim=1)", lambda x, y: torch.stack([x.amax(dim=1), x.argmax(dim=1).to(x.dtype)])),
]

print(f"torch {torch.__version__}, device {tpu}, accelerator {torch.accelerator.current_accelerator()}")
worst = 0.0
for name, fn in steps:
    on_tpu = fn(a, b)
    on_cpu = fn(a_cpu, b_cpu)
    diff = (on_tpu.cpu() - on_cpu).abs().max().item()
    worst = max(worst, diff)
    print(f"--- {name}  (max |tpu - cpu| = {diff:.2e})")
    print("tpu:", on_tpu)
    print("cpu:", on_cpu)

print(f"largest difference from CPU: {worst:.2e}")
print("metrics:", torch.tpu.metrics())
