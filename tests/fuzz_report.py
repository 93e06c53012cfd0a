"""Figures for the front-end fuzzer: tried / clean error / internal / crash / hang.

    python tests/fuzz_report.py [--examples N] [--seconds S] [--seed K]

Runs the three generators of test_fuzz_frontend.py (random programs, mutated kernels,
planted unsupported constructs), each in a child process of its own, through the same
oracle, but counts outcomes instead of stopping at the first failure:

- clean error: a KernelError located on a line of the source (or Python rejects the text);
- internal: anything else the oracle refuses (an exception that is not a KernelError, an
  LLVM internal error, a bad location, LLVM and the interpreter disagreeing); the first few
  are printed with their source;
- crash: the child process died of a signal (its last example is printed);
- hang: a run stopped by the oracle's 5 s deadline, or a child that outlived its time.

The pytest tests (``pytest tests/test_fuzz_frontend.py --long-fuzz``) stop at the first
failure and shrink it; this script gives the totals.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = ("random", "mutated", "planted")


def child(kind: str, examples: int, seconds: float, seed: int) -> None:
    sys.path.insert(0, str(HERE))
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed
    from hypothesis import strategies as st

    import test_fuzz_frontend as T
    from kernlab.errors import KernelError

    stats = T.Stats()
    out = {"tried": 0, "clean error": 0, "internal": 0, "hang": 0, "compiled": 0}
    samples: list = []
    stop = time.monotonic() + seconds

    def source_for(c):
        if kind == "random":
            gen = T.ProgramGenerator(c)
            return gen.program(), gen.exact
        base = T._with_header(c.pick(T.CORPUS)) if c.chance(0.5) else \
            T.ProgramGenerator(c, max_depth=2, max_stmts=4 if kind == "mutated" else 3).program()
        if kind == "mutated":
            tree, mutator = ast.parse(base), T.Mutator(c)
            for _ in range(c.int(1, 3)):
                tree = mutator.mutate(tree)
            try:
                return ast.unparse(tree) + "\n", False
            except Exception:  # noqa: BLE001 — not a source at all
                return None, False
        lines = base.splitlines()
        body = [k for k, line in enumerate(lines) if line.startswith("    ")
                and not line.lstrip().startswith(("kl.array", "d:", "dout:"))
                and k > next(j for j, l in enumerate(lines) if l.startswith("def fuzz"))]
        at = c.pick(body[1:] or body)
        indent = len(lines[at]) - len(lines[at].lstrip())
        if lines[at - 1].rstrip().endswith(":"):
            indent = len(lines[at - 1]) - len(lines[at - 1].lstrip()) + 4
        import textwrap
        bad = textwrap.indent(c.pick(T.BAD_STATEMENTS), " " * indent)
        return "\n".join(lines[:at] + bad.splitlines() + lines[at:]) + "\n", False

    @with_seed(seed)
    @settings(max_examples=examples, deadline=None, phases=(Phase.generate,),
              suppress_health_check=list(HealthCheck), database=None)
    @given(st.data())
    def one(data):
        if time.monotonic() > stop:  # out of time: report and leave (returning early
            report()                  # would change what Hypothesis sees drawn)
            sys.stdout.flush()
            os._exit(0)
        c = T.Choices(data)
        source, exact = source_for(c)
        if source is None:
            return
        out["tried"] += 1
        with open(os.environ["KL_FUZZ_LAST"], "w") as f:  # for a crash report
            f.write(source)
        before = dict(stats.counts)
        try:
            status = T.check_source(source, stats, exact=exact,
                                    rng_seed=data.draw(st.integers(0, 2**16)))
            if kind == "random" and isinstance(status, KernelError):
                raise AssertionError(f"a valid program was rejected:\n{status}")
        except Exception as err:  # noqa: BLE001 — counted, the run goes on
            out["internal"] += 1
            if len(samples) < 5:
                samples.append(f"{type(err).__name__}: {str(err)[:1500]}\n--- source:\n"
                               f"{source}")
            return
        grew = {k for k in stats.counts if stats.counts[k] != before.get(k, 0)}
        if "rejected with a line" in grew or "python rejects" in grew:
            out["clean error"] += 1
        if "timed out (ran too long)" in grew:
            out["hang"] += 1
        if "compiled" in grew:
            out["compiled"] += 1

    def report():
        print(json.dumps({"kind": kind, **out, "errors by class": dict(stats.errors),
                          "samples": samples}))

    one()
    report()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=1200, help="per generator")
    ap.add_argument("--seconds", type=float, default=1800, help="per generator, at most")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--kinds", default=",".join(KINDS), help="generators to run, e.g. random")
    ap.add_argument("--child", choices=KINDS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.examples, args.seconds, args.seed)
        return 0
    total = {"tried": 0, "clean error": 0, "internal": 0, "crash": 0, "hang": 0}
    procs = {}
    for kind in args.kinds.split(","):
        last = Path(f"/tmp/kl_fuzz_last_{os.getpid()}_{kind}.py")
        env = dict(os.environ, KL_FUZZ_LAST=str(last),
                   PYTHONPATH=os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH",
                                                                                 "")]))
        procs[kind] = (subprocess.Popen(
            [sys.executable, __file__, "--child", kind, "--examples", str(args.examples),
             "--seconds", str(args.seconds), "--seed", str(args.seed)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env), last)
    for kind, (proc, last) in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=args.seconds + 600)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            total["hang"] += 1
            print(f"{kind}: the child outlived its time; last source:\n{last.read_text()}")
            continue
        if proc.returncode != 0:
            total["crash"] += proc.returncode < 0
            print(f"{kind}: child exited {proc.returncode}\n{stderr[-3000:]}")
            if last.exists():
                print(f"last source:\n{last.read_text()}")
            continue
        result = json.loads(stdout.strip().splitlines()[-1])
        for k in ("tried", "clean error", "internal", "hang"):
            total[k] += result[k]
        print(f"{kind}: tried {result['tried']}, compiled {result['compiled']}, clean error "
              f"{result['clean error']}, internal {result['internal']}, hang "
              f"{result['hang']}; errors by class: {result['errors by class']}")
        for s in result["samples"]:
            print("---- internal ----\n" + s)
        last.unlink(missing_ok=True)
    print("total: " + ", ".join(f"{k} {v}" for k, v in total.items()))
    return 0 if total["internal"] == total["crash"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
