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


def test_other_settings_get_a_server_of_their_own():
    # torch reads TORCH_* settings when it is imported: a server started with another value serves the script.
    r = fork_server.run("import os, torch\nprint(os.environ['TORCH_SHOW_CPP_STACKTRACES'], torch.ones(2).sum().item())",
                        env=dict(os.environ, TORCH_SHOW_CPP_STACKTRACES="1"))
    assert (r.returncode, r.stdout) == (0, "1 2.0\n"), r.stderr[-2000:]
    assert fork_server._key(dict(os.environ, TORCH_SHOW_CPP_STACKTRACES="1")) != fork_server._key(dict(os.environ))
    assert fork_server._key(dict(os.environ, TORCHTPU_MODE="x", CONFORMANCE_CRASH_OP="y")) == \
        fork_server._key(dict(os.environ))


def test_spawned_module_writes_its_log_and_reports_a_signal(tmp_path):
    # The conformance runners' workers: python -m module args, stdout and stderr to one log, polled and killed.
    (tmp_path / "spawned_mod.py").write_text("import os, signal, sys\nprint('args', sys.argv[1:], flush=True)\n"
                                             "print('err', file=sys.stderr, flush=True)\n"
                                             "if sys.argv[1] == 'abort':\n    os.abort()\n"
                                             "if sys.argv[1] == 'hang':\n    signal.pause()\n")
    log = tmp_path / "log"
    p = fork_server.spawn(module="spawned_mod", args=["ok", 2], cwd=tmp_path, out=log, preload=("json",))
    assert p.wait(60) == 0 and log.read_text() == "args ['ok', '2']\nerr\n"
    p = fork_server.spawn(module="spawned_mod", args=["abort"], cwd=tmp_path, out=log, preload=("json",))
    assert p.wait(60) == -6
    p = fork_server.spawn(module="spawned_mod", args=["hang"], cwd=tmp_path, out=log, preload=("json",))
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(1)
    p.kill()
    assert p.wait(60) == -9
