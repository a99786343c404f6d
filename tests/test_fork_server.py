"""tests/fork_server.py runs scripts as `python -c` would: output, exit status, working folder, timeouts, and
the engine's environment variables (which Go reads from the process's start) taking effect."""
import os
import subprocess

import pytest

import fork_server


def test_output_status_and_folder(tmp_path):
    r = fork_server.run("import os, sys, torch\nprint(os.getcwd(), (torch.ones(2, device='tpu') * 3).sum().item())\n"
                        "print('to stderr', file=sys.stderr)\nsys.exit(3)", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (3, f"{tmp_path} 6.0\n", "to stderr\n")
    r = fork_server.run("raise ValueError('boom')")
    assert r.returncode == 1 and r.stderr.rstrip().endswith("ValueError: boom"), r.stderr


def test_a_script_past_its_timeout_is_killed():
    with pytest.raises(subprocess.TimeoutExpired):
        fork_server.run("import time\ntime.sleep(60)", timeout=2)
    assert fork_server.run("print('next')").stdout == "next\n"


def test_engine_settings_in_the_environment_take_effect():
    # TORCHTPU_STEP_REPLAY is read by the engine (Go) when the device initializes, in the forked child.
    code = ("import torch\ntorch.tpu.set_mode('fused')\nx = torch.ones(4, device='tpu')\nfor _ in range(6):\n"
            "    x = x * 2 + 1\n    torch.tpu.mark_step()\nprint(x.sum().item(), torch.tpu.metrics()['step_replays'])")
    on = fork_server.run(code).stdout.split()
    forks = fork_server.forks
    off = fork_server.run(code, env=dict(os.environ, TORCHTPU_STEP_REPLAY="0")).stdout.split()
    assert fork_server.forks == forks + 1, "a script differing in TORCHTPU_* alone is forked"
    assert on[0] == off[0] == "508.0" and int(on[1]) > 0 and off[1] == "0", (on, off)


def test_other_settings_start_an_interpreter_of_their_own():
    # torch reads TORCH_* settings when it is imported: the server's import cannot serve another value.
    forks = fork_server.forks
    r = fork_server.run("import os, torch\nprint(os.environ['TORCH_SHOW_CPP_STACKTRACES'], torch.ones(2).sum().item())",
                        env=dict(os.environ, TORCH_SHOW_CPP_STACKTRACES="1"))
    assert (r.returncode, r.stdout, fork_server.forks) == (0, "1 2.0\n", forks), (r.stderr[-2000:], fork_server.forks)
