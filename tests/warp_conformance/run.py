"""Run NVIDIA Warp's own test files on kernlab, on the CPU, and print how many pass.

    python tests/warp_conformance/run.py                  # every selected file
    python tests/warp_conformance/run.py test_lerp test_grad
    python tests/warp_conformance/run.py --warp --write-baseline   # re-measure Warp itself
    python tests/warp_conformance/run.py --extra          # selection.EXTRA_FILES, outside
    python tests/warp_conformance/run.py test_noise       # the figure (or one of them)

The test files are read from the installed ``warp-lang`` package (``pip install -e
".[conformance]"``); nothing of Warp's is copied here. Each file runs in a child process
where ``import warp`` gives kernlab and ``warp.tests.unittest_utils`` gives our stand-in
(unittest_utils.py beside this file). The score counts the tests that Warp itself passes on
the CPU (baseline.txt, written by ``--warp --write-baseline``) less the exclusions listed
with their reasons in selection.py.
"""
from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import traceback
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from selection import (EXTRA_FILES, FILES, differs_reason,  # noqa: E402
                       excluded_reason)

BASELINE = HERE / "baseline.txt"


def warp_tests_dir() -> Path | None:
    """warp/tests of the installed warp-lang, found without importing Warp."""
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "tests"
    return path if path.is_dir() else None


# ---------------------------------------------------------------- the child process

