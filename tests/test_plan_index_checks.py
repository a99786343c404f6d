"""Index checks survive the fast paths: an op planned with in-range indices uploaded from the host must still
raise CPU's error when later indices of the same shape are out of range (the plan's signature holds the known
value range of host-written indices), and values stay CPU's while they are in range."""
import pytest
import torch
import torch.nn.functional as F

CASES = {
    "index_select": (lambda x, i: torch.index_select(x, 0, i), IndexError, "index out of range"),
    "gather": (lambda x, i: torch.gather(x, 0, i), RuntimeError, "out of bounds"),
    "take": (lambda x, i: torch.take(x, i), IndexError, "out of range"),
    "nll_loss": (lambda x, i: F.nll_loss(x.reshape(1, 10).expand(3, 10), i), IndexError, "out of bounds"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_of_range_after_planned_calls(mode, name):
    fn, error, message = CASES[name]
    x_cpu = torch.arange(10.0)
    x = x_cpu.to("tpu")
    for ids in ([1, 2, 3], [4, 0, 9], [7, 7, 2]):  # in range: the op is planned and replayed
        i_cpu = torch.tensor(ids)
        torch.testing.assert_close(fn(x, i_cpu.to("tpu")).cpu(), fn(x_cpu, i_cpu))
    bad = torch.tensor([1, 2, 30])
    with pytest.raises(Exception) as cpu_err:
        fn(x_cpu, bad)
    with pytest.raises(cpu_err.type, match=message):
        fn(x, bad.to("tpu")).cpu()
    assert isinstance(cpu_err.value, error)


WRITES = {
    "add_": lambda i: i.add_(100),
    "mul_": lambda i: i.mul_(40),
    "copy_": lambda i: i.copy_(torch.tensor([50, 60, 70], device=i.device) + i),
    "fill_": lambda i: i.fill_(11),
    "index_put_": lambda i: i.index_put_((torch.tensor([2], device=i.device),), torch.tensor(99, device=i.device)),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_in_place_write_forgets_the_uploaded_range(mode, name):
    # Indices uploaded in range, then overwritten on the device by a planned in-place op: the index check must
    # see the new values (a replayed write once kept the uploaded range, and index_select returned clamped rows).
    write = WRITES[name]
    w_cpu = torch.arange(30.0).reshape(10, 3)
    w = w_cpu.to("tpu")
    for _ in range(3):  # the write's signature is learned, then replayed
        i_cpu = torch.tensor([0, 1, 2])
        i = i_cpu.to("tpu")
        write(i_cpu), write(i)
        assert torch.equal(i.cpu(), i_cpu)
        with pytest.raises(IndexError, match="index out of range"):
            torch.index_select(w_cpu, 0, i_cpu)
        with pytest.raises(IndexError, match="index out of range"):
            torch.index_select(w, 0, i).cpu()


def test_derived_ranges_replay_with_their_plans(mode):
    # Ranges a rule derives (arange, and what integer arithmetic keeps of them) are kept by replayed plans: in
    # range, no index check reads the device; out of range, CPU's error, however often the ops were planned.
    w_cpu = torch.arange(30.0).reshape(10, 3)
    w = w_cpu.to("tpu")
    for start in (0, 3, 5, 0, 7, 8):
        i_cpu = torch.arange(3) + start
        i = torch.arange(3, device="tpu") + start
        if start + 2 < 10:
            torch.testing.assert_close(torch.index_select(w, 0, i).cpu(), torch.index_select(w_cpu, 0, i_cpu))
        else:
            with pytest.raises(IndexError, match="index out of range"):
                torch.index_select(w, 0, i).cpu()


def test_compiled_in_place_write_forgets_the_uploaded_range():
    # A compiled program that writes its input in place gives the storage values no upload knew.
    @torch.compile(backend="tpu")
    def shift(i):
        i.add_(100)

    w = torch.arange(30.0).reshape(10, 3).to("tpu")
    for _ in range(3):  # capture, then replays
        i = torch.tensor([0, 1, 2]).to("tpu")
        shift(i)
        assert i.cpu().tolist() == [100, 101, 102]
        with pytest.raises(IndexError, match="index out of range"):
            torch.index_select(w, 0, i).cpu()


DERIVED = {
    # name: (indices built from CPU-known values, in range of 10 rows)
    "arange_add_scalar": lambda dev: torch.arange(3, device=dev) + 4,
    "arange_add_uploaded": lambda dev: torch.arange(3, device=dev) + torch.tensor(5).to(dev),
    "arange_sub_mul": lambda dev: (torch.arange(3, device=dev) * 3 - 1).add_(2),
    "ones_cumsum_sub": lambda dev: torch.ones(4, dtype=torch.int64).to(dev).cumsum(0) - 1,
    "bool_sum": lambda dev: (torch.arange(12, device=dev).reshape(3, 4) > 5).sum(1),  # counts of 4 at most
    "argmax": lambda dev: torch.arange(30.0, device=dev).reshape(3, 10).argmax(1),
    "fill_clone": lambda dev: torch.empty(3, dtype=torch.int64, device=dev).fill_(9).clone(),
}


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_derived_ranges_skip_the_device_read(mode, name):
    # Indices derived on the device from values the host knows need no read for their check, and give CPU's rows.
    make = DERIVED[name]
    w_cpu = torch.arange(30.0).reshape(10, 3)
    w = w_cpu.to("tpu")
    want = torch.index_select(w_cpu, 0, make("cpu"))
    for _ in range(3):  # the first call, then the plans' replays
        i = make("tpu")
        torch.tpu.synchronize()
        before = torch.tpu.metrics()["device_to_host_transfers"]
        r = torch.index_select(w, 0, i)
        torch.tpu.synchronize()
        assert torch.tpu.metrics()["device_to_host_transfers"] == before, "the index check read the device"
        assert torch.equal(r.cpu(), want)


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_derived_ranges_out_of_range_still_raise(mode, name):
    # The same indices against a table too short for them: CPU's IndexError, however the bound was derived.
    i_cpu = DERIVED[name]("cpu")
    short = int(i_cpu.max())  # row i_cpu.max() is missing
    w_cpu = torch.zeros(short, 3)
    with pytest.raises(IndexError, match="index out of range"):
        torch.index_select(w_cpu, 0, i_cpu)
    for _ in range(2):
        with pytest.raises(IndexError, match="index out of range"):
            torch.index_select(w_cpu.to("tpu"), 0, DERIVED[name]("tpu")).cpu()
