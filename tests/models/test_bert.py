"""BERT (transformers) masked-LM training with padded rows, so attention runs with a padding mask."""
import pytest
import torch
from transformers import BertConfig, BertForMaskedLM

from .harness import MODES, Case, compare_training

VOCAB, SEQ, BATCH = 128, 16, 2


def build():
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0)
    return BertForMaskedLM(cfg)


def batch(i):
    g = torch.Generator().manual_seed(200 + i)
    ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, SEQ - 5:] = 0  # the second row is padded
    labels = torch.where(torch.rand(BATCH, SEQ, generator=g) < 0.3, ids, torch.full_like(ids, -100))
    labels[0, 0] = ids[0, 0]  # at least one labelled token
    return ids, mask, labels


def loss(model, b):
    return model(input_ids=b[0], attention_mask=b[1], labels=b[2]).loss


BERT = Case("bert", build, batch, loss)


@pytest.mark.parametrize("mode", MODES)
def test_bert_trains_like_cpu(mode):
    compare_training(BERT, mode)
