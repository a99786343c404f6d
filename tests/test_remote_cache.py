"""The remote compile cache tier (TORCHTPU_CACHE_URL) against a real nginx WebDAV server."""
import hashlib
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

import fork_server

ROOT = Path(__file__).resolve().parent.parent

# Two steps of different shapes (so the second needs programs of its own),
# each checked against CPU PyTorch and timed; the metrics and times go to stdout.
SCRIPT = """
import json, time, torch
torch.zeros(1).to('tpu').cpu()  # start the engine before timing: a copy compiles nothing

def step(n):
    x = torch.arange(float(n)).view(2, n // 2)
    want = (x * 2 + 1).sum(dim=1)
    t0 = time.perf_counter()
    got = (x.to('tpu') * 2 + 1).sum(dim=1).cpu()
    took = time.perf_counter() - t0
    assert got.dtype == want.dtype and torch.equal(got, want), (n, got, want)
    return took

took = [step(6), step(10)]
print('VAL ok')
m = torch.tpu.metrics()
out = {k: m[k] for k in ('graphs_compiled', 'disk_cache_hits', 'remote_cache_hits')}
print('M', json.dumps(dict(out, step1_s=took[0], step2_s=took[1])))
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
        location /fail/ {{
            access_log {prefix}/fail.log;
            return 500;
        }}
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
    # Op by op (no cold runs), each op compiles a program of its own: more programs than the tier's failure limit.
    env = dict(os.environ, TORCHTPU_CACHE_DIR=str(tmp_dir), TORCHTPU_CACHE_URL=url, TORCHTPU_COLD_RUNS="0", **extra)
    r = fork_server.run(SCRIPT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "VAL ok" in r.stdout, r.stdout + r.stderr
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
    for f in uploaded:  # the same framing as the disk tier, sealed to the key it is stored under
        assert sealed_for(f.read_bytes()) == f.name

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
    assert m["step1_s"] < 5 and m["step2_s"] < 5, m  # a damaged entry costs no timeout
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


# --- Faults: each step must give CPU's values, warn naming the tier and the
# key, and stall no longer than the documented timeouts allow. ---

FAILURE_LIMIT = 3  # failures in a row that make the remote tier rest (README)


def sealed_for(data):
    """The key an intact sealed entry was written for: header line 2, checked
    against the SHA-256 over key, newline, payload that follows it."""
    magic, key, rest = data.split(b"\n", 2)
    assert magic == b"torchtpu-exe-v2", magic
    assert hashlib.sha256(key + b"\n" + rest[32:]).digest() == rest[:32], "digest mismatch"
    return key.decode()


def warnings(err):
    return [line for line in err.splitlines() if "torchtpu: warning:" in line]


@pytest.fixture(scope="module")
def warm(nginx, tmp_path_factory):
    """One run's entries (name -> sealed bytes), as uploaded and as written to disk."""
    url, root = nginx
    for f in remote_entries(root):
        f.unlink()
    disk = tmp_path_factory.mktemp("warm")
    m, err = run(disk, url)
    assert not warnings(err), err
    entries = {f.name: f.read_bytes() for f in remote_entries(root)}
    assert len(entries) == m["graphs_compiled"] > FAILURE_LIMIT
    assert entries == {f.stem: f.read_bytes() for f in disk.glob("*.exe")}, "both tiers hold the same entries"
    return entries


def serve(root, entries):
    """Makes the server hold exactly entries."""
    for f in remote_entries(root):
        f.unlink()
    for name, data in entries.items():
        (root / "ac" / name).write_bytes(data)


def test_poisoned_remote_entry_is_refused_and_rewritten(nginx, warm, tmp_path):
    url, root = nginx
    a, b = sorted(warm)[:2]
    serve(root, dict(warm, **{b: warm[a]}))  # the server hands out a's program as b's

    m, err = run(tmp_path, url)  # values checked against CPU inside
    assert m["graphs_compiled"] == 1 and m["remote_cache_hits"] == len(warm) - 1
    [w] = warnings(err)
    assert f"remote compile cache entry {b} is unusable" in w and f"is the program of key {a}" in w, w
    assert sealed_for((root / "ac" / b).read_bytes()) == b, "the recompile uploaded b's own program"
    assert sealed_for((tmp_path / f"{b}.exe").read_bytes()) == b, "and wrote it to disk"


def test_poisoned_and_old_disk_entries(warm, tmp_path):
    a, b, old = sorted(warm)[:3]
    for name, data in warm.items():
        (tmp_path / f"{name}.exe").write_bytes(data)
    (tmp_path / f"{b}.exe").write_bytes(warm[a])  # one entry copied over another's name
    payload = warm[old].split(b"\n", 2)[2][32:]  # one entry in the previous framing
    (tmp_path / f"{old}.exe").write_bytes(b"torchtpu-exe-v1\n" + hashlib.sha256(payload).digest() + payload)

    m, err = run(tmp_path, "")  # values checked against CPU inside
    assert m["graphs_compiled"] == 2 and m["disk_cache_hits"] == len(warm) - 2
    [w] = warnings(err)  # the old entry is a quiet miss
    assert f"on-disk compile cache entry {tmp_path / b}.exe is unusable" in w, w
    assert f"is the program of key {a}" in w and "deleted it" in w, w
    for name in (b, old):
        assert sealed_for((tmp_path / f"{name}.exe").read_bytes()) == name, "the recompiled program took the entry's place"


