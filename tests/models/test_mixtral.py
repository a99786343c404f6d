"""Mixtral (transformers), a sparse mixture of experts: each token's router picks 2 of 4 experts, the tokens are
sorted by expert, counted per expert with an integer `histc` (as on CUDA; CPU counts floats) and multiplied by
their expert's weights with `torch._grouped_mm`, transformers' default experts implementation. Training in every
mode; the full tier also trains the other two implementations (a loop over experts, and batched matmuls of
gathered weights) and decodes greedily."""
import pytest
import torch
from transformers import MixtralConfig, MixtralForCausalLM

from .generation import compare_generation
from .harness import MODES, Case, compare_training

VOCAB, SEQ, BATCH = 128, 12, 2


def builder(experts=None):
    def build():
        torch.manual_seed(0)
        cfg = MixtralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                            num_local_experts=4, num_experts_per_tok=2, bos_token_id=VOCAB - 2,
                            eos_token_id=VOCAB - 1, pad_token_id=0)
        if experts is not None:
            cfg._experts_implementation = experts
        return MixtralForCausalLM(cfg)
    return build


def batch(i):
    return (torch.randint(0, VOCAB, (BATCH, SEQ), generator=torch.Generator().manual_seed(500 + i)),)


def loss(model, b):
    return model(input_ids=b[0], labels=b[0]).loss


MIXTRAL = Case("mixtral", builder(), batch, loss)


@pytest.mark.parametrize("mode", MODES)
def test_mixtral_trains_like_cpu(mode):
    compare_training(MIXTRAL, mode)


@pytest.mark.zoo_full
@pytest.mark.parametrize("experts", ["eager", "batched_mm"])
def test_mixtral_other_experts_implementations_train_like_cpu(experts):
    compare_training(Case(f"mixtral-{experts}", builder(experts), batch, loss), "fused")


@pytest.mark.zoo_full
@pytest.mark.parametrize("mode", MODES)
def test_mixtral_greedy_generation_matches_cpu(mode):
    compare_generation(builder(), (batch(7)[0][:, :5],), mode)
