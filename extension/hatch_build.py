"""Builds the JupyterLab extension while hatchling builds kernlab's wheel.

hatch-jupyter-builder calls ``build`` (pyproject.toml, [tool.hatch.build.hooks.jupyter-builder]).
It runs ``jlpm install`` and ``jlpm build:prod`` in extension/ (Node.js >= 20 needed; ``jlpm``
is the yarn 3 that the ``jupyter-builder`` package ships), which leaves the prebuilt
extension in extension/labextension; the wheel carries it to
share/jupyter/labextensions/kernlab. It builds only when the output is missing or older
than the sources, so a wheel built from an sdist (which carries the output) needs no Node.

Without Node.js an editable install (``pip install -e .``) goes on without the extension
and says so in its build log (``pip install -v`` shows it; ``kernlab lab`` says it again
at every start): the tutorials work, and JupyterLab shows kernlab's outputs through their
text/html fallbacks. A wheel (``python -m build``) is what a classroom installs offline, so
building one without Node.js stops with a short message instead of shipping a wheel that
lacks the extension.

Set ``KERNLAB_SKIP_JS=1`` to build without any of this (pure-Python work, no Node): the
wheel then carries whatever extension/labextension already holds (nothing on a fresh
clone).
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUTPUT = HERE / "labextension"
SOURCES = ["src", "style", "package.json", "yarn.lock", "tsconfig.json"]


def skipped() -> bool:
    return os.environ.get("KERNLAB_SKIP_JS", "").strip().lower() not in ("", "0", "false", "no")


def newest(path: Path) -> float:
    if path.is_file():
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)


def oldest(path: Path) -> float:
    return min((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)


def stale() -> bool:
    """Whether extension/labextension is missing or older than any of its sources."""
    if not (OUTPUT / "package.json").is_file():
        return True
    built = oldest(OUTPUT)
    return any(newest(HERE / name) > built for name in SOURCES if (HERE / name).exists())


def build(target_name: str, version: str, **kwargs) -> None:
    """hatch-jupyter-builder's build function: npm_builder, unless skipped or up to date."""
    from hatch_jupyter_builder import npm_builder

    if skipped():
        print("kernlab: KERNLAB_SKIP_JS is set: building without the JupyterLab extension")
        return
    if not stale():
        print("kernlab: extension/labextension is up to date")
        return
    if shutil.which("node") is None:
        if version == "editable":
            print("kernlab: Node.js was not found on PATH, so this editable install SKIPPED "
                  "the JupyterLab extension (kernlab's outputs will show through their HTML "
                  "fallbacks; `kernlab lab` reminds you). To add it: install Node.js >= 20 "
                  "and run `pip install -e .` again.", file=sys.stderr, flush=True)
            return
        # SystemExit, not an exception: pip then shows this message, not a long traceback
        raise SystemExit(
            "kernlab: building the wheel needs Node.js >= 20 on PATH for the JupyterLab "
            "extension it carries. Install Node.js, or set KERNLAB_SKIP_JS=1 to build a "
            "wheel without the extension.")
    npm_builder(target_name, version, path=str(HERE), **kwargs)
