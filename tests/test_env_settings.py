"""Settings a script puts in os.environ before `import torch` reach the engine, as they would had they been set
in the shell: the engine (Go) copies the environment the process started with, so it reads its settings again
when the device initializes."""
import json
import os
import subprocess
import sys

SCRIPT = """
import os, json
{assign}
import torch
x = torch.ones(4, device="tpu")
for _ in range(6):
    x = x * 2 + 1
    torch.tpu.mark_step()
m = torch.tpu.metrics()
print(json.dumps(dict(mode=torch.tpu.get_mode(), total=x.sum().item(), replays=m["step_replays"])))
"""


def run(assign, env):
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(assign=assign)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_settings_put_in_os_environ_before_import_take_effect():
    env = {k: v for k, v in os.environ.items() if k not in ("TORCHTPU_MODE", "TORCHTPU_STEP_REPLAY")}
    shell = run("", dict(env, TORCHTPU_MODE="fused"))
    assert shell["mode"] == "fused" and shell["total"] == 508.0 and shell["replays"] > 0, shell
    script = run('os.environ["TORCHTPU_MODE"] = "fused"; os.environ["TORCHTPU_STEP_REPLAY"] = "0"', env)
    assert script == dict(mode="fused", total=508.0, replays=0), script
    # And the shell's setting is dropped when the script removes it.
    removed = run('del os.environ["TORCHTPU_MODE"]', dict(env, TORCHTPU_MODE="fused"))
    assert removed["mode"] == "strict" and removed["total"] == 508.0, removed
