"""PyTorch's own device-generic tests on tpu: a pass rate with version drift taken out.

    python -m tests.device_generic.run                        # every file below -> build/device_generic/
    python -m tests.device_generic.run --files test_view_ops.py -k "view and not inplace"
    make test-device-generic DEVGEN_ARGS="--files test_indexing.py"

The test files are PyTorch 2.6.0's, downloaded at run time (tests/device_generic/fetch.py) and never kept in the
repository; the testing internals they import are the installed torch's. instantiate_device_type_tests makes a
class per device type it finds, PrivateUse1TestBase among them once tpu is registered;
PYTORCH_TESTING_DEVICE_ONLY_FOR=tpu keeps only that one, and the worker plugin (tests/device_generic/plugin.py)
runs only the classes it made (TestTorchDeviceTypePRIVATEUSE1, NumpyTestsTPU, ...), never the files' plain
TestCase classes, which do not take a device.

Each file runs in its own pytest workers (tests/device_generic/worker.py), one after another, each taking the next
100 tests (--tests-per-worker), with a time limit per test (SIGALRM, then a kill when no Python runs) and per
file; a hang or a crash fails the test it happened in and a new worker goes on with the rest. Workers are cut
short because one process that has compiled thousands of programs runs each new test about 2.5 times slower
than a fresh one (test_index_reduce_reduce_amin_tpu_float32, compiling its 432 programs: 70 s after 300 tests
of test_torch.py in one process, 32 s in a fresh one). Every tpu failure is then rerun on CPU (the same test id with cpu in place of tpu, in a
worker without the tpu backend): a test that fails on CPU as well fails because the 2.6 test does not match the
installed torch (drift) and leaves the denominator; a test that passes on CPU, is skipped there or has no CPU
twin is a tpu failure. pass rate = passed / (passed + tpu failures); skipped tests count nowhere.

The files: the device-generic core a backend is judged on, by what the tests touch.
  test_torch.py                 tensor semantics: copies, views, storage, serialization, RNG, type conversion
  test_view_ops.py              views and their aliasing
  test_indexing.py              advanced indexing, index_put, NumPy-style indexing
  test_type_promotion.py        result dtypes of binary ops, out= casting
  test_tensor_creation_ops.py   factories, ranges, full/empty/eye, as_tensor
  test_shape_ops.py             flip, roll, rot90, movedim, nonzero, ...
  test_nn.py                    TestNNDeviceType only (the modules and functionals on a device)
  test_scatter_gather_ops.py    scatter, gather and their reductions
  test_sort_and_select.py       sort, topk, kthvalue, unique
  test_reductions.py            reductions, without its @ops tests (see below)
Left out: test_ops.py, test_unary_ufuncs.py, test_binary_ufuncs.py and the @ops tests of test_reductions.py
(4,287 of its 4,662): they are generated per OpInfo of the installed torch's op_db rather than written against
2.6, they would multiply the run time several times, and tests/conformance already sweeps op_db on tpu.

Stand-ins (tests/device_generic/standins.py), each for a name the 2.6 files import that torch 2.15 no longer has:
  common_cuda.tf32_is_not_fp32      removed; it answered whether a CUDA GPU runs float32 matmuls in TF32, so
                                    False here, where there is no CUDA device.
  common_mkldnn.bf32_on_and_off     renamed reduced_f32_on_and_off (bf32_precision keeps its meaning); it only
                                    changes anything on the CPU device.
  common_nn.new_module_tests        the list became the function get_new_module_tests(); the stand-in is its
                                    result.
  hypothesis                        not installed (test_nn.py imports it for TestFusionEval, a plain class that
                                    never runs here); a stand-in module whose @given skips the test.

Outcomes go to build/device_generic/ (results.json, summary.md, the workers' logs); --failures writes the tpu
failures one a line with their first error line. The tpu workers keep a persistent compile cache of their own in
the cache folder (programs/), so a second run compiles almost nothing: many of these tests index one element at a
time in Python loops, and each new offset is a new program.
"""
import argparse
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time

from . import fetch, report, worker

FILES = ["test_torch.py", "test_view_ops.py", "test_indexing.py", "test_type_promotion.py",
         "test_tensor_creation_ops.py", "test_shape_ops.py", "test_nn.py", "test_scatter_gather_ops.py",
         "test_sort_and_select.py", "test_reductions.py"]
# Files whose @ops tests are left out (see the docstring).
NO_OPINFO = {"test_reductions.py"}
OUT = os.path.join(worker.ROOT, "build", "device_generic")
FAILED = ("failed", "timeout", "crash")


def cpu_twin(test_id):
    """Returns the node id of the CPU instantiation of a tpu test: the class suffix PRIVATEUSE1 or TPU becomes
    CPU and the device part of the test name, its last tpu, becomes cpu."""
    path, cls, name = test_id.split("::")
    cls = re.sub(r"(PRIVATEUSE1|TPU)$", "CPU", cls)
    spots = list(re.finditer(r"(?<=_)tpu(?=_|$)", name))
    if spots:  # the last: instantiation appends the device after the test's own name and parameters
        name = name[:spots[-1].start()] + "cpu" + name[spots[-1].end():]
    return f"{path}::{cls}::{name}"


