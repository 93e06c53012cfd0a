"""``kernlab lab``: the tutorials copied into a working folder (never over a student's edits),
JupyterLab started on them and answering, the tutorials found in a built wheel."""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import zipfile
from importlib import import_module, util
from pathlib import Path

import pytest

from kernlab import cli

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SHIPPED = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) + ["README.md"]
needs_jupyterlab = pytest.mark.skipif(util.find_spec("jupyterlab") is None,
                                      reason="JupyterLab is not installed (the lab extra)")


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_console_script_is_cli_main():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["kernlab"].partition(":")
    assert getattr(import_module(module), name) is cli.main


def test_a_checkout_finds_its_notebooks_folder():
    assert cli.tutorials_source() == NOTEBOOKS
    assert {"01_first_kernel.ipynb", "09_torch_interop.ipynb", "README.md"} <= set(SHIPPED)


def test_the_folder_gets_every_tutorial_and_keeps_a_students_edits(tmp_path):
    folder = tmp_path / "class"
    first = cli.prepare_folder(folder)
    assert sorted(first.copied) == sorted(SHIPPED) and not first.kept
    for name in SHIPPED:
        assert (folder / name).read_bytes() == (NOTEBOOKS / name).read_bytes()

    edited = folder / "03_the_tape.ipynb"
    edited.write_text(edited.read_text().replace("# 3 · The tape", "# 3 · My notes"))
    (folder / "05_pitfalls_done_right.ipynb").unlink()
    second = cli.prepare_folder(folder)
    assert second.kept == ["03_the_tape.ipynb"]
    assert second.copied == ["05_pitfalls_done_right.ipynb"]
    assert len(second.current) == len(SHIPPED) - 2
    assert "# 3 · My notes" in edited.read_text()  # not overwritten


def test_a_file_in_place_of_the_folder_is_a_clear_error(tmp_path):
    (tmp_path / "taken").write_text("")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        cli.prepare_folder(tmp_path / "taken")


def test_no_display_means_no_browser_attempt(monkeypatch):
    if sys.platform == "darwin" or os.name == "nt":
        pytest.skip("macOS and Windows always have a display")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    opened = []
    monkeypatch.setattr(cli.webbrowser, "get", lambda *a: opened.append(a))
    assert cli.open_browser("http://localhost:1/") is False
    assert opened == []


@needs_jupyterlab
def test_a_port_in_use_is_refused_with_a_message(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert cli.main(["lab", "--port", str(port), "--dir", str(tmp_path / "w")]) == 1
    assert f"port {port} is in use" in capsys.readouterr().err


@needs_jupyterlab
def test_the_lab_starts_serves_the_tutorials_and_stops(tmp_path):
    port = unused_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):  # a headless machine
        env.pop(name, None)
    headless = sys.platform.startswith("linux")
    command = [sys.executable, "-m", "kernlab", "lab", "--port", str(port),
               "--dir", str(tmp_path / "work")] + ([] if headless else ["--no-browser"])
    lab = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in lab.stdout], daemon=True).start()
    try:
        printed, url = [], None
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline and lab.poll() is None:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            printed.append(line)
            if line.strip().startswith(f"http://localhost:{port}/lab"):
                url = line.strip()
        assert url is not None, "no URL printed:\n" + "".join(printed)
        token = url.rsplit("token=", 1)[1]
        if headless:
            time.sleep(0.5)
            while not lines.empty():
                printed.append(lines.get())
            assert "No browser can be opened here" in "".join(printed)

        def get(path):
            request = urllib.request.Request(f"http://localhost:{port}/{path}",
                                             headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(request, timeout=30) as reply:
                assert reply.status == 200
                return reply.read()

        listing = json.loads(get("api/contents"))
        assert sorted(item["name"] for item in listing["content"]) == sorted(SHIPPED)
        served = json.loads(get("api/contents/01_first_kernel.ipynb"))["content"]
        shipped = json.loads((NOTEBOOKS / "01_first_kernel.ipynb").read_text())
        assert [c["source"] for c in served["cells"]] == \
            ["".join(c["source"]) for c in shipped["cells"]]
        assert b"JupyterLab" in get(url.split(f":{port}/", 1)[1])  # the page the URL opens
    finally:
        lab.send_signal(signal.SIGTERM)
        try:
            code = lab.wait(30)
        except subprocess.TimeoutExpired:
            lab.kill()
            raise
    assert code == 0
    with pytest.raises(ConnectionRefusedError):  # the server was stopped with the command
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


def test_a_wheel_carries_the_tutorials_and_finds_them(tmp_path):
    for name in ("hatchling", "hatch_jupyter_builder"):
        if util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (the dev extra brings it)")
    env = dict(os.environ, KERNLAB_SKIP_JS="1")  # the Python side only: no Node.js here
    build = subprocess.run(
        [sys.executable, "-c", "import sys; from hatchling.build import build_wheel; "
         "print(build_wheel(sys.argv[1]))", str(tmp_path / "dist")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    wheel = tmp_path / "dist" / build.stdout.strip().splitlines()[-1]
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
        entry_points = next(n for n in z.namelist() if n.endswith("entry_points.txt"))
        assert "kernlab = kernlab.cli:main" in z.read(entry_points).decode()
    for name in SHIPPED:
        assert (site / "kernlab" / "_tutorials" / name).read_bytes() == \
            (NOTEBOOKS / name).read_bytes()

    # kernlab imported from the unpacked wheel, away from the checkout, finds its copy
    found = subprocess.run(
        [sys.executable, "-c", "from kernlab import cli; print(cli.tutorials_source())"],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()) == site / "kernlab" / "_tutorials"
