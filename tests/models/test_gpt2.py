"""GPT-2 (transformers, SDPA attention): training in every mode, greedy and sampled generation with the dynamic
and the static cache, decoding that compiles no program per token, and bf16 autocast."""
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

import compile_util

from .generation import check_sampling, compare_decoding_programs, compare_generation
from .harness import MODES, Case, compare_training

VOCAB, SEQ, BATCH = 128, 16, 2


def build():
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)
    return GPT2LMHeadModel(cfg)


def batch(i):
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(100 + i))
    return (ids,)


def loss(model, b):
    return model(input_ids=b[0], labels=b[0]).loss


GPT2 = Case("gpt2", build, batch, loss)
# bf16 autocast on both sides: bf16 keeps 8 significant bits (a rounding step of 4e-3 relative), and a backend
# that rounds a different intermediate, or accumulates in another order, moves gradients by about that much.
# Measured over four steps, tpu against CPU's bf16 autocast: loss gap 3.8e-5 to 7.3e-5, worst gradient 1.3e-2 to
# 1.4e-2 (a LayerNorm weight) in every mode.
GPT2_BF16 = Case("gpt2-bf16-autocast", build, batch, loss, loss_tol=1e-3, grad_tol=5e-2, autocast=torch.bfloat16)


@pytest.mark.parametrize("mode", MODES)
def test_gpt2_trains_like_cpu(mode):
    compare_training(GPT2, mode)


@pytest.mark.zoo_full
@pytest.mark.parametrize("mode", MODES)
def test_gpt2_bf16_autocast_trains_like_cpu(mode):
    compare_training(GPT2_BF16, mode)


@pytest.mark.parametrize("mode", MODES)
def test_gpt2_short_greedy_generation_with_a_static_cache_matches_cpu(mode):
    # The fast tier's one generate per mode: a static cache, so every mode also runs the compiled decoding step.
    compare_generation(build, (batch(7)[0][:, :4],), mode, max_new_tokens=4, cache="static", pad_token_id=0)


COLD_GENERATE = """
from transformers import GPT2Config, GPT2LMHeadModel
VOCAB = {vocab}
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4, resid_pdrop=0.0,
                                   embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)).eval()
kw = dict(max_new_tokens=16, min_new_tokens=16, do_sample=False, pad_token_id=0)
if {static}:
    kw["cache_implementation"] = "static"
prompt = torch.randint(1, VOCAB - 1, (1, 16), generator=torch.Generator().manual_seed(5))
with torch.no_grad():
    want = model.generate(prompt, **kw, **({{"disable_compile": True}} if {static} else {{}}))
torch.tpu.set_mode("fused")
model = model.to("tpu")
torch.tpu.reset_metrics()
with torch.no_grad():
    got = model.generate(prompt.to("tpu"), **kw).cpu()
report(equal=torch.equal(got, want), compiled=counters()["graphs_compiled"])
"""


# The programs a cold process compiles for one greedy generate() in fused mode: the prefill, the decoding step
# (the static cache's is compiled by generate() itself) and the graphs around it, once for the step that first
# grows the ids and once for the padded steps after it. generate()'s argument checks (`(eos < 0).any()`, its
# attention mask of ones) and the index checks of the ids and positions it makes are decided by value ranges and
# read nothing.
@pytest.mark.parametrize("cache,bound", [(None, 4), ("static", 6)])
def test_gpt2_cold_generate_compiles_a_fixed_number_of_programs(cache, bound):
    res, _ = compile_util.run(COLD_GENERATE.format(static=cache == "static", vocab=VOCAB), timeout=300,
                              env={"TORCHTPU_CACHE_DIR": "", "HF_HUB_OFFLINE": "1"})
    assert res["equal"], "tokens differ from CPU's"
    assert 0 < res["compiled"] <= bound, f"{res['compiled']} programs compiled by a cold generate() (bound {bound})"


@pytest.mark.zoo_full
@pytest.mark.parametrize("cache", [None, "static"])
@pytest.mark.parametrize("mode", MODES)
def test_gpt2_greedy_generation_matches_cpu(mode, cache):
    prompt = (batch(7)[0][:, :5],)
    compare_generation(build, prompt, mode, cache=cache, pad_token_id=0)


@pytest.mark.zoo_full
@pytest.mark.parametrize("cache", [None, "static"])
@pytest.mark.parametrize("mode", MODES)
def test_gpt2_sampled_generation_runs_on_tpu(mode, cache):
    check_sampling(build, (batch(8)[0][:, :5],), mode, VOCAB, cache=cache, pad_token_id=0)


@pytest.mark.parametrize("cache", [None, "static"])
@pytest.mark.parametrize("mode", [pytest.param("strict", marks=pytest.mark.zoo_full), "fused"])
def test_gpt2_decoding_compiles_no_program_per_token(mode, cache):
    # Three rows of six or seven tokens: shapes no other test (nor the other cache) generates from, so that the
    # programs counted are this test's own.
    prompt = torch.randint(0, VOCAB, (3, 6 if cache is None else 7), generator=torch.Generator().manual_seed(11))
    compare_decoding_programs(build, (prompt,), mode, cache=cache, pad_token_id=0)


@pytest.mark.parametrize("mode", [pytest.param("strict", marks=pytest.mark.zoo_full), "fused"])
def test_gpt2_left_padded_batch_decoding_compiles_no_program_per_token(mode):
    # A batch with a left-padded row: generate() builds an attention mask each step from an arange of the key
    # positions and the growing padding mask (engine/pad_ops.go keeps them padded). The second and third calls
    # may each compile the two small programs of the stop check on the newest token, read from the ids plain
    # in one call and padded in the next.
    prompt = torch.randint(1, VOCAB, (2, 9), generator=torch.Generator().manual_seed(13))
    mask = torch.ones_like(prompt)
    prompt[1, :3], mask[1, :3] = 0, 0
    compare_decoding_programs(build, (prompt,), mode, warm=3, warm_programs=2, attention_mask=mask, pad_token_id=0)


@pytest.mark.parametrize("mode", [pytest.param("strict", marks=pytest.mark.zoo_full), "fused"])
def test_gpt2_beam_search_compiles_no_program_per_token(mode):
    # Beam search reorders the key/value cache by beam each step (index_select along the batch, which keeps the
    # cache padded) and writes each step's tokens at the step's position of tensors it computed in the same
    # program (offsets.go: such windows land at runtime offsets once they move). Its running sequences span the
    # call's whole length, so the 24-token call compiles anew, but no more programs than the first call did.
    prompt = torch.randint(1, VOCAB, (1, 10), generator=torch.Generator().manual_seed(17))
    compare_decoding_programs(build, (prompt,), mode, long_programs="first", num_beams=4, pad_token_id=0)


@pytest.mark.parametrize("mode", [pytest.param("strict", marks=pytest.mark.zoo_full), "fused"])
def test_gpt2_repetition_penalty_decoding_compiles_no_program_per_token(mode):
    # The penalty gathers the scores at the growing ids and scatters them back (engine/pad_ops.go keeps both on
    # the padded ids).
    prompt = torch.randint(1, VOCAB, (1, 11), generator=torch.Generator().manual_seed(19))
    compare_decoding_programs(build, (prompt,), mode, repetition_penalty=1.3, pad_token_id=0)
