"""Runs the tests' `python -c` scripts in processes forked from one that has already imported torch.

A fresh interpreter spends 3.5 to 4 s of CPU importing torch before a script's first line; a child forked
from a server that holds torch starts in about 0.3 s. The server imports torch with device autoload off, so
that no Go runtime exists before a fork; each child then takes the caller's environment, working folder and
stdin-less stdio, loads the tpu backend as autoload does (unless the environment turns autoload off), runs the
code as `__main__`, runs the exit handlers and leaves with the code's exit status. One server per test process,
started on first use; a child that outlives its timeout is killed with its process group. torch reads some of
its settings from the environment when it is imported, so only scripts whose environment differs from the
server's in the engine's settings alone (TORCHTPU_*, read when the device initializes) are forked; any other
starts an interpreter of its own.
"""
import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading

SERVER = r"""
import atexit, json, os, signal, sys, time, traceback
import torch

def child(req):
    code = 0
    try:
        os.setpgid(0, 0)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, req["out"]), (2, req["err"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.stdin = open(os.devnull)
        sys.argv = ["-c", *req["args"]]
        try:
            if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1":
                torch._import_device_backends()
            exec(compile(req["code"], "<string>", "exec"), {"__name__": "__main__"})
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if e.code is not None and not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        child(req)
    deadline = time.monotonic() + req["timeout"]
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            timed_out = True
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status = os.waitpid(pid, 0)
            break
        time.sleep(0.01)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "timed_out": timed_out}), flush=True)
"""

_lock = threading.Lock()
_server = None
forks = 0  # scripts run in forked children so far (the rest started interpreters of their own)


def _start():
    base = dict(os.environ)
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=dict(base, TORCH_DEVICE_BACKEND_AUTOLOAD="0"), text=True)
    server.base_env = base
    return server


def _stop():
    if _server is not None and _server.poll() is None:
        _server.stdin.close()
        try:
            _server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            _server.kill()


atexit.register(_stop)


def run(code, env=None, cwd=None, timeout=300, args=()):
    """Runs `python -c code *args` with env (default: this process's) in cwd (default: this process's) in a forked
    child; returns subprocess.CompletedProcess (text stdout and stderr). Raises subprocess.TimeoutExpired as
    subprocess.run does."""
    global _server
    env = dict(os.environ) if env is None else env
    cwd = os.getcwd() if cwd is None else cwd
    with _lock:
        if _server is not None and _server.poll() is not None:
            _server = None
        if _others(env) != _others(_server.base_env if _server is not None else dict(os.environ)):
            # torch read the server's environment when the server imported it, so a script whose environment
            # differs in more than the engine's settings (which the engine reads when the device initializes,
            # in the child) starts an interpreter of its own.
            return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env,
                                  timeout=timeout, cwd=cwd)
        if _server is None:
            _server = _start()
        return _run(code, env, cwd, timeout, [str(a) for a in args])


def _others(env):
    """The environment without the engine's settings (TORCHTPU_*) and pytest's name of the running test."""
    return {k: v for k, v in env.items() if not k.startswith("TORCHTPU_") and k != "PYTEST_CURRENT_TEST"}


def _run(code, env, cwd, timeout, args):
    global forks
    forks += 1
    with tempfile.TemporaryDirectory(prefix="fork-server-") as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        req = json.dumps(dict(code=code, args=args, env=env, cwd=str(cwd), timeout=timeout, out=out, err=err))
        _server.stdin.write(req + "\n")
        _server.stdin.flush()
        reply = _server.stdout.readline()
        if not reply:
            raise RuntimeError(f"the fork server exited (status {_server.wait()})")
        res = json.loads(reply)
        with open(out, errors="replace") as f:
            stdout = f.read()
        with open(err, errors="replace") as f:
            stderr = f.read()
        if res["timed_out"]:
            raise subprocess.TimeoutExpired([sys.executable, "-c", "..."], timeout, stdout, stderr)
        return subprocess.CompletedProcess([sys.executable, "-c", code, *args], res["rc"], stdout, stderr)
