"""The pytest plugin each device-generic worker loads (`-p tests.device_generic.plugin`).

It applies the stand-ins before any test file is imported, keeps only the classes instantiate_device_type_tests
made for the device under test, and writes one JSON line per event to the --dg-events file, flushed as it goes, so
that the runner knows which test was running when a worker hangs or dies. A test that runs past --dg-test-timeout
is interrupted by SIGALRM and fails; one stuck where no Python code runs is killed by the runner instead.
"""
import json
import signal

import pytest

from tests.device_generic import standins


class TimeLimitExceeded(Exception):
    """TimeLimitExceeded is raised inside a test that ran past the per-test limit."""


def pytest_addoption(parser):
    g = parser.getgroup("device_generic")
    g.addoption("--dg-events", help="file the events go to, one JSON object a line")
    g.addoption("--dg-device", default="tpu", help="device type whose instantiated classes run (tpu or cpu)")
    g.addoption("--dg-skip", help="file of node ids to leave out (tests an earlier worker finished)")
    g.addoption("--dg-only", help="file of node ids to run; every other test is left out")
    g.addoption("--dg-no-opinfo", action="store_true", help="leave out the tests @ops makes, one per OpInfo")
    g.addoption("--dg-max-tests", type=int, default=0, help="run only the first this many of the selected tests")
    g.addoption("--dg-test-timeout", type=float, default=0, help="seconds a test may run before it fails")


def pytest_configure(config):
    standins.apply()
    config.pluginmanager.register(Recorder(config), "device_generic_recorder")


def read_ids(path):
    if not path:
        return None
    with open(path) as f:
        return {ln.strip() for ln in f if ln.strip()}


def device_class_of(item, device):
    """Reports whether item belongs to a class instantiate_device_type_tests made for device."""
    from torch.testing._internal.common_device_type import DeviceTypeTestBase

    cls = getattr(item, "cls", None)
    if cls is None or not issubclass(cls, DeviceTypeTestBase):
        return False
    kind = cls.device_type
    if device == "cpu":
        return kind == "cpu"
    return kind in (device, "privateuse1")


def opinfo_driven(item):
    """Reports whether item is one of the tests @ops instantiates per OpInfo (it receives an `op` argument)."""
    from torch.testing._internal.opinfo.core import OpInfo

    # The class attribute: torch's TestCase wraps the bound method an instance holds.
    fn = getattr(getattr(item, "cls", None), item.name, None)
    defaults = getattr(fn, "__defaults__", None) or ()
    kwargs = defaults[0] if defaults and isinstance(defaults[0], dict) else {}
    return isinstance(kwargs.get("op"), OpInfo)


def _alarm(signum, frame):
    raise TimeLimitExceeded("the test ran past the per-test time limit")


