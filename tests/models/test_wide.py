"""The wide zoo (make test-zoo-wide, TORCHTPU_ZOO=wide): 56 more architectures from transformers (encoders, decoders
with rotary, ALiBi, sliding-window and mixture-of-experts layers, encoder-decoders, vision transformers),
torchvision and timm, each trained two AdamW steps in every mode against CPU eager (wide_cases.py says which and
why some run in float64). Without TORCHTPU_ZOO=wide these tests are deselected, not skipped."""
import pytest

from .harness import MODES, Case, compare_training
from .wide_cases import SPECS, case

pytestmark = pytest.mark.zoo_wide


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(SPECS))
def test_trains_like_cpu(name, mode):
    compare_training(Case(*case(name)), mode, steps=2)
