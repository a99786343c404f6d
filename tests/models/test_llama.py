"""Llama (transformers) with grouped-query attention (2 key/value heads for 4 query heads): training in every
mode, greedy and sampled generation with the dynamic and the static cache."""
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from .generation import check_sampling, compare_decoding_programs, compare_generation
from .harness import MODES, Case, compare_training

VOCAB, SEQ, BATCH = 128, 16, 2


def build():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                      bos_token_id=VOCAB - 2, eos_token_id=VOCAB - 1, pad_token_id=0)
    assert cfg.num_key_value_heads < cfg.num_attention_heads
    return LlamaForCausalLM(cfg)


def batch(i):
    return (torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(400 + i)),)


def loss(model, b):
    return model(input_ids=b[0], labels=b[0]).loss


LLAMA = Case("llama-gqa", build, batch, loss)


@pytest.mark.parametrize("mode", MODES)
def test_llama_trains_like_cpu(mode):
    compare_training(LLAMA, mode)


@pytest.mark.zoo_full
@pytest.mark.parametrize("cache", [None, "static"])
@pytest.mark.parametrize("mode", MODES)
def test_llama_greedy_generation_matches_cpu(mode, cache):
    compare_generation(build, (batch(7)[0][:, :5],), mode, cache=cache)


@pytest.mark.zoo_full
@pytest.mark.parametrize("cache", [None, "static"])
@pytest.mark.parametrize("mode", MODES)
def test_llama_sampled_generation_runs_on_tpu(mode, cache):
    check_sampling(build, (batch(8)[0][:, :5],), mode, VOCAB, cache=cache)


@pytest.mark.parametrize("mode", [pytest.param("strict", marks=pytest.mark.zoo_full), "fused"])
def test_llama_decoding_compiles_no_program_per_token(mode):
    # Without a mask transformers passes the grouped heads to scaled_dot_product_attention (enable_gqa), which
    # takes the fused attention over the padded cache.
    prompt = torch.randint(1, VOCAB, (1, 7), generator=torch.Generator().manual_seed(21))
    compare_decoding_programs(build, (prompt,), mode, pad_token_id=0)
