"""The ``kernlab`` console command (``python -m kernlab`` does the same).

    kernlab lab [--dir DIR] [--port N] [--no-browser]   JupyterLab on a copy of the tutorials
    kernlab demo                                         the terminal demo (python -m kernlab.demo)

``kernlab lab`` copies the tutorial notebooks into a working folder (``./kernlab-tutorials``
unless ``--dir`` says otherwise), starts JupyterLab there and prints the URL. A notebook that
is already in the folder is never overwritten, so running the command again reopens the
student's own edited copies; a notebook that is missing (deleted, or new in this version of
kernlab) is copied again. On a machine without a display the URL is printed for a browser
elsewhere instead of trying to open one. Ctrl-C stops the server.
"""
from __future__ import annotations

import argparse
import filecmp
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import webbrowser
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_DIR = "kernlab-tutorials"
DEFAULT_PORT = 8888
FIRST_NOTEBOOK = "01_first_kernel.ipynb"


def tutorials_source() -> Path:
    """The folder holding the shipped tutorials: ``kernlab/_tutorials`` in an installed wheel
    (pyproject.toml force-includes notebooks/ there), ``notebooks/`` beside the package in a
    source checkout or an editable install."""
    package = Path(__file__).resolve().parent
    for folder in (package / "_tutorials", package.parent / "notebooks"):
        if (folder / FIRST_NOTEBOOK).is_file():
            return folder
    raise FileNotFoundError(
        f"kernlab's tutorial notebooks are not in {package / '_tutorials'} (an installed wheel) "
        f"nor in {package.parent / 'notebooks'} (a source checkout); reinstall kernlab from "
        "the repository or from a wheel built with `python -m build`")


def tutorial_files(source: Path) -> list[Path]:
    """What a student's folder gets: the notebooks and their README (not the test setup)."""
    files = sorted(source.glob("[0-9][0-9]_*.ipynb"))
    if (source / "README.md").is_file():
        files.append(source / "README.md")
    return files


@dataclass
class Prepared:
    folder: Path
    copied: list[str] = field(default_factory=list)    # new in the folder
    kept: list[str] = field(default_factory=list)      # the student's edited copy stays
    current: list[str] = field(default_factory=list)   # already the shipped version


def prepare_folder(folder: Path, source: Path | None = None) -> Prepared:
    """Copy the tutorials into ``folder`` without overwriting anything already there."""
    source = tutorials_source() if source is None else source
    folder = Path(folder).expanduser().resolve()
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} exists and is not a folder; choose another --dir")
    folder.mkdir(parents=True, exist_ok=True)
    done = Prepared(folder)
    for path in tutorial_files(source):
        target = folder / path.name
        if not target.exists():
            shutil.copyfile(path, target)
            done.copied.append(path.name)
        elif filecmp.cmp(path, target, shallow=False):
            done.current.append(path.name)
        else:
            done.kept.append(path.name)
    return done


def free_port(start: int = DEFAULT_PORT, tries: int = 100) -> int:
    """The first port from ``start`` on that nothing listens on (JupyterLab's own default)."""
    for port in range(start, start + tries):
        if port_is_free(port):
            return port
    with socket.socket() as s:  # everything near the default is taken: ask the system
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Whether a server could listen on ``port`` now (connections of an earlier server that
    are still closing do not count: JupyterLab's server binds with SO_REUSEADDR too)."""
    with socket.socket() as s:
        if os.name == "posix":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def has_display() -> bool:
    """Whether a browser window could open here: always on macOS and Windows; on Linux and
    the BSDs only with an X11 or Wayland display (an SSH session or a container has none)."""
    if sys.platform == "darwin" or os.name == "nt":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def open_browser(url: str) -> bool:
    """Open ``url`` in the user's browser; False (never an exception) when there is none."""
    if not has_display() and not os.environ.get("BROWSER"):
        return False
    try:
        return bool(webbrowser.get().open(url))
    except Exception:  # webbrowser.Error when no browser is registered, or one fails to start
        return False


def extension_installed() -> bool:
    """Whether JupyterLab will find kernlab's extension (the renderers for saved outputs)."""
    try:
        from jupyter_core.paths import jupyter_path
    except ImportError:
        return False
    return any((Path(p) / "kernlab" / "package.json").is_file()
               for p in jupyter_path("labextensions"))


def wait_until_serving(url: str, token: str, server: subprocess.Popen, timeout: float) -> bool:
    """Poll the server's status endpoint until it answers; False if it exits or times out."""
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(url + "api/status",
                                     headers={"Authorization": f"token {token}"})
    while time.monotonic() < deadline:
        if server.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(request, timeout=2) as reply:
                if reply.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.2)
    return False