class FaultServer:
    """An HTTP server on a loopback port that misbehaves in one way.

    silent: accepts each connection and never answers; records how long the
        client waited before giving up (closing the connection).
    truncate: answers GET of an entry under `root` with its full Content-Length,
        sends half the body and closes; a missing entry is a 404; PUT is taken
        and dropped.
    """

    def __init__(self, mode, root=None):
        self.mode, self.root = mode, root
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.requests = []  # (method, seconds the client waited) per connection
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        t0 = time.monotonic()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                head += chunk
            method, path = head.split(b" ", 2)[:2] if head else (b"?", b"")
            if self.mode == "silent":
                while conn.recv(65536):  # read the body, say nothing, wait for the client to give up
                    pass
            elif method == b"GET":
                f = self.root / path.decode().lstrip("/")
                if f.exists():
                    body = f.read_bytes()
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
                else:
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            else:
                conn.settimeout(5)
                length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
                got = len(head.split(b"\r\n\r\n", 1)[1])
                while got < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += len(chunk)
                conn.sendall(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        with self.lock:
            self.requests.append((method.decode(), time.monotonic() - t0))

    def close(self):
        self.sock.close()


def test_truncated_transfer_recompiles_with_warning(nginx, warm, tmp_path):
    url, root = nginx
    serve(root, warm)
    server = FaultServer("truncate", root)
    try:
        m, err = run(tmp_path, server.url)
    finally:
        server.close()
    assert m["graphs_compiled"] == len(warm) and m["remote_cache_hits"] == 0
    ws = warnings(err)
    assert len(ws) == len(warm), err  # one per program, and nothing else
    assert all("remote compile cache entry" in w and "corrupt" in w and "the body ended" in w for w in ws), err
    assert {w.split("remote compile cache entry ")[1].split()[0] for w in ws} == set(warm)
    assert {f.stem: sealed_for(f.read_bytes()) for f in tmp_path.glob("*.exe")} == {k: k for k in warm}, \
        "only whole, recompiled programs on disk"
    assert m["step1_s"] + m["step2_s"] < 5, m  # a cut transfer costs no timeout


def test_server_errors_rest_the_tier(nginx, tmp_path):
    url, root = nginx
    log = root.parent / "fail.log"
    before = len(log.read_text().splitlines()) if log.exists() else 0
    m, err = run(tmp_path, url + "/fail")
    requests = log.read_text().splitlines()[before:]
    assert m["graphs_compiled"] > FAILURE_LIMIT and m["remote_cache_hits"] == 0
    assert len(requests) == FAILURE_LIMIT, requests  # then the tier rests: no request in step 2
    assert any('"GET /fail/ac/' in r for r in requests) and any('"PUT /fail/ac/' in r for r in requests), requests
    ws = warnings(err)
    assert len(ws) == FAILURE_LIMIT and all("500 Internal Server Error" in w for w in ws), err
    assert "not trying again for 1m0s" in ws[-1], ws
    assert ws[0].startswith("torchtpu: warning: remote compile cache entry ") and "could not be fetched" in ws[0], ws
    assert m["step1_s"] + m["step2_s"] < 5, m  # errors cost no timeout


def test_silent_server_stall_is_bounded_by_the_timeouts(tmp_path):
    timeout = 2.0  # TORCHTPU_CACHE_TIMEOUT (README); the default is 5 s
    server = FaultServer("silent")
    try:
        m, err = run(tmp_path, server.url, TORCHTPU_CACHE_TIMEOUT=str(timeout))
    finally:
        server.close()
    assert m["graphs_compiled"] > FAILURE_LIMIT and m["remote_cache_hits"] == 0
    # GET, then the upload of the compiled program, then the next GET; then
    # the tier rests and step 2 sends nothing.
    assert [r[0] for r in server.requests] == ["GET", "PUT", "GET"], server.requests
    for method, waited in server.requests:
        assert timeout - 0.1 < waited < timeout + 1.5, server.requests
    ws = warnings(err)
    assert len(ws) == FAILURE_LIMIT, err
    # A download's deadline and answer wait are both the timeout: either may end it.
    answer = r"(not done within 2s|no answer within 2s of sending the request)"
    assert "could not be fetched" in ws[0] and re.search("GET .*" + answer, ws[0]), ws
    assert "cannot upload compile cache entry" in ws[1] and re.search("PUT .*no answer within 2s", ws[1]), ws
    assert re.search("GET .*" + answer + "; not trying again for 1m0s", ws[2]), ws
    assert FAILURE_LIMIT * timeout - 0.3 < m["step1_s"] < FAILURE_LIMIT * timeout + 3, m
    assert m["step2_s"] < timeout, m  # the resting tier does not stall step 2
