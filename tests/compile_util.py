"""Runs a torch.compile scenario in a process of its own (forked from one that holds torch but no Dynamo and
no tpu backend: fresh Dynamo caches, a fresh engine, a hard timeout; tests/fork_server.py) and returns the
JSON it prints on its RESULT line."""
import json
import os

import fork_server

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

PRELUDE = """
import json, sys
import torch
import torch.nn as nn
import torch.nn.functional as F
sys.path.insert(0, {examples!r})

def report(**kw):
    print("RESULT " + json.dumps(kw), flush=True)

def counters():
    m = torch.tpu.metrics()
    return {{k: m[k] for k in ("graphs_compiled", "compiled_programs", "compiled_replays", "compiled_fallbacks",
                               "compiled_fallback_calls", "compiled_programs_by_reason", "compiled_fallback_reasons", "executions")}}
"""


def run(code, timeout=600, env=None):
    """Runs PRELUDE + code; returns (result dict, stderr)."""
    full = PRELUDE.format(examples=os.path.join(ROOT, "examples")) + code
    e = dict(os.environ)
    e.update(env or {})
    r = fork_server.run(full, e, ROOT, timeout)
    assert r.returncode == 0, r.stderr[-4000:]
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(lines[-1][len("RESULT "):]), r.stderr