class _WarpAsKernlab(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``warp`` is kernlab; ``warp.tests.unittest_utils`` is our stand-in; other
    ``warp.tests.*`` modules (Warp's helper files) load from the installed package with
    ``warp`` bound to kernlab; ``warp.X`` is ``kernlab.X`` where kernlab has it."""

    def __init__(self, tests_dir: Path):
        self.tests_dir = tests_dir

    def find_spec(self, name, path=None, target=None):
        if not name.startswith("warp."):
            return None
        parts = name.split(".")
        if name == "warp.tests.unittest_utils":
            origin = HERE / "unittest_utils.py"
            return importlib.util.spec_from_file_location(name, origin)
        if parts[1] == "tests":
            rel = self.tests_dir.joinpath(*parts[2:])
            if rel.is_dir():
                return importlib.util.spec_from_file_location(
                    name, rel / "__init__.py", submodule_search_locations=[str(rel)])
            if rel.with_suffix(".py").is_file():
                return importlib.util.spec_from_file_location(name, rel.with_suffix(".py"))
            return None
        spec = None if parts[1] == "_src" else \
            importlib.util.find_spec("kernlab." + ".".join(parts[1:]))
        if spec is None:  # Warp internals and packages kernlab has not: placeholders
            return importlib.util.spec_from_loader(name, self, origin="warp-internal",
                                                   is_package=True)
        return importlib.util.spec_from_loader(name, self, origin=spec.origin)

    def create_module(self, spec):
        if spec.origin == "warp-internal":
            return _Internal(spec.name)
        return importlib.import_module("kernlab." + spec.name[len("warp."):])

    def exec_module(self, module):
        pass


def _kernlab_counterpart(name: str):
    """What kernlab has under the name ``warp.a.b`` (kernlab.a.b: a loaded kernlab module of
    that name, else the attribute), or None."""
    parts = name.split(".")[1:]
    obj = sys.modules.get("kernlab")
    for k, part in enumerate(parts):
        real = sys.modules.get("kernlab." + ".".join(parts[:k + 1]))
        obj = real if real is not None else getattr(obj, part, None)
        if obj is None or isinstance(obj, _Internal):
            return None
    return obj


def bind_warp_to_kernlab() -> None:
    """From now on, in this process, ``import warp`` gives kernlab and ``warp.tests.*`` the
    installed Warp test files (with our stand-in for their unittest_utils)."""
    if any(isinstance(f, _WarpAsKernlab) for f in sys.meta_path):
        return
    tests_dir = warp_tests_dir()  # before "warp" names kernlab
    import kernlab
    sys.modules["warp"] = kernlab
    sys.meta_path.insert(0, _WarpAsKernlab(tests_dir))


class WarpInternalError(Exception):
    """A test reached a part of Warp that kernlab does not offer (its internals, warp.fem)."""


class _Missing:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise WarpInternalError(f"{self._name} is Warp-internal, not part of kernlab")


class _Internal(type(sys)):
    """A module that stands for a Warp package kernlab does not have: importing from it
    works; using what was imported raises WarpInternalError."""

    def __init__(self, name):
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        # ``from warp._src import context`` binds this placeholder as kernlab._src: what
        # kernlab has under the same name (wp._src.types.type_size) stays reachable
        ours = _kernlab_counterpart(self.__name__)
        if ours is not None and hasattr(ours, attr):
            return getattr(ours, attr)
        return _Missing(f"{self.__name__}.{attr}")


class _Timeout(Exception):
    pass


def _first_error(err) -> str:
    message = getattr(err[1], "message", None)  # a KernelError: its message, not its location
    if isinstance(message, str) and message:
        return f"{err[0].__module__}.{err[0].__name__}: {message.splitlines()[0]}"[:300]
    lines = traceback.format_exception_only(err[0], err[1])
    text = "".join(lines).strip().splitlines()
    return text[0][:300] if text else err[0].__name__


class _Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.records = {}

    def addSuccess(self, test):
        self.records[test.id()] = ("pass", "")

    def addFailure(self, test, err):
        self.records[test.id()] = ("fail", _first_error(err))

    def addError(self, test, err):
        self.records[test.id()] = ("error", _first_error(err))

    def addSkip(self, test, reason):
        self.records[test.id()] = ("skip", reason)

    def addSubTest(self, test, subtest, err):
        if err is not None and test.id() not in self.records:
            kind = "fail" if issubclass(err[0], test.failureException) else "error"
            self.records[test.id()] = (kind, f"{subtest._subDescription()}: {_first_error(err)}")


def run_file(name: str, use_warp: bool, per_test_s: float, skip: int = 0) -> dict:
    """Import one Warp test file and run its tests (all but the first ``skip``); {test id:
    (status, message)}. Each test's start and result go to stdout as they happen, so the
    parent knows which test a crash (a signal) killed."""
    tests_dir = warp_tests_dir()
    if not use_warp:
        bind_warp_to_kernlab()
    else:
        os.environ.setdefault("WARP_CACHE_PATH", str(Path.home() / ".cache" / "warp-conf"))
    modname = "warp.tests." + name.replace("/", ".")
    try:
        module = importlib.import_module(modname)
    except BaseException as e:  # noqa: BLE001 — a file that cannot import fails as a whole
        return {f"{name}:import": ("error", _first_error((type(e), e, None)))}
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    result = _Result()

    def on_alarm(signum, frame):
        raise _Timeout(f"test ran longer than {per_test_s:.0f} s")

    signal.signal(signal.SIGALRM, on_alarm)

    def each(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from each(t)
            else:
                yield t

    for k, test in enumerate(each(suite)):
        if k < skip:
            continue
        tid = test.id().replace("warp.tests.", "", 1)
        print(f"{_STARTED}{k} {tid}", flush=True)
        if not use_warp and excluded_reason(tid) is not None:
            result.records[test.id()] = ("excluded", excluded_reason(tid))
            continue
        signal.alarm(int(per_test_s))
        try:
            test.run(result)
        except _Timeout as e:
            result.records[test.id()] = ("error", str(e))
        finally:
            signal.alarm(0)
        result.records.setdefault(test.id(), ("pass", ""))
        print(_DONE + json.dumps([tid, result.records[test.id()]]), flush=True)
    return {k.replace("warp.tests.", "", 1): v for k, v in result.records.items()}


# ---------------------------------------------------------------- the parent process

_STARTED, _DONE = "@@STARTED@@", "@@DONE@@"


def run_child(name, use_warp, per_test_s, file_s) -> dict:
    """Run one file in child processes. A test that kills its process (a crash is the worst
    failure there is) is recorded as such, and the file goes on after it in a new child."""
    records: dict = {}
    skip = 0
    deadline = time.monotonic() + file_s
    while True:
        cmd = [sys.executable, __file__, "--child", name, "--per-test", str(per_test_s),
               "--skip", str(skip)] + (["--warp"] if use_warp else [])
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                                  timeout=max(1.0, deadline - time.monotonic()))
            out, code = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            code = None
        started = None
        for line in out.splitlines():
            if line.startswith(_STARTED):
                index, tid = line[len(_STARTED):].split(" ", 1)
                started = (int(index), tid)
            elif line.startswith(_DONE):
                tid, rec = json.loads(line[len(_DONE):])
                records[tid] = tuple(rec)
                started = None
        marker = "@@RESULTS@@"
        if marker in out:
            records.update(json.loads(out.rsplit(marker, 1)[1]))
            return records
        if code is None:
            records[f"{name}:file"] = ("error", f"the file ran longer than {file_s:.0f} s")
            return records
        if started is None:  # died outside a test (import, collection)
            tail = (proc.stderr or out).strip().splitlines()[-1:] or ["no output"]
            records[f"{name}:file"] = ("error", f"child exited {code}: {tail[0][:200]}")
            return records
        records[started[1]] = ("error", f"CRASH: the test killed its process (exit {code})")
        skip = started[0] + 1


def load_baseline() -> set[str] | None:
    if not BASELINE.exists():
        return None
    return {ln.strip() for ln in BASELINE.read_text().splitlines()
            if ln.strip() and not ln.startswith("#")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", help="test files (default: all in selection.py)")
    ap.add_argument("--extra", action="store_true",
                    help="run selection.EXTRA_FILES (outside the issue's figure) instead")
    ap.add_argument("--warp", action="store_true", help="run on Warp itself (the baseline)")
    ap.add_argument("--write-baseline", action="store_true",
                    help="with --warp: write the tests Warp passes to baseline.txt")
    ap.add_argument("--per-test", type=float, default=120.0, help="seconds a test may run")
    ap.add_argument("--per-file", type=float, default=1200.0, help="seconds a file may run")
    ap.add_argument("--json", help="also write every result to this JSON file")
    ap.add_argument("--failures", action="store_true", help="list every failing test")
    ap.add_argument("--min-percent", type=float, default=None,
                    help="exit 1 when fewer of the baseline's tests pass")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--skip", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        results_fd = os.dup(1)  # a test may leave stdout captured (a capture never ended)
        records = run_file(args.child, args.warp, args.per_test, args.skip)
        sys.stdout.flush()
        with os.fdopen(results_fd, "w") as out:
            out.write("@@RESULTS@@" + json.dumps(records) + "\n")
        return 0

    if warp_tests_dir() is None:
        print("warp-lang is not installed: pip install -e '.[conformance]'")
        return 2
    files = [f.removesuffix(".py") for f in args.files] or (EXTRA_FILES if args.extra
                                                             else FILES)
    baseline = None if args.warp else load_baseline()
    everything = {}
    rows = []
    on_purpose = 0  # failures listed in selection.DIFFERS_ON_PURPOSE
    t_all = time.perf_counter()
    for name in files:
        t0 = time.perf_counter()
        records = run_child(name, args.warp, args.per_test, args.per_file)
        everything.update(records)
        counted = {k: v for k, v in records.items()
                   if v[0] != "excluded" and (baseline is None or k in baseline or
                                              k.endswith((":import", ":file")))}
        if baseline is not None:  # baseline tests the file did not even collect
            prefix = name.replace("/", ".") + "."
            for k in baseline:
                if k.startswith(prefix) and k not in records and excluded_reason(k) is None:
                    counted[k] = ("error", "not collected")
        passed = sum(v[0] == "pass" for v in counted.values())
        failing = [(k, v) for k, v in counted.items() if v[0] in ("fail", "error")]
        first = failing[0][1][1] if failing else ""
        n = len([k for k in counted if not k.endswith((":import", ":file"))]) or len(counted)
        rows.append((name, n, passed, len(failing), sum(v[0] == "excluded"
                                                       for v in records.values()),
                     time.perf_counter() - t0, first))
        print(f"{name:<34} {n:>5} {passed:>5} {len(failing):>5} {rows[-1][4]:>4} "
              f"{rows[-1][5]:6.1f}s  {first[:90]}", flush=True)
        if args.failures:
            for k, v in failing:
                why = differs_reason(k)
                note = f"  [differs on purpose: {why}]" if why else ""
                print(f"    {v[0]:5} {k}: {v[1][:160]}{note}")
        on_purpose += sum(differs_reason(k) is not None for k, _ in failing)

    total = sum(r[1] for r in rows)
    passed = sum(r[2] for r in rows)
    print(f"{'file':<34} {'tests':>5} {'pass':>5} {'fail':>5} {'excl':>4}")
    pct = 100.0 * passed / total if total else 0.0
    what = "Warp" if args.warp else "kernlab"
    base = "" if args.warp or baseline is None else " of the tests Warp passes on the CPU"
    print(f"TOTAL: {passed} of {total} pass on {what}{base} ({pct:.1f} %), "
          f"{sum(r[4] for r in rows)} exclusions, {time.perf_counter() - t_all:.0f} s")
    if on_purpose:
        print(f"of the failures, {on_purpose} differ from Warp on purpose (kernlab's gradient "
              "is the right one, or it refuses one it cannot make exact): see selection.py")
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))
    if args.warp and args.write_baseline:
        ran = tuple(name.replace("/", ".") + "." for name in files)  # other files' stay
        kept = {k for k in load_baseline() or () if not k.startswith(ran)}
        keep = sorted(kept | {k for k, v in everything.items() if v[0] == "pass"})
        BASELINE.write_text("# tests Warp passes on the CPU: run.py --warp --write-baseline\n"
                            + "\n".join(keep) + "\n")
        print(f"wrote {len(keep)} tests to {BASELINE}")
    if args.min_percent is not None and pct < args.min_percent:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
