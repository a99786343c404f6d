"""The wide zoo's cases: 56 more architectures, each a small seeded model with random weights (nothing is
downloaded), built from transformers' configs, torchvision's and timm's constructors.

A case is (build, batch, loss) as harness.Case takes them. Every dropout and drop-path rate is set to 0 (CPU and
tpu draw other random numbers). FLOAT64 names the models trained in float64: small convolutional nets whose batch
norms see a few elements per channel turn float32 rounding into gradient differences of a percent or more, and
CPU's own float32 run differs from its float64 run as much. DenseNet-121 is left out: at 32 pixels its last block's
batch norms see 2 elements per channel, and even in float64 CPU against itself in another memory order
(channels_last) ends one AdamW step 0.7% apart in loss."""

import torch
import torch.nn.functional as F

V = 128


def ids(seed, b=2, t=12, v=V):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, v, (b, t), generator=g)


def _hf(cfgcls, modelcls, **kw):
    import transformers as T

    return lambda: getattr(T, modelcls)(getattr(T, cfgcls)(**kw))


def causal(cfgcls, modelcls, **kw):
    return (
        _hf(cfgcls, modelcls, vocab_size=V, **kw),
        lambda i: (ids(100 + i),),
        lambda m, b: m(input_ids=b[0], labels=b[0]).loss,
    )


def masked_batch(i):
    x, y = ids(200 + i), ids(250 + i)
    mask = torch.ones_like(x)
    mask[1, -3:] = 0
    return x, y, mask


def masked(cfgcls, modelcls, **kw):
    return (
        _hf(cfgcls, modelcls, vocab_size=V, **kw),
        masked_batch,
        lambda m, b: m(input_ids=b[0], attention_mask=b[2], labels=b[1]).loss,
    )


def seq2seq(cfgcls, modelcls, **kw):
    return (
        _hf(cfgcls, modelcls, vocab_size=V, **kw),
        lambda i: (ids(300 + i), ids(350 + i, t=8)),
        lambda m, b: m(input_ids=b[0], labels=b[1]).loss,
    )


def image_loss(m, b):
    out = m(b[0])
    out = getattr(out, "logits", out)
    if isinstance(out, (tuple, list)):
        out = out[0]
    return F.cross_entropy(out, b[1])


def image(build, size=32, classes=10, b=2):
    def batch(i):
        g = torch.Generator().manual_seed(400 + i)
        return torch.randn(b, 3, size, size, generator=g), torch.randint(0, classes, (b,), generator=g)

    return build, batch, image_loss


def hfimage(cfgcls, modelcls, size=32, **kw):
    return image(_hf(cfgcls, modelcls, num_labels=10, **kw), size=size)


def tv(name, size=64, **kw):
    def build():
        import torchvision.models as M

        return getattr(M, name)(num_classes=10, **kw)

    return image(build, size=size)


def channels_last(spec):
    """spec with its model and images in channels_last memory order (weights, activations and gradients)."""
    build, batch, loss = spec
    return (lambda: build().to(memory_format=torch.channels_last),
            lambda i: (batch(i)[0].contiguous(memory_format=torch.channels_last), *batch(i)[1:]), loss)


def tv_class(module, cls, size=32, **kw):
    def build():
        import importlib

        return getattr(importlib.import_module("torchvision.models." + module), cls)(num_classes=10, **kw)

    return image(build, size=size)


def timm_(name, size=64, **kw):
    def build():
        import timm

        return timm.create_model(name, pretrained=False, num_classes=10, **kw)

    return image(build, size=size)


SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64)
LLAMALIKE = dict(SMALL, num_key_value_heads=2, max_position_embeddings=64)
SPECS = {
    "distilbert": masked(
        "DistilBertConfig", "DistilBertForMaskedLM", dim=32, n_layers=2, n_heads=4, hidden_dim=64, dropout=0.0,
        attention_dropout=0.0
    ),
    "roberta": masked(
        "RobertaConfig", "RobertaForMaskedLM", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **SMALL
    ),
    "albert": masked(
        "AlbertConfig", "AlbertForMaskedLM", embedding_size=16, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, **SMALL
    ),
    "electra": masked(
        "ElectraConfig", "ElectraForMaskedLM", embedding_size=16, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, **SMALL
    ),
    "deberta_v2": masked(
        "DebertaV2Config", "DebertaV2ForMaskedLM", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        relative_attention=True, position_buckets=8, max_relative_positions=16, pos_att_type=["p2c", "c2p"], **SMALL
    ),
    "gpt_neo": causal(
        "GPTNeoConfig", "GPTNeoForCausalLM", hidden_size=32, num_layers=2, num_heads=4,
        attention_types=[[["global", "local"], 1]], window_size=4, max_position_embeddings=64, embed_dropout=0.0,
        attention_dropout=0.0, resid_dropout=0.0
    ),
    "gpt_neox": causal("GPTNeoXConfig", "GPTNeoXForCausalLM", max_position_embeddings=64, rotary_pct=0.5, **SMALL),
    "gptj": causal(
        "GPTJConfig", "GPTJForCausalLM", n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=64,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
    ),
    "opt": causal(
        "OPTConfig", "OPTForCausalLM", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=64,
        max_position_embeddings=64, word_embed_proj_dim=32, dropout=0.0
    ),
    "bloom": causal(
        "BloomConfig", "BloomForCausalLM", hidden_size=32, n_layer=2, n_head=4, hidden_dropout=0.0,
        attention_dropout=0.0
    ),
    "falcon": causal(
        "FalconConfig", "FalconForCausalLM", hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        new_decoder_architecture=False, multi_query=True, alibi=False
    ),
    "mistral": causal("MistralConfig", "MistralForCausalLM", sliding_window=4, **LLAMALIKE),
    "mixtral": causal("MixtralConfig", "MixtralForCausalLM", num_local_experts=4, num_experts_per_tok=2, **LLAMALIKE),
    "qwen2": causal("Qwen2Config", "Qwen2ForCausalLM", **LLAMALIKE),
    "qwen2_moe": causal(
        "Qwen2MoeConfig", "Qwen2MoeForCausalLM", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
        shared_expert_intermediate_size=32, **LLAMALIKE
    ),
    "phi": causal(
        "PhiConfig", "PhiForCausalLM", max_position_embeddings=64, partial_rotary_factor=0.5, resid_pdrop=0.0,
        embd_pdrop=0.0, **SMALL
    ),
    "phi3": causal("Phi3Config", "Phi3ForCausalLM", pad_token_id=0, **LLAMALIKE),
    "gemma": causal("GemmaConfig", "GemmaForCausalLM", head_dim=8, **LLAMALIKE),
    "gemma2": causal("Gemma2Config", "Gemma2ForCausalLM", head_dim=8, sliding_window=4, **LLAMALIKE),
    "stablelm": causal("StableLmConfig", "StableLmForCausalLM", **LLAMALIKE),
    "mpt": causal("MptConfig", "MptForCausalLM", d_model=32, n_heads=4, n_layers=2, max_seq_len=64),
    "bart": seq2seq(
        "BartConfig", "BartForConditionalGeneration", d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=64, dropout=0.0, pad_token_id=1, decoder_start_token_id=2
    ),
    "pegasus": seq2seq(
        "PegasusConfig", "PegasusForConditionalGeneration", d_model=32, encoder_layers=2, decoder_layers=2,
        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
        max_position_embeddings=64, dropout=0.0, pad_token_id=0, decoder_start_token_id=0
    ),
    "mt5": seq2seq(
        "MT5Config", "MT5ForConditionalGeneration", d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4,
        relative_attention_num_buckets=8, dropout_rate=0.0, decoder_start_token_id=0, feed_forward_proj="gated-gelu"
    ),
    "vit_hf": hfimage(
        "ViTConfig", "ViTForImageClassification", image_size=32, patch_size=8, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, **SMALL
    ),
    "swin_hf": hfimage(
        "SwinConfig", "SwinForImageClassification", image_size=32, patch_size=2, embed_dim=16, depths=[1, 2],
        num_heads=[2, 4], window_size=4
    ),
    "beit": hfimage(
        "BeitConfig", "BeitForImageClassification", image_size=32, patch_size=8, use_relative_position_bias=True,
        **SMALL
    ),
    "convnextv2_hf": hfimage(
        "ConvNextV2Config", "ConvNextV2ForImageClassification", image_size=32, hidden_sizes=[8, 16, 32, 64],
        depths=[1, 1, 1, 1]
    ),
    "mobilevit": hfimage(
        "MobileViTConfig", "MobileViTForImageClassification", image_size=64, size=64, hidden_sizes=[32, 40, 48],
        neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64]
    ),
    "segformer": hfimage(
        "SegformerConfig", "SegformerForImageClassification", size=32, hidden_sizes=[8, 16, 24, 32],
        num_attention_heads=[1, 2, 2, 4], depths=[1, 1, 1, 1], decoder_hidden_size=32
    ),
    "dinov2": hfimage("Dinov2Config", "Dinov2ForImageClassification", image_size=32, patch_size=8, **SMALL),
    "tv_mobilenet_v2": tv("mobilenet_v2", width_mult=0.25),
    "tv_mobilenet_v3_small": tv("mobilenet_v3_small"),
    "tv_efficientnet_b0": tv("efficientnet_b0"),
    "tv_shufflenet_v2": tv("shufflenet_v2_x0_5"),
    "tv_squeezenet": tv("squeezenet1_1"),
    "tv_regnet": tv("regnet_y_400mf"),
    "tv_googlenet": tv("googlenet", aux_logits=False, init_weights=True),
    "tv_mnasnet": tv("mnasnet0_5"),
    "tv_resnet18_channels_last": channels_last(tv("resnet18")),
    "timm_convnext_channels_last": channels_last(timm_("convnext_atto", size=64)),
    "tv_swin": tv_class(
        "swin_transformer", "SwinTransformer", patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[2, 2],
        window_size=[2, 2]
    ),
    "tv_vit": tv_class(
        "vision_transformer", "VisionTransformer", image_size=32, patch_size=8, num_layers=2, num_heads=4,
        hidden_dim=32, mlp_dim=64
    ),
    "tv_maxvit": tv_class(
        "maxvit", "MaxVit", input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[16, 32],
        block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0
    ),
    "timm_efficientnet": timm_("efficientnet_b0"),
    "timm_mixer": timm_("mixer_s32_224", size=64, img_size=64),
    "timm_levit": timm_("levit_128s", size=224),
    "timm_poolformer": timm_("poolformer_s12", size=64),
    "timm_coatnet": timm_("coatnet_nano_rw_224", size=64, img_size=64),
    "timm_regnet": timm_("regnetx_002", size=64),
    "timm_ghostnet": timm_("ghostnet_050", size=64),
    "timm_resnest": timm_("resnest14d", size=64),
    "timm_cait": timm_("cait_xxs24_224", size=32, img_size=32, patch_size=8, depth=2),
    "timm_deit": timm_("deit_tiny_patch16_224", size=32, img_size=32, patch_size=8, depth=2),
    "timm_eva": timm_("eva02_tiny_patch14_224", size=28, img_size=28, depth=2),
    "timm_nfnet": timm_("nf_resnet26", size=64),
}


FLOAT64 = {
    "mobilevit", "tv_mobilenet_v2", "tv_mobilenet_v3_small", "tv_efficientnet_b0", "tv_shufflenet_v2", "tv_regnet",
    "tv_googlenet", "tv_mnasnet", "tv_maxvit", "timm_efficientnet", "timm_levit", "timm_poolformer", "timm_coatnet",
    "timm_ghostnet", "timm_resnest", "timm_nfnet", "tv_resnet18_channels_last",
}


def no_dropout(model):
    """model with every dropout and drop-path rate at 0."""
    for mod in model.modules():
        if isinstance(mod, torch.nn.modules.dropout._DropoutNd) or type(mod).__name__ == "StochasticDepth":
            mod.p = 0.0
        for name in ("drop_prob", "drop_rate"):
            if isinstance(getattr(mod, name, None), float):
                setattr(mod, name, 0.0)
    return model


def case(name):
    """The harness.Case arguments (name, build, batch, loss) of wide-zoo model name."""
    build, batch, loss = SPECS[name]
    dtype = torch.float64 if name in FLOAT64 else torch.float32

    def seeded():
        torch.manual_seed(0)
        return no_dropout(build()).to(dtype)

    def typed(i):
        return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch(i))

    return name, seeded, typed, loss
