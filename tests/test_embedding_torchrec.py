"""FusedEmbeddingBagCollection fed TorchRec's own KeyedJaggedTensor: the same tables and pooled
outputs, bit for bit, as with torchtpu's KeyedJagged over three Adagrad steps.

TorchRec is not a dependency of the project: on first use this test installs the pinned wheels
below (without their dependency resolver, which would replace torch) into a folder of the cache
outside the clone, and runs the check in a subprocess with that folder on the path. A download
failure fails the test."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# torchrec and the modules jagged_tensor imports; fbgemm-gpu-cpu warns that it was built for
# another torch, and the KeyedJaggedTensor paths used here do not need its kernels.
PINS = ["torchrec==1.9.2", "fbgemm-gpu-cpu==1.9.0", "tensordict==0.15.3", "pyre-extensions==0.0.32",
        "typing-inspect==0.9.0", "mypy-extensions==1.2.0", "iopath==0.1.10", "portalocker==4.4.2",
        "pyvers==0.2.3", "cloudpickle==3.1.3"]

CHECK = r"""
import torch, torchtpu
from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
from torchtpu.embedding import EmbeddingBagConfig, FusedEmbeddingBagCollection, KeyedJagged
tables = [EmbeddingBagConfig("u", 50, 8, ["a"], padding_idx=4), EmbeddingBagConfig("v", 30, 8, ["b"], pooling="mean")]
vals = torch.tensor([1, 2, 3, 4, 4, 29, 7, 7])
lens = torch.tensor([1, 2, 0, 3, 2, 0])     # an empty bag, duplicates, a padding id
results = []
for kind in ["torchrec", "torchtpu"]:
    torch.manual_seed(0)
    ebc = FusedEmbeddingBagCollection(tables, "adagrad", {"lr": 0.1})
    if kind == "torchrec":
        kjt = KeyedJaggedTensor(keys=["b", "a"], values=vals, lengths=lens)
        assert type(kjt).__module__.startswith("torchrec"), type(kjt)
    else:
        kjt = KeyedJagged(["b", "a"], vals, lengths=lens)
    for _ in range(3):
        p = ebc(kjt)
        (p["a"].sum() + (p["b"] ** 2).sum()).backward()
    results.append([ebc.weight("u").cpu(), ebc.weight("v").cpu(), p["a"].detach().cpu(), p["b"].detach().cpu()])
for x, y in zip(*results):
    torch.testing.assert_close(x, y, rtol=0, atol=0)
torch.manual_seed(0)
start = FusedEmbeddingBagCollection(tables, "adagrad", {"lr": 0.1}).weight("v").cpu()
assert not torch.equal(results[0][1], start), "the tables did not train"
print("OK")
"""


def torchrec_dir():
    home = os.environ.get("TORCHTPU_HOME", os.path.join(os.path.expanduser("~"), ".cache", "torchtpu"))
    target = os.path.join(home, "torchrec-1.9.2")
    if not os.path.exists(os.path.join(target, ".complete")):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                        "--upgrade", "--target", target, *PINS], check=True, timeout=600)
        open(os.path.join(target, ".complete"), "w").close()
    return target


def test_torchrec_keyed_jagged_tensor_trains_the_same_tables():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python"), torchrec_dir(), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout[-2000:] + r.stderr[-4000:]
