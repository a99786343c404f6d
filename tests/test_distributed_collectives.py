"""The tpu_gloo c10d backend on 2 ranks: every collective with checked values for float32, bfloat16
and int64, and the failures a user can cause (shapes that disagree, a rank that dies)."""
import re

from ranks.launch import processes, torchrun


def test_collectives_on_two_ranks():
    out = torchrun("collectives.py")
    for dtype in ("float32", "bfloat16", "int64"):
        for rank in (0, 1):
            assert f"rank {rank}: collectives ok for torch.{dtype}" in out, out[-3000:]
    for rank in (0, 1):
        assert f"rank {rank}: staging buffers reused" in out, out[-3000:]
        # Before, the call itself waited until the late rank had called (the agreement ran on it).
        assert f"rank {rank}: calls do not wait for peers" in out, out[-3000:]
    assert "rank 0: done" in out and "rank 1: done" in out


def test_mismatched_shapes_raise_on_every_rank():
    results = processes("failures.py", "mismatch")
    for rank, (rc, out) in enumerate(results):
        assert rc == 0, out[-3000:]
        assert re.search(rf"rank {rank}: error .*tpu_gloo allreduce: the ranks passed tensors of different shapes",
                         out), out[-3000:]


def test_a_dead_rank_is_an_error_not_a_hang():
    (rc0, out0), (rc1, _) = processes("failures.py", "die")
    assert rc1 == 3
    assert rc0 == 0, out0[-3000:]
    assert re.search(r"rank 0: error .*tpu_gloo allreduce failed", out0), out0[-3000:]
