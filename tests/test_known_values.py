"""Host reads of values the engine knows: a comparison, isin, any/all or logical op whose arguments' value ranges
decide it (ids uploaded from the host, a mask of ones) is known without running it, so `if (ids < 0).any():`
reads no device data (dispatch/ranges_bool.go, engine/intrange.go). Every value must still be CPU's, whether the
ranges decide it or not, and a range must be forgotten when the device overwrites the tensor."""
import pytest
import torch

IDS = torch.tensor([[5, 17, 924, 3], [8, 0, 41, 1023]])
NEG = torch.tensor([[-5, -17], [-1, -2]])
ONES = torch.ones(2, 4, dtype=torch.long)
MASK = torch.tensor([[True, False, True, True], [False, False, True, True]])

def _attention_mask(ids, ones):
    """generate()'s attention mask from its ids and pad token (transformers' _prepare_attention_mask_for_generation)."""
    pad, eos = torch.tensor(0, device=ids.device), torch.tensor([7], device=ids.device)
    can_infer = torch.isin(ids, pad).any() * ~torch.isin(eos, pad).any()
    return ids.ne(pad).long() * can_infer + ones * ~can_infer


# Each case: a function of (ids, neg, ones, mask) on one device; the result is read to the host.
CASES = {
    "ids < 0 any": lambda i, n, o, m: (i < 0).any(),
    "ids >= 0 all": lambda i, n, o, m: (i >= 0).all(),
    "ids < 17 any": lambda i, n, o, m: (i < 17).any(),
    "ids > 1023 any": lambda i, n, o, m: (i > 1023).any(),
    "ids <= 1023 all": lambda i, n, o, m: (i <= 1023).all(),
    "ids le 924": lambda i, n, o, m: i.le(924),
    "neg < 0": lambda i, n, o, m: n < 0,
    "neg > ids": lambda i, n, o, m: n > i[:, :2],
    "neg gt -2": lambda i, n, o, m: n.gt(-2),
    "ones == 1 all": lambda i, n, o, m: (o == 1).all(),
    "ones != 1 any": lambda i, n, o, m: (o != 1).any(),
    "ones eq tensor": lambda i, n, o, m: torch.eq(o, torch.ones_like(o)),
    "ids eq ids": lambda i, n, o, m: i == i,
    "isin ids pad": lambda i, n, o, m: torch.isin(i, torch.tensor(0, device=i.device)).any(),
    "isin ids big": lambda i, n, o, m: torch.isin(i, torch.tensor([2000, 3000], device=i.device)),
    "isin eos pad": lambda i, n, o, m: torch.isin(torch.tensor([7], device=i.device), torch.tensor(7, device=i.device)),
    "isin invert": lambda i, n, o, m: torch.isin(i, torch.tensor([-4], device=i.device), invert=True).all(),
    "isin empty": lambda i, n, o, m: torch.isin(i, torch.tensor([], dtype=torch.long, device=i.device)),
    "isin scalar": lambda i, n, o, m: torch.isin(i, 5),
    "any dim": lambda i, n, o, m: (i < 0).any(dim=1),
    "all dims keepdim": lambda i, n, o, m: torch.all(o, dim=(0, 1), keepdim=True),
    "all empty": lambda i, n, o, m: (i[:, :0] > 5).all(),
    "any empty": lambda i, n, o, m: (i[:0] > -5).any(),
    "any of ids": lambda i, n, o, m: i.any(),
    "all of neg": lambda i, n, o, m: n.all(),
    "logical_not": lambda i, n, o, m: torch.logical_not(o == 1),
    "bitwise_not bool": lambda i, n, o, m: ~(o == 1),
    "bitwise_not int": lambda i, n, o, m: (~o == -2).all(),
    "logical_and": lambda i, n, o, m: torch.logical_and(o == 1, m),
    "logical_or": lambda i, n, o, m: torch.logical_or(o == 1, m).all(),
    "mask": lambda i, n, o, m: m.any(),
    "mask all": lambda i, n, o, m: m.all(),
    "masked_fill none": lambda i, n, o, m: (o.cumsum(-1) - 1).masked_fill(o == 0, 0).max(),
    "masked_fill some": lambda i, n, o, m: i.masked_fill(m, -1) < 0,
    "masked_fill all": lambda i, n, o, m: (i.masked_fill(o == 1, 3) == 3).all(),
    "where": lambda i, n, o, m: (torch.where(o == 1, i, -7) >= 0).all(),
    "where mask": lambda i, n, o, m: torch.where(m, i, n.repeat(1, 2)) < 0,
    # generate()'s attention mask from its ids and pad token (transformers' _prepare_attention_mask_for_generation)
    "attention mask": lambda i, n, o, m: (_attention_mask(i, o) == 1).all(),
    "position ids": lambda i, n, o, m: (o.long().cumsum(-1) - 1).masked_fill(o == 0, 0),
    "cat": lambda i, n, o, m: (torch.cat([i, torch.full((2, 1), 3000, device=i.device)], 1) < 0).any(),
    "cat undecided": lambda i, n, o, m: (torch.cat([i, torch.full((2, 1), 3000, device=i.device)], 1) > 2000).any(),
    "cat ones": lambda i, n, o, m: (torch.cat([o, o[:, :1], o[:, :0], torch.tensor([], dtype=torch.long, device=i.device)], 1) == 1).all(),
    "bitwise_and": lambda i, n, o, m: ((i & (o == 1)) > 1).any(),
    "bitwise_or": lambda i, n, o, m: ((i[:, :1] | 8) >= 8).all(),
    "bitwise_xor": lambda i, n, o, m: (i ^ 1023) < 0,
    "rsub": lambda i, n, o, m: ((1 - o) == 0).all(),
    "rsub alpha": lambda i, n, o, m: torch.rsub(o, 10, alpha=3) == 7,
    "big integers": lambda i, n, o, m: torch.full((2,), 2**53 + 1, device=i.device) + torch.tensor([0, 2**62], device=i.device),
    "big eq": lambda i, n, o, m: (torch.full((2,), 2**53 + 1, device=i.device) == 2**53 + 1).all(),
    "big eq off by one": lambda i, n, o, m: (torch.full((2,), 2**53 + 1, device=i.device) == 2**53).any(),
    "big fill_": lambda i, n, o, m: torch.zeros(2, dtype=torch.long, device=i.device).fill_(2**62 + 3),
    "big alpha": lambda i, n, o, m: torch.add(o[0, :1], o[0, :1], alpha=2**53 + 1),
    # generate()'s next tokens: the argmax, kept where a sequence is unfinished, else the pad token
    "next tokens": lambda i, n, o, m: ((lambda unf: i.argmax(1) * unf + 0 * (1 - unf))(
        o[:, 0] & ~(i[:, 0] == 1023)) < 0).any(),
}


