"""The persistent compile cache is on by default: programs go to torchtpu/programs under XDG_CACHE_HOME (or
~/.cache), a second process compiles nothing, the folder stays under TORCHTPU_CACHE_SIZE, and
TORCHTPU_CACHE_DIR= (set and empty) turns it off. Each case runs in a fresh process, since the engine reads
the settings once."""
import json
import os

import fork_server

CODE = ("import torch, json\nx = torch.arange(6.0 * STEPS).to('tpu').view(2, 3 * STEPS)\n"
        "for k in range(STEPS):\n    x = x * 2 + k\n"
        "print('VAL', x.sum(dim=1).cpu().tolist())\n"
        "m = torch.tpu.metrics()\nprint('M', json.dumps({k: m[k] for k in ('graphs_compiled', 'disk_cache_hits')}))\n")


def run(tmp_path, n=1, **env):
    e = {k: v for k, v in os.environ.items() if k != "TORCHTPU_CACHE_DIR"}
    e.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), **env)
    r = fork_server.run(CODE.replace("STEPS", str(n)), env=e, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.split("VAL ")[1].split("\n")[0], json.loads(r.stdout.split("M ")[1])


def test_default_location_and_a_warm_second_process(tmp_path):
    folder = tmp_path / "xdg" / "torchtpu" / "programs"
    val1, m1 = run(tmp_path)
    assert m1["graphs_compiled"] > 0 and len(list(folder.glob("*.exe"))) == m1["graphs_compiled"]
    val2, m2 = run(tmp_path)
    assert val2 == val1 == str(torch_free_reference(1))
    assert m2["graphs_compiled"] == 0 and m2["disk_cache_hits"] == m1["graphs_compiled"]


def test_empty_cache_dir_turns_it_off(tmp_path):
    _, m1 = run(tmp_path, TORCHTPU_CACHE_DIR="")
    _, m2 = run(tmp_path, TORCHTPU_CACHE_DIR="")
    assert m2["graphs_compiled"] == m1["graphs_compiled"] > 0 and m2["disk_cache_hits"] == 0
    assert not (tmp_path / "xdg").exists()


def test_size_bound_evicts_the_least_recently_used(tmp_path):
    folder = tmp_path / "xdg" / "torchtpu" / "programs"
    _, m = run(tmp_path, n=1)
    written = m["graphs_compiled"]
    sizes = [f.stat().st_size for f in folder.glob("*.exe")]
    bound = int(max(sizes) * 6.5)  # room for six entries of the largest size
    for n in (2, 3, 4, 5):  # each n adds programs of other shapes
        _, m = run(tmp_path, n=n, TORCHTPU_CACHE_SIZE=str(bound))
        written += m["graphs_compiled"]
        assert sum(f.stat().st_size for f in folder.glob("*.exe")) <= bound
    assert len(list(folder.glob("*.exe"))) < written  # entries were evicted
    # A bound too small for the folder never fails a step.
    val, _ = run(tmp_path, n=3, TORCHTPU_CACHE_SIZE="1")
    assert val == str([float(v) for v in torch_free_reference(3)])


def torch_free_reference(n):
    rows = [[float(v) for v in range(3 * n)], [float(v) for v in range(3 * n, 6 * n)]]
    for k in range(n):
        rows = [[v * 2 + k for v in r] for r in rows]
    return [sum(r) for r in rows]
