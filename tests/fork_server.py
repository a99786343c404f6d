"""Runs the tests' scripts and workers in processes forked from one that has already imported torch.

A fresh interpreter spends 3.5 to 4 s of CPU importing torch before a script's first line (10 s when it also
imports OpInfo's op_db); a child forked from a server that holds them starts in about 0.3 s. A server imports
torch (and the modules it was asked to preload) with device autoload off, so that no Go runtime exists before
a fork; each child then takes the caller's environment, working folder, arguments and output files, loads the
tpu backend as autoload does (unless the environment turns autoload off), runs the code or module as
`__main__`, runs the exit handlers and leaves with its exit status. A child is the leader of its own process
group, so killing it takes whatever it started.

torch reads some settings from the environment when it is imported (thread counts, logging), so a server serves
only scripts whose environment equals the one it started with, apart from the settings that only the children
read after the fork: the engine's (TORCHTPU_*, read when the device initializes), the conformance runners'
(CONFORMANCE_*, SWEEP_*), pytest's name of the running test and whether the tpu backend loads (a server never
loads it). Each test process starts at most MAX_SERVERS servers, on first use; past that a script starts an
interpreter of its own.
"""
import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

MAX_SERVERS = 3

SERVER = r"""
import atexit, gc, importlib, json, os, runpy, sys, traceback
import torch
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
gc.freeze()  # the collector of a child never walks (and so never copies) the pages of what the server imported

def child(req):
    code = 0
    try:
        os.setpgid(0, 0)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        out = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = out if req["err"] == req["out"] else os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.stdin = open(os.devnull)
        try:
            if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1":
                torch._import_device_backends()
            if req["module"]:
                sys.argv = [req["module"], *req["args"]]
                sys.path.insert(0, req["cwd"])
                runpy.run_module(req["module"], run_name="__main__", alter_sys=True)
            else:
                sys.argv = ["-c", *req["args"]]
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
    if req["op"] == "spawn":
        pid = os.fork()
        if pid == 0:
            child(req)
        reply = {"pid": pid}
    else:  # poll
        done, status = os.waitpid(req["pid"], os.WNOHANG)
        reply = {"rc": os.waitstatus_to_exitcode(status) if done else None}
    print(json.dumps(reply), flush=True)
"""

_lock = threading.Lock()
_servers = {}  # (preload, environment key) -> Popen of the server
forks = 0  # children forked so far (the rest started interpreters of their own)

# Settings read only after the fork, by the child's own code.
_CHILD_READ = ("TORCHTPU_", "CONFORMANCE_", "SWEEP_", "PYTEST_CURRENT_TEST", "TORCH_DEVICE_BACKEND_AUTOLOAD")


def _key(env):
    return tuple(sorted((k, v) for k, v in env.items() if not k.startswith(_CHILD_READ)))


def _server(env, preload):
    """The live server for env and preload, started if needed; None when MAX_SERVERS are already running."""
    key = (preload, _key(env))
    s = _servers.get(key)
    if s is not None and s.poll() is None:
        return s
    if sum(1 for s in _servers.values() if s.poll() is None) >= MAX_SERVERS:
        return None
    s = subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(list(preload))], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=dict(env, TORCH_DEVICE_BACKEND_AUTOLOAD="0"), text=True)
    _servers[key] = s
    return s


def _ask(server, req):
    server.stdin.write(json.dumps(req) + "\n")
    server.stdin.flush()
    reply = server.stdout.readline()
    if not reply:
        raise RuntimeError(f"the fork server exited (status {server.wait()})")
    return json.loads(reply)


def _stop():
    for s in _servers.values():
        if s.poll() is None:
            s.stdin.close()
            try:
                s.wait(timeout=30)
            except subprocess.TimeoutExpired:
                s.kill()


atexit.register(_stop)


class Process:
    """A forked child, with the part of subprocess.Popen's interface the tests' runners use."""

    def __init__(self, server, pid, argv):
        self._server, self.pid, self.args, self.returncode = server, pid, argv, None

    def poll(self):
        if self.returncode is None:
            with _lock:
                self.returncode = _ask(self._server, {"op": "poll", "pid": self.pid})["rc"]
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.002
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        return self.returncode

    def kill(self):
        if self.returncode is None:
            _killpg(self.pid)


def spawn(code=None, module=None, args=(), env=None, cwd=None, out=os.devnull, err=None, preload=()):
    """Starts `python -c code *args` or `python -m module *args` with env (default: this process's) in cwd
    (default: this process's), stdout written to the file out and stderr to err (default: out); returns a
    Process, or a subprocess.Popen when no server can serve env."""
    global forks
    env = dict(os.environ) if env is None else env
    cwd = str(os.getcwd() if cwd is None else cwd)
    args = [str(a) for a in args]
    err = out if err is None else err
    argv = [sys.executable, *(["-m", module] if module else ["-c", code]), *args]
    with _lock:
        server = _server(env, tuple(preload))
        if server is not None:
            forks += 1
            pid = _ask(server, dict(op="spawn", code=code, module=module, args=args, env=env, cwd=cwd,
                                    out=str(out), err=str(err)))["pid"]
            return Process(server, pid, argv)
    with open(out, "w") as fo:
        fe = subprocess.STDOUT if err == out else open(err, "w")
        try:
            return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                    start_new_session=True)
        finally:
            if fe is not subprocess.STDOUT:
                fe.close()


def run(code, env=None, cwd=None, timeout=300, args=()):
    """Runs `python -c code *args` as spawn does and waits for it; returns subprocess.CompletedProcess (text
    stdout and stderr). A child past timeout seconds is killed with its process group and
    subprocess.TimeoutExpired raised, as subprocess.run does."""
    with tempfile.TemporaryDirectory(prefix="fork-server-") as tmp:
        out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        p = spawn(code, args=args, env=env, cwd=cwd, out=out, err=err)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            kill_group(p)
            raise subprocess.TimeoutExpired(p.args, timeout, _read(out), _read(err))
        return subprocess.CompletedProcess(p.args, p.returncode, _read(out), _read(err))


def kill_group(p):
    """Kills p (a Process or a Popen that leads its own process group) and whatever it started; waits for it."""
    _killpg(p.pid)
    p.wait()


def _killpg(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read(path):
    with open(path, errors="replace") as f:
        return f.read()
