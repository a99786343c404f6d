"""Host fills (engine/host_fill.go): a program that reads nothing and fills its results with one constant
(zeros, zeros_like, zero_ of a new tensor) is made from host bytes instead of compiled. Values, dtypes and
strides stay CPU's, in every mode, on a first call and on replays; an in-place zero_ of a tensor a pending
op still reads leaves that op its old values; an Adam optimizer's first step compiles no program for its
state; fills above the size bound compile as before."""
import json
import os

import pytest
import torch

import fork_server

from conftest import Draws

randn, randint = Draws(31).pair()

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8, torch.bool]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_zeros_match_cpu(mode, dtype):
    torch.tpu.reset_metrics()
    for call in range(3):  # a first call, then replays
        for shape in [(3, 5), (2, 1, 4), (), (0, 3)]:
            x = torch.zeros(shape, dtype=dtype, device="tpu")
            like = torch.zeros_like(torch.empty(shape, dtype=dtype).t() if len(shape) == 2 else
                                    torch.empty(shape, dtype=dtype), device="tpu")
            want_like = torch.zeros_like(torch.empty(shape, dtype=dtype).t() if len(shape) == 2 else
                                         torch.empty(shape, dtype=dtype))
            for got, want in ((x, torch.zeros(shape, dtype=dtype)), (like, want_like)):
                c = got.cpu()
                assert c.dtype == want.dtype and c.shape == want.shape and got.stride() == want.stride()
                assert torch.equal(c, want), (call, shape)


COUNTS = r"""
import json, sys
import torch
torch.tpu.set_mode(sys.argv[1])
counts = []
def note(what):
    m = torch.tpu.metrics()
    counts.append([what, m["host_fills"], m["graphs_compiled"]])
x = torch.zeros(7, 9, device="tpu"); x.cpu(); note("zeros")
y = torch.zeros(7, 9, device="tpu"); y.cpu(); note("zeros again")
z = torch.full((3, 5), 2.5, device="tpu"); z.cpu(); note("full")
o = torch.ones(3, 5, device="tpu"); o.cpu(); note("ones")
cl = torch.zeros_like(torch.empty(2, 3, 4, 5, memory_format=torch.channels_last), device="tpu")
torch.tpu.synchronize()
note("channels_last zeros")  # zeros written in memory order into a new storage: still one value everywhere
b = torch.zeros(600, 1000, device="tpu"); b.cpu(); note("large zeros")
assert cl.stride() == (60, 1, 15, 3) and torch.equal(cl.cpu(), torch.zeros(2, 3, 4, 5))  # its read compiles
print("M " + json.dumps(counts))
"""


@pytest.mark.parametrize("run_mode", ["strict", "fused"])
def test_fills_compile_nothing_and_a_large_one_compiles(run_mode):
    """In a fresh process: each new fill is one host fill and no compile; a repeated fill is neither; a fill above
    the bound (2.4 MB) compiles."""
    r = fork_server.run(COUNTS, dict(os.environ, TORCHTPU_CACHE_DIR=""), timeout=300, args=[run_mode])
    assert r.returncode == 0, r.stderr
    counts = json.loads(r.stdout.split("M ")[1])
    assert counts == [["zeros", 1, 0], ["zeros again", 1, 0], ["full", 2, 0], ["ones", 2, 0],
                      ["channels_last zeros", 3, 0], ["large zeros", 3, 1]], counts


def test_zero_in_place_keeps_pending_readers_values(mode):
    a0 = randn(64, 33)
    for _ in range(3):
        a = a0.to("tpu")
        b = a * 2 + 1  # pending in fused mode, in flight in strict
        v = a[3:9]
        a.zero_()
        c = a + 5
        torch.testing.assert_close(b.cpu(), a0 * 2 + 1, rtol=0, atol=0)
        assert torch.equal(a.cpu(), torch.zeros(64, 33)) and torch.equal(v.cpu(), torch.zeros(6, 33))
        assert torch.equal(c.cpu(), torch.full((64, 33), 5.0))


def test_nonzero_constants_are_not_taken_for_zeros():
    torch.tpu.set_mode("strict")
    for dtype in [torch.float32, torch.int64, torch.bool]:
        for fill in (1, 3, -2):
            want = torch.full((4, 3), fill, dtype=dtype)
            got = torch.full((4, 3), fill, dtype=dtype, device="tpu")
            assert torch.equal(got.cpu(), want), (dtype, fill)
            ones = torch.ones(2, 5, dtype=dtype, device="tpu")
            assert torch.equal(ones.cpu(), torch.ones(2, 5, dtype=dtype))