def classify(tpu_records, cpu_records):
    """Sets verdict on every tpu record: passed, skipped, xfailed, notrun, drift (failed on tpu and on CPU) or
    tpu (failed on tpu only); a failed record also gets cpu, the outcome of its CPU twin ("absent" when the CPU
    run has no such test)."""
    for tid, rec in tpu_records.items():
        if rec["outcome"] not in FAILED:
            rec["verdict"] = rec["outcome"]
            continue
        twin = cpu_records.get(cpu_twin(tid))
        rec["cpu"] = twin["outcome"] if twin else "absent"
        rec["verdict"] = "drift" if rec["cpu"] in FAILED else "tpu"


def run_one(testdir, name, opts, log):
    """Runs one file on tpu, reruns its failures on CPU and returns its entry for results.json."""
    t0 = time.time()
    extra = {"TORCHTPU_CACHE_DIR": opts.program_cache} if opts.program_cache else {}
    collected, records, errors = worker.run_file(
        testdir, name, "tpu", opts.workdir, opts.test_timeout, opts.file_timeout, keyword=opts.k,
        no_opinfo=name in NO_OPINFO, per_worker=opts.tests_per_worker, extra_env=extra, grace=opts.kill_grace,
        log=log)
    tpu_time = time.time() - t0
    failed = [tid for tid in collected if records[tid]["outcome"] in FAILED]
    cpu_records = {}
    if failed and not opts.no_cpu_rerun:
        twins = [cpu_twin(t) for t in failed]
        _, cpu_records, cpu_errors = worker.run_file(
            testdir, name, "cpu", opts.workdir, opts.test_timeout, opts.file_timeout, only=twins,
            per_worker=opts.tests_per_worker, grace=opts.kill_grace, log=log)
        errors += [f"cpu rerun: {e}" for e in cpu_errors]
    classify(records, cpu_records)
    return dict(file=name, collected=collected, records=records, errors=errors, tpu_seconds=round(tpu_time),
                cpu_seconds=round(time.time() - t0 - tpu_time))


def environment():
    """Returns what the figures depend on: versions, the commit and the machine."""
    import torch

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=worker.ROOT, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""

    return dict(torch=torch.__version__, tests="PyTorch 2.6.0 (Debian pytorch_2.6.0+dfsg.orig.tar.xz)",
                commit=git("rev-parse", "--short", "HEAD"), dirty=bool(git("status", "--porcelain")),
                python=platform.python_version(), cpus=os.cpu_count(),
                mode=os.environ.get("TORCHTPU_MODE", "strict"))


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--files", default=",".join(FILES), help="comma-separated file names in PyTorch's test/")
    p.add_argument("-k", help="pytest -k expression applied to every file")
    p.add_argument("--test-timeout", type=float, default=300, help="seconds one test may run (default 300)")
    p.add_argument("--file-timeout", type=float, default=10800, help="seconds one file may run on tpu (default 3 h)")
    p.add_argument("--kill-grace", type=float, default=30,
                   help="seconds past the test limit before a worker that stopped reporting is killed")
    p.add_argument("--tests-per-worker", type=int, default=100,
                   help="tests one worker runs before a fresh one takes over (0: one worker a file)")
    p.add_argument("--out", default=OUT, help="folder for results.json, summary.md and the workers' files")
    p.add_argument("--failures", help="also write the tpu failures, one a line, to this file")
    p.add_argument("--program-cache", default=os.path.join(fetch.cache_dir(), "programs"),
                   help="persistent compile cache of the tpu workers ('' turns it off)")
    p.add_argument("--no-cpu-rerun", action="store_true", help="count every tpu failure as a tpu failure")
    p.add_argument("--command", default="make test-device-generic", help="the command the summary names")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: write summary.md (and --failures) again from the results.json in --out")
    opts = p.parse_args(argv)
    opts.workdir = os.path.join(opts.out, "work")
    return opts


def write_reports(results, opts):
    with open(os.path.join(opts.out, "summary.md"), "w") as f:
        f.write(report.markdown(results))
    if opts.failures:
        with open(opts.failures, "w") as f:
            f.write(report.failure_list(results["files"]))


def main(argv=None):
    opts = parse_args(argv)
    # A stopped runner takes its worker with it (worker.watch kills it on the way out).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    if opts.report_only:
        with open(os.path.join(opts.out, "results.json")) as f:
            write_reports(json.load(f), opts)
        return 0
    files = [f.strip() for f in opts.files.split(",") if f.strip()]
    os.makedirs(opts.out, exist_ok=True)
    testdir = fetch.test_dir(files)
    t0 = time.time()
    entries = []
    print(report.table_header(), flush=True)
    for name in files:
        entry = run_one(testdir, name, opts, log=lambda s: print(s, flush=True))
        entries.append(entry)
        print(report.table_row(report.file_counts(entry)), flush=True)
        for e in entry["errors"]:
            print(f"  {name}: {e}", flush=True)
    results = dict(env=environment(), seconds=round(time.time() - t0), command=opts.command, files=entries)
    with open(os.path.join(opts.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(report.table_row(report.total_counts(entries)), flush=True)
    write_reports(results, opts)
    print(f"wrote {opts.out}/summary.md and results.json in {results['seconds']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
