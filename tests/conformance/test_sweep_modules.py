"""The module sweep: module_db's ModuleInfo samples trained one step on tpu against CPU.

See module_worker.py for what a case checks. By default a fixed sample runs (SAMPLE: one or two modules of
each family, their first samples, strict mode, with the channels_last variants); TORCHTPU_CONFORMANCE=full
runs every sample of every module in the three modes; TORCHTPU_CONFORMANCE_CASES="nn.LSTM/*" runs the matching
cases. Known failures are listed in expected_modules.py.
"""

from . import cases, module_worker, sweep
from .expected_modules import EXPECTED

# Modules chosen to cover families: convolution, normalization, pooling, padding, recurrent, attention,
# embedding, activation, loss, lazy construction.
SAMPLE = [
    "nn.Conv2d", "nn.ConvTranspose1d", "nn.Conv3d", "nn.LazyConv2d", "nn.BatchNorm2d", "nn.GroupNorm",
    "nn.LayerNorm", "nn.InstanceNorm2d", "nn.MaxPool2d", "nn.AvgPool2d", "nn.AdaptiveAvgPool2d",
    "nn.ReflectionPad2d", "nn.Linear", "nn.Embedding", "nn.LSTM", "nn.GRUCell", "nn.TransformerEncoderLayer",
    "nn.MultiheadAttention", "nn.PReLU", "nn.GELU", "nn.CrossEntropyLoss", "nn.NLLLoss", "nn.BCEWithLogitsLoss",
    "nn.CTCLoss", "nn.SmoothL1Loss",
]
SAMPLE_INDICES = 3  # the first samples of each module in SAMPLE


def in_sample(cid):
    name, idx, mode = cid.split("/")[:3]
    return name in SAMPLE and int(idx) < SAMPLE_INDICES and mode == "strict"


def test_sample_names_exist():
    assert [n for n in SAMPLE if n not in module_worker.module_infos()] == []


def test_sweep_modules():
    all_ids = module_worker.case_ids(module_worker.module_infos())
    ids = sweep.select(all_ids, in_sample)
    results = cases.run_cases("tests.conformance.module_worker", ids, jobs=sweep.jobs(),
                              chunk=cases.balanced_chunks(ids, sweep.jobs(), 150))
    msg = sweep.check("modules", results, EXPECTED, all_ids, "tests/conformance/expected_modules.py")
    assert msg is None, msg
