"""peer_envs: the virtual environments of the peer frameworks, made on first use.

Each peer lives in its own environment under the project's cache folder
(`${TORCHTPU_HOME:-~/.cache/torchtpu}/peers/<name>-<key>`), never in the
project's own environment. The key is a digest of the pinned requirements, so a
change of pins makes a fresh environment; `.complete` marks a finished one.

- "xla": torch 2.9.0 and torch_xla 2.9.0 (torch_xla pins torch exactly). PyPI
  carries only the CUDA build of torch for x86_64, so its nvidia-* wheels come
  along; they are loaded at import but need no GPU, and everything runs on CPU.
  transformers, at the project's own pin, for bench/generate.py.
- "jax": jax and optax on the XLA CPU backend, plus matplotlib for `--plot`.
"""
import hashlib
import os
import subprocess
import sys

PINS = {
    "xla": ["torch==2.9.0", "torch_xla==2.9.0", "numpy==2.4.6", "transformers==5.25.0"],
    "jax": ["jax==0.10.2", "jaxlib==0.10.2", "optax==0.2.8", "numpy==2.4.6", "matplotlib==3.11.2"],
}


def cache_root():
    home = os.environ.get("TORCHTPU_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "torchtpu")
    return os.path.join(home, "peers")


def env_dir(name):
    key = hashlib.sha256("\n".join(PINS[name]).encode()).hexdigest()[:10]
    return os.path.join(cache_root(), f"{name}-{key}")


def python(name, log=print, timeout=1800):
    """Returns the interpreter of peer environment name, creating the environment first if needed."""
    path = env_dir(name)
    exe = os.path.join(path, "bin", "python")
    if os.path.exists(os.path.join(path, ".complete")):
        return exe
    log(f"peer_envs: creating {path} ({', '.join(PINS[name])}); first use only, this takes minutes")
    os.makedirs(cache_root(), exist_ok=True)
    subprocess.run(["rm", "-rf", path], check=True)
    base = getattr(sys, "_base_executable", sys.executable)
    steps = [
        [base, "-m", "venv", path],
        [exe, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--upgrade", "pip"],
        [exe, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PINS[name]],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"peer_envs: creating {name} failed at `{' '.join(cmd[:4])} ...`:\n{r.stderr[-3000:]}")
    open(os.path.join(path, ".complete"), "w").close()
    return exe


if __name__ == "__main__":
    for n in sys.argv[1:] or list(PINS):
        print(n, python(n))
