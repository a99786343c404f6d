"""The zoo's tiers: tests marked zoo_full (generation, autocast) run only with TORCHTPU_ZOO=full (make
test-models); without it they are deselected, not skipped, and every training test runs one step."""
import os

import pytest

# The zoo builds every model from a config with random weights: nothing may come from the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

from .harness import FULL  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "zoo_full: runs only in the full model-zoo tier (TORCHTPU_ZOO=full)")


def pytest_collection_modifyitems(config, items):
    if FULL:
        return
    keep = [it for it in items if it.get_closest_marker("zoo_full") is None]
    dropped = [it for it in items if it.get_closest_marker("zoo_full") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