def lab(folder: str, port: int | None, browser: bool, startup_timeout: float = 120.0) -> int:
    if importlib.util.find_spec("jupyterlab") is None:
        print("kernlab lab needs JupyterLab. From the kernlab repository:\n"
              "    pip install -e \".[lab]\"\n"
              "(or `pip install jupyterlab` into this environment)", file=sys.stderr)
        return 1
    try:
        done = prepare_folder(Path(folder))
    except (OSError, FileNotFoundError) as err:
        print(f"kernlab lab: {err}", file=sys.stderr)
        return 1

    print(f"kernlab tutorials in {done.folder}")
    if done.copied:
        print(f"  copied: {', '.join(done.copied)}")
    if done.kept:
        print(f"  kept your edited copies of: {', '.join(done.kept)}\n"
              "  (rename or delete one to get the shipped version back next time)")
    if not extension_installed():
        print("  note: kernlab's JupyterLab extension is not installed (it is built with\n"
              "  Node.js >= 20 when kernlab is installed; without Node it is skipped). The\n"
              "  tutorials work; kernlab's outputs show through their plain HTML versions.\n"
              "  To get it: install Node.js, then reinstall kernlab (pip install -e \".[lab]\").")

    if port is None:
        port = free_port()
    elif not port_is_free(port):
        print(f"kernlab lab: port {port} is in use; choose another with --port, or leave "
              "--port out to take the first free one", file=sys.stderr)
        return 1
    token = secrets.token_hex(24)
    base = f"http://localhost:{port}/"
    command = [sys.executable, "-m", "jupyterlab",
               f"--ServerApp.root_dir={done.folder}",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               "--ServerApp.ip=localhost", "--ServerApp.open_browser=False",
               f"--IdentityProvider.token={token}", "--log-level=WARN", "--LabApp.log_level=WARN"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # JupyterLab refuses root unless told; containers and classroom VMs often are root
        command.append("--ServerApp.allow_root=True")
    # A session of its own: Ctrl-C reaches this process only, which then stops the server
    # (JupyterLab itself would ask "Shutdown this Jupyter server (y/[n])?").
    server = subprocess.Popen(command, cwd=done.folder, start_new_session=True)
    previous = stop_server_on_termination()
    try:
        if not wait_until_serving(base, token, server, startup_timeout):
            code = server.poll()
            print("kernlab lab: JupyterLab did not start"
                  + (f" (exit status {code}; its messages are above)" if code is not None
                     else f" within {startup_timeout:.0f} s"), file=sys.stderr)
            return 1
        url = f"{base}lab/tree/{FIRST_NOTEBOOK}?token={token}"
        print(f"\nJupyterLab is running with the tutorials:\n\n    {url}\n", flush=True)
        if not browser:
            print("Open the URL in a browser. Ctrl-C stops the server.", flush=True)
        elif open_browser(url):
            print("Opened in your browser. Ctrl-C stops the server.", flush=True)
        else:
            print("No browser can be opened here (no display): open the URL in a browser on\n"
                  "this machine, or forward the port (ssh -L "
                  f"{port}:localhost:{port} ...). Ctrl-C stops the server.", flush=True)
        return server.wait()
    except KeyboardInterrupt:
        print("\nstopping JupyterLab ...", flush=True)
        return 0
    finally:
        stop(server)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def stop_server_on_termination() -> dict:
    """SIGTERM and SIGHUP (a closed terminal, a killed job) end this process through its
    ``finally`` too, so the server, which lives in a session of its own, is stopped with it."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is not None:
            previous[signum] = signal.signal(signum, interrupt)
    return previous


def stop(server: subprocess.Popen, grace: float = 10.0) -> None:
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(grace)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kernlab", description="kernlab: write, differentiate and inspect kernels.")
    from . import __version__
    parser.add_argument("--version", action="version", version=f"kernlab {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="command")
    lab_cmd = commands.add_parser(
        "lab", help="start JupyterLab on a copy of the tutorials",
        description="Copy kernlab's tutorial notebooks into a working folder (your edited "
                    "copies are never overwritten), start JupyterLab there and print its URL.")
    lab_cmd.add_argument("--dir", default=DEFAULT_DIR,
                         help=f"the working folder (default: ./{DEFAULT_DIR})")
    lab_cmd.add_argument("--port", type=int, default=None,
                         help=f"the server's port (default: the first free one from "
                              f"{DEFAULT_PORT})")
    lab_cmd.add_argument("--no-browser", action="store_true",
                         help="only print the URL; do not open a browser")
    commands.add_parser("demo", help="the terminal demo (python -m kernlab.demo)")
    args = parser.parse_args(argv)

    if args.command == "lab":
        return lab(args.dir, args.port, browser=not args.no_browser)
    if args.command == "demo":
        from . import demo
        return demo.main()
    parser.print_help()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
