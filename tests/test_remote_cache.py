"""The remote compile cache tier (TORCHTPU_CACHE_URL) against a real nginx WebDAV server."""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, torch
x = torch.arange(6.0).to('tpu').view(2, 3)
y = (x * 2 + 1).sum(dim=1)
print('VAL', y.cpu().tolist())
m = torch.tpu.metrics()
print('M', json.dumps({k: m[k] for k in ('graphs_compiled', 'disk_cache_hits', 'remote_cache_hits')}))
"""

NGINX_CONF = """
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    client_max_body_size 1g;
    server {{
        listen 127.0.0.1:{port};
        root {prefix}/cache;
        location / {{
            dav_methods PUT;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, prefix):
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}: {(prefix / 'error.log').read_text(errors='replace')}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nginx did not start listening")


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    """A real nginx accepting GET and PUT (the HTTP cache setup Bazel documents) on a loopback port."""
    setup = subprocess.run([str(ROOT / "tools" / "setup_nginx.sh")], capture_output=True, text=True, timeout=900)
    if setup.returncode != 0:
        pytest.fail(f"nginx with WebDAV is needed and could not be installed:\n{setup.stderr}")
    binary = setup.stdout.strip().splitlines()[-1]
    prefix = tmp_path_factory.mktemp("nginx")
    (prefix / "cache").mkdir()
    (prefix / "tmp").mkdir()
    port = free_port()
    (prefix / "nginx.conf").write_text(NGINX_CONF.format(prefix=prefix, port=port))
    proc = subprocess.Popen([binary, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(prefix / "nginx.conf")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_listening(port, proc, prefix)
        yield f"http://127.0.0.1:{port}", prefix / "cache"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def run(tmp_dir, url, **extra):
    env = dict(os.environ, TORCHTPU_CACHE_DIR=str(tmp_dir), TORCHTPU_CACHE_URL=url, **extra)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "VAL [9.0, 27.0]" in r.stdout, r.stdout
    return json.loads(r.stdout.split("M ")[1]), r.stderr


def remote_entries(root):
    return sorted((root / "ac").glob("*")) if (root / "ac").exists() else []


def test_nginx_serves_put_then_get(nginx):
    url, root = nginx
    req = urllib.request.Request(url + "/ac/probe", data=b"hello", method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status in (201, 204)
    with urllib.request.urlopen(url + "/ac/probe", timeout=10) as r:
        assert r.read() == b"hello"
    (root / "ac" / "probe").unlink()


def test_second_process_downloads_and_compiles_nothing(nginx, tmp_path):
    url, root = nginx
    for f in remote_entries(root):
        f.unlink()
    a, _ = run(tmp_path / "a", url)
    assert a["graphs_compiled"] > 0 and a["remote_cache_hits"] == 0
    uploaded = remote_entries(root)
    assert len(uploaded) == a["graphs_compiled"]
    for f in uploaded:  # the same framing as the disk tier
        assert f.read_bytes().startswith(b"torchtpu-exe-v1\n")

    b, _ = run(tmp_path / "b", url)  # an empty local directory: another host
    assert b["graphs_compiled"] == 0
    assert b["remote_cache_hits"] == a["graphs_compiled"] and b["disk_cache_hits"] == 0
    assert len(list((tmp_path / "b").glob("*.exe"))) == a["graphs_compiled"], "remote hits are written to disk"

    c, _ = run(tmp_path / "b", url)  # now the disk tier answers first
    assert c["graphs_compiled"] == 0 and c["disk_cache_hits"] == a["graphs_compiled"] and c["remote_cache_hits"] == 0


def test_corrupt_remote_entry_recompiles_with_warning(nginx, tmp_path):
    url, root = nginx
    run(tmp_path / "a", url)
    entries = remote_entries(root)
    assert entries
    for f in entries:  # truncate every entry
        f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 2])
    m, err = run(tmp_path / "b", url)
    assert m["graphs_compiled"] == len(entries) and m["remote_cache_hits"] == 0
    assert "remote compile cache entry" in err and "corrupt" in err
    # The recompile uploaded good entries again.
    again, err = run(tmp_path / "c", url)
    assert again["graphs_compiled"] == 0 and again["remote_cache_hits"] == len(entries)
    assert "warning" not in err


def test_unreachable_server_never_fails_a_step(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    m, err = run(tmp_path, url)
    assert m["graphs_compiled"] > 0 and m["remote_cache_hits"] == 0
    assert "unavailable" in err


def test_bad_cache_url_is_ignored_with_warning(tmp_path):
    m, err = run(tmp_path, "not-a-url")
    assert m["graphs_compiled"] > 0
    assert "TORCHTPU_CACHE_URL" in err