# Comparisons at the edges of a range: a tensor of values 3..7 (and one of 4s) against each edge, each way.
EDGES = torch.tensor([[3, 5], [7, 4]])
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    for _k in (2, 3, 4, 7, 8):
        CASES[f"edges {_op} {_k}"] = lambda i, n, o, m, op=_op, k=_k: getattr(torch, op)(EDGES.to(i.device), k)
        CASES[f"edges {_k} {_op} edges"] = lambda i, n, o, m, op=_op, k=_k: getattr(torch, op)(
            torch.full((2, 2), k, device=i.device), EDGES.to(i.device))
        CASES[f"fours {_op} {_k}"] = lambda i, n, o, m, op=_op, k=_k: getattr(torch, op)(
            torch.tensor([4, 4], device=i.device), k).all()


@pytest.mark.parametrize("name", sorted(CASES))
def test_reads_equal_cpu(mode, name):
    fn = CASES[name]
    want = fn(IDS, NEG, ONES, MASK)
    got = fn(*(t.to("tpu") for t in (IDS, NEG, ONES, MASK)))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got.cpu(), want), f"{name}: tpu {got.cpu().tolist()} vs CPU {want.tolist()}"
    if want.numel() == 1:
        assert got.item() == want.item() and bool(got) == bool(want)


def _counts():
    m = torch.tpu.metrics()
    return m["known_value_reads"], m["device_to_host_transfers"], m["graphs_compiled"]


@pytest.mark.parametrize("mode", ["fused"], indirect=True)
def test_decided_flags_read_nothing(mode):
    # generate()'s argument checks: each condition is decided by the uploaded ids and numbers alone.
    ids = IDS.to("tpu")
    eos, pad = torch.tensor([1023], device="tpu"), torch.tensor(0, device="tpu")
    torch.tpu.synchronize()
    reads, copies, compiled = _counts()
    assert bool(torch.isin(eos, pad).any()) is False
    assert bool((eos < 0).any()) is False
    assert bool((ids >= 0).all()) is True
    mask = torch.ones(ids.shape, dtype=torch.long, device="tpu")
    assert bool((mask == 1).all()) is True
    assert torch.equal((mask.cumsum(-1) - 1).cpu(), torch.arange(4).expand(2, 4))  # not known: a read
    r, c, _ = _counts()
    assert (r - reads, c - copies) == (4, 1)
    torch.tpu.synchronize()
    # Undecided flags are read from the device.
    assert bool((ids == 17).any()) is True
    assert _counts()[0] - reads == 4


