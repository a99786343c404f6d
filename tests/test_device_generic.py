"""The device-generic runner (tests/device_generic/) on a small test file of its own: outcomes, the CPU rerun's
verdicts, hangs and crashes, and the summary. Nothing is downloaded."""
import json
import textwrap

import pytest

from tests.device_generic import fetch, report, run

PROBE = textwrap.dedent('''
    import os
    import signal
    import time

    import torch
    from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, onlyCUDA
    from torch.testing._internal.common_utils import TestCase


    def on_tpu(device):
        return torch.device(device).type == "tpu"


    class TestProbe(TestCase):
        def test_add(self, device):
            x = torch.arange(4.0, device=device)
            self.assertEqual((x + x).cpu(), torch.tensor([0.0, 2.0, 4.0, 6.0]))

        @dtypes(torch.float32, torch.int64)
        def test_sum(self, device, dtype):
            self.assertEqual(torch.ones(5, device=device, dtype=dtype).sum().item(), 5)

        def test_wrong_on_tpu(self, device):
            self.assertEqual(torch.zeros(2, device=device) + on_tpu(device), torch.zeros(2, device=device))

        def test_fails_everywhere(self, device):
            raise RuntimeError("fails on every device")

        @onlyCUDA
        def test_cuda(self, device):
            pass

        def test_sleeps(self, device):
            if on_tpu(device):
                time.sleep(120)

        def test_stuck(self, device):
            if on_tpu(device):
                signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])
                time.sleep(120)

        def test_aborts(self, device):
            if on_tpu(device):
                os.abort()


    class TestPlain(TestCase):
        def test_plain(self):
            pass


    instantiate_device_type_tests(TestProbe, globals())
''')


def test_cpu_twin():
    assert (run.cpu_twin("test_torch.py::TestTorchDeviceTypePRIVATEUSE1::test_copy_tpu_float32")
            == "test_torch.py::TestTorchDeviceTypeCPU::test_copy_cpu_float32")
    assert run.cpu_twin("test_indexing.py::NumpyTestsTPU::test_none_index_tpu") == \
        "test_indexing.py::NumpyTestsCPU::test_none_index_cpu"
    assert run.cpu_twin("t.py::TestFooTPU::test_x_dim_1_tpu_int64") == "t.py::TestFooCPU::test_x_dim_1_cpu_int64"
    assert run.cpu_twin("t.py::TestFooTPU::test_tpu_only_tpu") == "t.py::TestFooCPU::test_tpu_only_cpu"


def test_group_key_separates_wrong_values_by_test_and_merges_op_errors():
    rec = dict(outcome="failed", msg="AssertionError: Tensor-likes are not close!")
    assert report.group_key("f.py::C::test_a_tpu_float32", rec) != report.group_key("f.py::C::test_b_tpu", rec)
    assert report.group_key("f.py::C::test_a_tpu_float32", rec) == report.group_key("f.py::C::test_a_tpu_int64", rec)
    one = dict(outcome="failed", msg="RuntimeError: scatter: index [2, 3] int64 does not fit torch.float32 (dim 1)")
    two = dict(outcome="failed", msg="RuntimeError: scatter: index [5] int64 does not fit torch.bfloat16 (dim -1)")
    assert report.group_key("f.py::C::test_a_tpu", one) == report.group_key("f.py::C::test_b_tpu", two)
    assert report.normalize("log1p of float16 at 0x7f00 size 12") == "log1p of <dtype> at 0x? size N"


def test_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert fetch.cache_dir() == str(tmp_path / "torchtpu" / "device_generic")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert fetch.cache_dir() == str(tmp_path / "home" / ".cache" / "torchtpu" / "device_generic")


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory):
    """Runs the probe file through the runner once: a 3 s limit per test, killed 3 s after that, four tests a
    worker."""
    tmp = tmp_path_factory.mktemp("devgen")
    src = tmp / "src"
    src.mkdir()
    (src / "test_probe.py").write_text(PROBE)
    opts = run.parse_args(["--out", str(tmp / "out"), "--test-timeout", "3", "--kill-grace", "3",
                           "--program-cache", "", "--files", "test_probe.py", "--tests-per-worker", "4"])
    logged = []
    entry = run.run_one(str(src), "test_probe.py", opts, log=logged.append)
    return entry, logged


def test_outcomes_and_verdicts(probe_run):
    entry, logged = probe_run
    got = {tid.split("::")[-1]: (rec["outcome"], rec["verdict"], rec.get("cpu")) for tid, rec in entry["records"].items()}
    assert got == {
        "test_add_tpu": ("passed", "passed", None),
        "test_sum_tpu_float32": ("passed", "passed", None),
        "test_sum_tpu_int64": ("passed", "passed", None),
        "test_wrong_on_tpu_tpu": ("failed", "tpu", "passed"),
        "test_fails_everywhere_tpu": ("failed", "drift", "failed"),
        "test_cuda_tpu": ("skipped", "skipped", None),
        "test_sleeps_tpu": ("failed", "tpu", "passed"),
        "test_stuck_tpu": ("timeout", "tpu", "passed"),
        "test_aborts_tpu": ("crash", "tpu", "passed"),
    }
    assert all("::TestProbe" in tid for tid in entry["collected"]), "TestPlain takes no device and must not run"
    recs = {tid.split("::")[-1]: rec for tid, rec in entry["records"].items()}
    assert recs["test_fails_everywhere_tpu"]["msg"] == "RuntimeError: fails on every device"
    assert "per-test time limit" in recs["test_sleeps_tpu"]["msg"]
    assert recs["test_aborts_tpu"]["msg"] == "crash: died: signal 6 (SIGABRT)"
    assert recs["test_stuck_tpu"]["msg"].startswith("timeout: no progress for 6 s")
    assert recs["test_add_tpu"]["engine"]["compiles"] >= 1
    assert entry["errors"] == []
    assert any("crash" in line and "test_aborts_tpu" in line for line in logged)


def test_summary_counts(probe_run):
    entry, _ = probe_run
    row = report.file_counts(entry)
    assert (row["collected"], row["skipped"], row["passed"], row["tpu"], row["drift"], row["notrun"]) == \
        (9, 1, 3, 4, 1, 0)
    assert report.rate(row) == pytest.approx(3 / 7)
    results = dict(env=dict(tests="probe", torch="x", commit="abc", dirty=False, mode="strict", python="3",
                            cpus=2), seconds=60, command="make test-device-generic", files=[entry])
    md = report.markdown(results)
    assert "**3 of 7 judged tests pass (42.9%)**" in md
    assert "**crash** `test_probe.py::TestProbePRIVATEUSE1::test_aborts_tpu`" in md
    lines = report.failure_list([entry]).splitlines()
    assert len(lines) == 4 and all(line.count("\t") == 2 for line in lines)
    json.dumps(entry)  # results.json holds it as it is
