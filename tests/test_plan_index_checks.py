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