WRITES = {
    "element write": lambda i: i.__setitem__((0, 1), -3),
    "copy_ of a device value": lambda i: i.copy_((torch.randn(2, 4, device=i.device) * 100).long() - 1000),
    "index_put_": lambda i: i.index_put_((torch.tensor([1], device=i.device),), torch.tensor(-8, device=i.device)),
    "add_ of a float": lambda i: i.add_((torch.rand(2, 4, device=i.device) * 0 - 2).long()),
    "masked_fill_ of a device mask": lambda i: i.masked_fill_(torch.rand(2, 4, device=i.device) < 2, -1),
    "div_ floor": lambda i: i.sub_(2000).div_(7, rounding_mode="floor"),
}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_device_writes_forget_the_range(mode, name):
    # ids uploaded non-negative: (ids < 0).any() is known False until the device writes negatives into them.
    for _ in range(2):  # the second time, the ops are planned and replayed
        i_cpu, i = IDS.clone(), IDS.to("tpu")
        assert bool((i < 0).any()) is False
        torch.manual_seed(0)
        WRITES[name](i)
        torch.manual_seed(0)
        WRITES[name](i_cpu)
        if name in ("copy_ of a device value", "add_ of a float", "masked_fill_ of a device mask"):
            i_cpu = i.cpu()  # random values: CPU's generator differs; the flag must follow the device's values
        assert bool((i < 0).any()) is bool((i_cpu < 0).any()) is True
        assert torch.equal((i < 0).cpu(), i_cpu < 0)


def test_reads_inside_a_graph_capture_still_raise():
    ids = IDS.to("tpu")
    g = torch.tpu.TPUGraph()
    with pytest.raises(RuntimeError, match="operation not permitted when stream is capturing"):
        with torch.tpu.graph(g):
            bool((ids < 0).any())
    assert bool((ids < 0).any()) is False


def _flags(device, v):
    t = torch.full((3,), v, dtype=torch.long, device=device)
    pos = t.cumsum(0) - 1
    flags = [(t == 5).all(), (pos > 3 * v - 1).any(), (pos >= 3 * v - 1).any(), (pos < 8).all(),
             (t.masked_fill(t > 6, 1) == 1).any()]
    return t, [bool(f) for f in flags] + [t.tolist(), pos.tolist()]


@pytest.mark.parametrize("mode", ["fused", "strict"], indirect=True)
def test_numbers_that_change_between_replayed_steps_give_their_own_values(mode):
    # A training loop whose steps replay (plans, fused step tapes) while the number behind a known value changes:
    # each read must give this step's value, never a range kept from an earlier step.
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).to("tpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for v in [5, 5, 5, 7, 7, 9, 9, 5, 5, 3, 3, 8]:
        t, got = _flags("tpu", v)
        loss = model(torch.randn(3, 4, device="tpu")).sum() + t.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert got == _flags("cpu", v)[1], v
    m = torch.tpu.metrics()
    assert m["known_value_reads"] > 0
    if mode == "fused":
        assert m["step_replays"] > 0


def test_a_graph_capture_leaves_no_range_behind():
    # Capture does not run the region: a counter it increments and a flag it computes keep their values until the
    # graph is replayed, and host reads of them (index checks too) must see those values, not the captured ones.
    counter = torch.zeros(2, dtype=torch.long, device="tpu")
    flag = torch.zeros((), dtype=torch.bool, device="tpu")
    table = torch.arange(6.0, device="tpu")
    g = torch.tpu.TPUGraph()
    with torch.tpu.graph(g):
        counter.fill_(7)
        flag.copy_((counter == 7).all())
    assert counter.tolist() == [0, 0] and bool(flag) is False
    assert table[counter].tolist() == [0.0, 0.0]
    g.replay()
    assert counter.tolist() == [7, 7] and bool(flag) is True
    with pytest.raises(IndexError):
        table[counter].cpu()


@pytest.mark.parametrize("mode", ["strict", "fused"], indirect=True)
def test_index_checks_on_computed_indices_read_nothing(mode):
    # Indices an op computes from uploaded ones carry a range the rule derives (here [3 - k, 9 - k]), in strict
    # mode's cold runs and their one-op plans as in fused graphs: the index checks of in-range lookups read
    # nothing, and an out-of-range one still raises. Strict mode's cold runs once dropped the ranges, and each
    # check read its indices (generate()'s embedding lookups: two device syncs a token).
    # Made on the device and not read before the loop: a read to the host would give tb a range of its own.
    tw, tb = torch.randn(10, 4, device="tpu"), torch.tensor([1, 2, 3], device="tpu")
    copies = _counts()[1]
    got = []
    for k in range(4):
        i = tb * 3 - k
        got.append(torch.index_select(tw, 0, i))
        torch.tpu.synchronize()
    assert _counts()[1] - copies == 0
    w, base = tw.cpu(), tb.cpu()
    for k, g in enumerate(got):
        assert torch.equal(g.cpu(), torch.index_select(w, 0, base * 3 - k))
    with pytest.raises(IndexError, match="index out of range"):
        torch.index_select(tw, 0, tb * 3 - 4)