ADAM = r"""
import copy, json, sys
import torch
torch.tpu.set_mode("strict")
opt_name, kind = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
if kind == "mlp":
    model = torch.nn.Sequential(torch.nn.Linear(12, 20), torch.nn.Tanh(), torch.nn.Linear(20, 3))
    x, y = torch.randn(16, 12), torch.randint(0, 3, (16,))
else:  # a channels_last conv net: Adam's state of its weights is laid out channels_last too
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3), torch.nn.ReLU(), torch.nn.Conv2d(6, 4, 3), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 4 * 4, 3)).to(memory_format=torch.channels_last)
    x, y = torch.randn(5, 3, 8, 8).to(memory_format=torch.channels_last), torch.randint(0, 3, (5,))
models = {"cpu": model, "tpu": copy.deepcopy(model).to("tpu")}
torch.tpu.synchronize()
torch.tpu.reset_metrics()
opts = {k: getattr(torch.optim, opt_name)(m.parameters(), lr=0.05) for k, m in models.items()}  # Adagrad fills here
first = None
for step in range(3):
    for dev, m in models.items():
        loss = torch.nn.functional.cross_entropy(m(x.to(dev)), y.to(dev))
        opts[dev].zero_grad(set_to_none=True)
        loss.backward()
        opts[dev].step()
    if step == 0:
        first = torch.tpu.metrics()["host_fills"]
for pc, pt in zip(models["cpu"].parameters(), models["tpu"].parameters()):
    torch.testing.assert_close(pt.cpu(), pc, rtol=1e-5, atol=1e-6)
    for k, v in opts["cpu"].state[pc].items():
        vt = opts["tpu"].state[pt][k]
        torch.testing.assert_close(vt.cpu(), v, rtol=1e-5, atol=1e-6, msg=k)
        assert vt.stride() == v.stride() and vt.dtype == v.dtype, k
print("M " + json.dumps({"fills": first, "shapes": len({tuple(p.shape) for p in model.parameters()})}))
"""


@pytest.mark.parametrize("opt_name,kind", [("AdamW", "mlp"), ("Adam", "mlp"), ("Adagrad", "mlp"), ("Adam", "conv")])
def test_adam_state_compiles_no_program_and_matches_cpu(opt_name, kind):
    """An optimizer that makes zeros for its state at its first step (a program per parameter shape before)
    makes them from host bytes, in a fresh process; parameters and state equal CPU's after three steps."""
    r = fork_server.run(ADAM, dict(os.environ, TORCHTPU_CACHE_DIR=""), timeout=300, args=[opt_name, kind])
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.split("M ")[1])
    # one fill per parameter shape at least (Adagrad's sums fill with its initial value, a runtime number;
    # backward's first gradient is a fill of ones)
    assert m["fills"] >= m["shapes"], m


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_fills_from_numbers_match_cpu(mode, dtype):
    """torch.full and torch.ones pass their value as a runtime number: the fill is made from it on the host."""
    values = [1, 3, -2, 0.1, float("-inf"), float("nan"), 2**62 + 1, True, 255]
    for call in range(2):
        for v in values:
            try:
                want = torch.full((3, 4), v, dtype=dtype)
            except RuntimeError as e:  # a value the dtype cannot hold: tpu refuses it too
                with pytest.raises(RuntimeError, match="overflow|convert|value cannot"):
                    torch.full((3, 4), v, dtype=dtype, device="tpu").cpu()
                continue
            got = torch.full((3, 4), v, dtype=dtype, device="tpu")
            assert torch.equal(got.cpu(), want) or (want.isnan().all() and got.cpu().isnan().all()), (v, call)
        for shape in [(5,), (2, 3, 2), ()]:
            assert torch.equal(torch.ones(shape, dtype=dtype, device="tpu").cpu(), torch.ones(shape, dtype=dtype))
            x = torch.empty(shape, dtype=dtype, device="tpu").fill_(1)
            assert torch.equal(x.cpu(), torch.ones(shape, dtype=dtype))


def test_fill_from_a_tensor_value_compiles_and_alternates_with_numbers(mode):
    """The same fill program fed a 0-dim tpu tensor (no host value) runs compiled; fed numbers, from the host."""
    for k in range(3):
        t = torch.tensor(2.5 + k, device="tpu")
        x = torch.empty(4, 3, device="tpu").fill_(t)
        y = torch.empty(4, 3, device="tpu").fill_(7.0 + k)
        z = torch.full((4, 3), -1.5 * k, device="tpu")
        assert torch.equal(x.cpu(), torch.full((4, 3), 2.5 + k))
        assert torch.equal(y.cpu(), torch.full((4, 3), 7.0 + k))
        assert torch.equal(z.cpu(), torch.full((4, 3), -1.5 * k))


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2, torch.complex32, torch.complex64,
                                   torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_fills_of_other_dtypes_match_cpu(mode, dtype):
    """float8 (stored in its XLA type), complex32 (held as pairs of float16) and complex64 (not a host fill),
    unsigned: the bytes CPU holds."""
    for make in (lambda dev: torch.zeros(3, 4, dtype=dtype, device=dev),
                 lambda dev: torch.ones(3, 4, dtype=dtype, device=dev),
                 lambda dev: torch.full((3, 4), 2, dtype=dtype, device=dev)):
        want, got = make("cpu"), make("tpu").cpu()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))
