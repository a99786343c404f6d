"""TORCHTPU_LOG: the comma-separated topics whose lines go to stderr, each prefixed "torchtpu:".

Topics: compiles, recompiles, fallbacks, replays (printed by the engine as they happen) and plugin (the PJRT
plugin's own logging). The engine reads the same variable the same way (engine/plugin_log.go).
"""

import os
import sys


def topics():
    """The set of topics TORCHTPU_LOG names."""
    return {t.strip() for t in os.environ.get("TORCHTPU_LOG", "").split(",") if t.strip()}


def enabled(topic):
    """Whether TORCHTPU_LOG names topic."""
    return topic in topics()


def log(topic, message):
    """Print one line for topic when it is enabled."""
    if enabled(topic):
        print(f"torchtpu: {message}", file=sys.stderr, flush=True)
