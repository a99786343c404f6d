"""T5 (transformers, default SDPA attention): its learned relative position bias is a float attention mask that
requires grad. Training in every mode and greedy generation."""
import pytest
import torch
from transformers import T5Config, T5ForConditionalGeneration

from .generation import compare_decoding_programs, compare_generation
from .harness import MODES, Case, compare_training

VOCAB, SRC, TGT, BATCH = 128, 12, 8, 2


def build():
    torch.manual_seed(0)
    cfg = T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                   num_heads=4, relative_attention_num_buckets=8, relative_attention_max_distance=16,
                   dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return T5ForConditionalGeneration(cfg)


def batch(i):
    g = torch.Generator().manual_seed(300 + i)
    return torch.randint(2, VOCAB, (BATCH, SRC), generator=g), torch.randint(2, VOCAB, (BATCH, TGT), generator=g)


def loss(model, b):
    return model(input_ids=b[0], labels=b[1]).loss


T5 = Case("t5", build, batch, loss)


@pytest.mark.parametrize("mode", MODES)
def test_t5_trains_like_cpu(mode):
    compare_training(T5, mode)


@pytest.mark.zoo_full
@pytest.mark.parametrize("mode", MODES)
def test_t5_greedy_generation_matches_cpu(mode):
    compare_generation(build, (batch(7)[0],), mode)


@pytest.mark.parametrize("mode", [pytest.param("strict", marks=pytest.mark.zoo_full), "fused"])
def test_t5_decoding_compiles_no_program_per_token(mode):
    # The decoder's relative position bias is computed each step from the growing key positions
    # (tests/test_padded_ops.py, bias_loop). Each call after the first may compile two small programs of its own.
    prompt = torch.randint(2, VOCAB, (1, 9), generator=torch.Generator().manual_seed(23))
    compare_decoding_programs(build, (prompt,), mode, warm_programs=2, long_programs=2)
