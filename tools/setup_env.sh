#!/usr/bin/env bash
# setup_env.sh creates the Python environment outside the clone (reused while the
# requirement files are unchanged), installs torch and the pinned XLA CPU plugin,
# installs the torchtpu package from this clone in editable mode, and prints the
# environment's path. With --path it only prints the path, creating nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${TORCHTPU_HOME:-$HOME/.cache/torchtpu}
key=$(cat "$root/python/requirements.txt" "$root/python/requirements-plugin.txt" | sha256sum | cut -c1-12)
venv=$cache/venv-$key
if [ "${1:-}" = --path ]; then echo "$venv"; exit 0; fi
mkdir -p "$cache"
if [ ! -f "$venv/.complete" ]; then
  echo "setup_env: creating $venv (torch and the XLA CPU plugin; first time only)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$root/python/requirements.txt" >&2
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes \
    -r "$root/python/requirements-plugin.txt" >&2
  touch "$venv/.complete"
fi
# The editable install points at one clone; redo it when this clone is another
# (TORCHTPU_KEEP_EDITABLE=1 keeps it: the Makefile puts this clone first on
# PYTHONPATH anyway, so several work trees can share one environment). A new
# environment always gets one: without it `import torch` does not autoload tpu.
clone=$(cat "$venv/.clone" 2>/dev/null || true)
if [ -z "$clone" ] || { [ "${TORCHTPU_KEEP_EDITABLE:-0}" != 1 ] && [ "$clone" != "$root" ]; }; then
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps --no-build-isolation -e "$root/python" >&2
  echo "$root" > "$venv/.clone"
fi
echo "$venv"
