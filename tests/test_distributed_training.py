"""DDP, FSDP2, DTensor and distributed checkpoints on 2 tpu ranks (torchrun, tpu_gloo backend).
The rank programs in tests/ranks/ check the numbers; here each launch must finish in time and
report every check."""
import os
import subprocess
import sys

from ranks.launch import HERE, ROOT, torchrun


def test_ddp_matches_one_process_and_ranks_agree():
    out = torchrun("ddp.py")
    for variant in ("plain", "unused", "nosync"):
        for rank in (0, 1):
            assert f"rank {rank}: ddp {variant} ok" in out, out[-4000:]


def test_fsdp2_matches_ddp_trains_bf16_and_checkpoint_loads_on_one_process(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    out = torchrun("fsdp.py", ckpt)
    for rank in (0, 1):
        for line in ("fsdp2 matches ddp", "checkpoint saved", "fsdp2 bf16 trains"):
            assert f"rank {rank}: {line}" in out, out[-4000:]
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    p = subprocess.run([sys.executable, os.path.join(HERE, "load_checkpoint.py"), ckpt], cwd=HERE, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "loaded 6 tensors from the 2-rank checkpoint" in p.stdout


def test_dtensor_and_tensor_parallel_match_unsharded():
    out = torchrun("dtensor.py")
    for rank in (0, 1):
        assert f"rank {rank}: dtensor ok" in out and f"rank {rank}: tensor parallel ok" in out, out[-4000:]