class Recorder:
    """Recorder selects the tests and writes the event lines."""

    def __init__(self, config):
        self.config = config
        path = config.getoption("--dg-events")
        self.out = open(path, "a", buffering=1) if path else None
        self.phases = {}
        self.limit = config.getoption("--dg-test-timeout")
        self.device = config.getoption("--dg-device")
        self.before = None

    def emit(self, **event):
        if self.out:
            self.out.write(json.dumps(event) + "\n")

    def pytest_unconfigure(self, config):
        if self.out:
            self.out.close()
            self.out = None

    def pytest_collectreport(self, report):
        if report.failed:
            self.emit(ev="collect_error", msg=first_line(report), text=report.longreprtext[-4000:])

    # After pytest's own -k/-m deselection, so that the ids it reports are the ones this run may reach
    # (the runner starts fresh workers until every reported id has a result).
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items):
        device = config.getoption("--dg-device")
        skip = read_ids(config.getoption("--dg-skip")) or set()
        only = read_ids(config.getoption("--dg-only"))
        no_opinfo = config.getoption("--dg-no-opinfo")
        keep, drop = [], []
        for item in items:
            ok = (device_class_of(item, device) and item.nodeid not in skip and (only is None or item.nodeid in only)
                  and not (no_opinfo and opinfo_driven(item)))
            (keep if ok else drop).append(item)
        self.emit(ev="collected", ids=[it.nodeid for it in keep])
        limit = config.getoption("--dg-max-tests")
        if limit:
            keep, drop = keep[:limit], drop + keep[limit:]
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    def counters(self):
        """Returns the engine's compile and fallback counters, or None on CPU or before the engine runs."""
        if self.device == "cpu":
            return None
        import torch

        mod = getattr(torch, "tpu", None)
        if mod is None or not hasattr(mod, "metrics"):
            return None
        try:
            m = mod.metrics()
        except Exception:
            return None
        return dict(compiles=m.get("graphs_compiled", 0), compile_s=m.get("compile_seconds", 0.0),
                    reasons=dict(m.get("compiles_by_reason", {})), disk_hits=m.get("disk_cache_hits", 0),
                    fallbacks=dict(m.get("cpu_fallbacks", {})))

    def counters_since(self):
        """Returns what the engine did since the test started: compiles (by reason), compile seconds, programs
        loaded from the disk cache and ops run on CPU by fallback."""
        after = self.counters()
        if after is None or self.before is None:
            return None
        b = self.before
        out = dict(compiles=after["compiles"] - b["compiles"], compile_s=round(after["compile_s"] - b["compile_s"], 3),
                   disk_hits=after["disk_hits"] - b["disk_hits"])
        for key in ("reasons", "fallbacks"):
            diff = {k: v - b[key].get(k, 0) for k, v in after[key].items() if v != b[key].get(k, 0)}
            if diff:
                out[key] = diff
        return out

    def pytest_runtest_logstart(self, nodeid, location):
        self.emit(ev="start", id=nodeid)
        self.before = self.counters()
        if self.limit:
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.limit)

    def pytest_runtest_logfinish(self, nodeid, location):
        if self.limit:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def pytest_runtest_logreport(self, report):
        """Folds the setup, call and teardown reports of a test into one result event, written after teardown."""
        phases = self.phases.setdefault(report.nodeid, [])
        phases.append(report)
        if report.when != "teardown":
            return
        del self.phases[report.nodeid]
        outcome, msg, site = fold(phases)
        text = "\n".join(r.longreprtext for r in phases if r.failed)[-4000:] if outcome == "failed" else ""
        self.emit(ev="result", id=report.nodeid, outcome=outcome, msg=msg[:500], site=site, text=text,
                  dur=round(sum(r.duration for r in phases), 3), engine=self.counters_since())

    def pytest_sessionfinish(self, session, exitstatus):
        self.emit(ev="done", status=int(exitstatus))


def fold(phases):
    """Returns (outcome, first line, crash site) of one test from its phase reports in order."""
    for r in phases:
        if r.failed:
            if r.when == "call" and hasattr(r, "wasxfail"):
                return "failed", "unexpected success: " + str(r.wasxfail), ""
            return "failed", first_line(r), crash_site(r)
        if r.skipped:
            if hasattr(r, "wasxfail"):
                return "xfailed", str(r.wasxfail) or first_line(r), ""
            return "skipped", first_line(r), ""
        if r.when == "call" and hasattr(r, "wasxfail"):
            return "failed", "unexpected success", ""
    return "passed", "", ""


def first_line(report):
    """Returns the first line of what went wrong (the exception and its message) or of a skip's reason."""
    lr = report.longrepr
    if lr is None:
        return ""
    if isinstance(lr, tuple):  # a skip: (path, line, reason)
        text = str(lr[2])
        return text.removeprefix("Skipped: ").splitlines()[0] if text else ""
    crash = getattr(lr, "reprcrash", None)
    if crash is not None and crash.message:
        return crash.message.strip().splitlines()[0]
    lines = [ln for ln in str(lr).splitlines() if ln.startswith("E ")]
    return lines[0][2:].strip() if lines else str(lr).strip().splitlines()[-1]


def crash_site(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    return f"{crash.path.rsplit('/', 1)[-1]}:{crash.lineno}" if crash is not None else ""
