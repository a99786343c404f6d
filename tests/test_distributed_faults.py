"""Faults of the tpu_gloo backend on 2 torchrun ranks (tests/ranks/faults.py, exits.py): a collective
that cannot complete raises on the ranks still alive, within the group's timeout, and leaves their
tensors holding their own input; ranks that call different collectives, roots or shapes all raise
at once; a job that destroys its group exits cleanly, every time."""
import re

from ranks.launch import torchrun_outcome

TIMEOUT = 10  # the process-group timeout of faults.py
MARGIN = 5  # for a busy machine
SOON = TIMEOUT - 2  # an error that does not wait for the timeout (a peer's exit takes a while when busy)
LINE = re.compile(r"^rank (\d): ([\w-]+): (raised|returned) after ([\d.]+)s(?:: (\w+): (.*?))? \| holds (.*)$", re.M)


def outcomes(out):
    """{(rank, check): (how, seconds, exception type, message, what the tensor holds)}"""
    return {(int(m[1]), m[2]): (m[3], float(m[4]), m[5], m[6], m[7]) for m in LINE.finditer(out)}


def expect_error(seen, out, rank, check, message, within, type_="RuntimeError"):
    """rank's check raised type_ matching message within `within` seconds, its tensor untouched."""
    assert (rank, check) in seen, f"rank {rank} did not report {check}:\n{out[-4000:]}"
    how, took, etype, msg, holds = seen[(rank, check)]
    assert how == "raised", f"rank {rank} {check}: the collective returned instead of raising:\n{out[-4000:]}"
    assert etype == type_ and re.search(message, msg), f"rank {rank} {check}: {etype}: {msg}"
    assert took < within, f"rank {rank} {check}: raised after {took}s, expected under {within}s"
    assert holds == "its input", f"rank {rank} {check}: the tensor holds {holds}, not its input"
    return took


def test_mismatched_kinds_roots_and_shapes_raise_on_both_ranks_at_once():
    rc, out, _ = torchrun_outcome("faults.py", "tpu", "kinds,roots,shapes,after")
    assert rc == 0, out[-4000:]
    seen = outcomes(out)
    for rank, kind in ((0, "allreduce"), (1, "broadcast")):
        # Before the kind was part of the signature, both ranks returned after the 10 s timeout
        # with their tensors unreduced (and hung with the default timeout).
        expect_error(seen, out, rank, "kinds", rf"^tpu_gloo {kind}: the ranks called different collectives "
                     r"\(allreduce and broadcast", within=TIMEOUT / 2)
        expect_error(seen, out, rank, "roots", rf"^tpu_gloo broadcast: the ranks named different roots "
                     rf"\(0 and 1; rank {rank} named {rank}\)", within=TIMEOUT / 2)
        expect_error(seen, out, rank, "shapes", rf"^tpu_gloo allreduce: the ranks passed tensors of different "
                     rf"shapes or dtypes \(rank {rank} passed \[{4 + rank}\] torch.float32\)", within=TIMEOUT / 2)
        # The group is still usable: nothing reached gloo's data exchange.
        assert f"rank {rank}: after: all_reduce ok" in out, out[-4000:]


def test_a_rank_that_cannot_read_its_input_fails_the_collective_on_every_rank():
    rc, out, _ = torchrun_outcome("faults.py", "tpu", "unread,after")
    assert rc == 0, out[-4000:]
    seen = outcomes(out)
    expect_error(seen, out, 1, "unread", r"^injected: the device could not copy this tensor", within=TIMEOUT / 2)
    # Before, rank 0 went on into gloo's all_reduce and paired it with rank 1's next call.
    expect_error(seen, out, 0, "unread", r"^tpu_gloo allreduce: rank 1 could not read its input tensors",
                 within=TIMEOUT / 2)
    for rank in (0, 1):
        assert f"rank {rank}: after: all_reduce ok" in out, out[-4000:]


def test_a_rank_killed_mid_collective_is_an_error_not_unreduced_data():
    rc, out, _ = torchrun_outcome("faults.py", "tpu", "kill")
    assert rc != 0 and "(SIGKILL)" in out, out[-4000:]
    seen = outcomes(out)
    # Before: the in-flight all_reduce returned with rank 0's own input; only the next one raised.
    expect_error(seen, out, 0, "kill", r"^tpu_gloo allreduce failed: .*(Connection|Read error|closed|reset)",
                 within=SOON)
    # The future fails too (c10d and DDP's hooks see the error), its message wrapped by the callback that set it.
    assert re.search(r"rank 0: kill-future: raised RuntimeError: .*tpu_gloo allreduce failed: ", out), out[-4000:]
    expect_error(seen, out, 0, "kill-next", r"^tpu_gloo allreduce failed: ", within=MARGIN)
    assert "rank 0: done" in out


def test_an_exception_on_one_rank_fails_the_others_collective():
    rc, out, _ = torchrun_outcome("faults.py", "tpu", "raise")
    assert rc != 0 and "ValueError: rank 1 fails before the all_reduce" in out, out[-4000:]
    expect_error(outcomes(out), out, 0, "raise", r"^tpu_gloo allreduce failed: .*(Connection|Read error|closed|reset)",
                 within=SOON)


def test_a_rank_that_never_joins_fails_the_others_collective_at_the_timeout():
    rc, out, _ = torchrun_outcome("faults.py", "tpu", "stall")
    assert rc != 0, out[-4000:]  # rank 1 exits 5 once it has slept past the timeout
    took = expect_error(outcomes(out), out, 0, "stall", r"^tpu_gloo allreduce failed: .*Timed out waiting 10000ms",
                        within=TIMEOUT + MARGIN)
    assert took >= TIMEOUT - 0.5, f"raised after {took}s, before the {TIMEOUT}s timeout"


def test_exit_after_destroy_process_group_never_aborts(tmp_path):
    runs = 10
    rc, out, seconds = torchrun_outcome("exits.py", str(runs), str(tmp_path), timeout=400)
    assert rc == 0, out[-6000:]
    for rank in (0, 1):
        # Before: the group's waiter thread still ran after destroy_process_group in every run,
        # and under load some runs died of "terminate called without an active exception" when
        # it took the GIL back from the finalizing interpreter.
        assert re.search(rf"rank {rank}: exits: {runs} runs, 0 aborted, 0 failed", out), out[-6000:]
    print(f"{runs} runs in {seconds:.0f}s")
