"""The zoo's tiers: tests marked zoo_full (generation, autocast) run only with TORCHTPU_ZOO=full (make
test-models), and those marked zoo_wide (test_wide.py's 56 more architectures) only with TORCHTPU_ZOO=wide (make
test-zoo-wide); without them they are deselected, not skipped, and every other training test runs one step."""
import os

import pytest

# The zoo builds every model from a config with random weights: nothing may come from the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from .harness import FULL  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "zoo_full: runs only in the full model-zoo tier (TORCHTPU_ZOO=full)")
    config.addinivalue_line("markers", "zoo_wide: runs only in the wide model-zoo tier (TORCHTPU_ZOO=wide)")


def pytest_collection_modifyitems(config, items):
    tier = os.environ.get("TORCHTPU_ZOO", "")

    def selected(it):
        if it.get_closest_marker("zoo_wide") is not None:
            return tier == "wide"
        return FULL or it.get_closest_marker("zoo_full") is None

    keep = [it for it in items if selected(it)]
    dropped = [it for it in items if not selected(it)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
