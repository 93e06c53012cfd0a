"""The JupyterLab extension in a real browser: a JupyterLab server on 127.0.0.1 with a temporary
notebook folder, driven through Debian's headless Chromium with Selenium.

One notebook, open for the whole module; each test runs its own cells as a person would
(click into the cell, Shift+Enter, type a fix): a %%kernel cell that fails to compile marks
the offending columns in its editor, and the mark clears once the cell is fixed and compiles;
a displayed kernel links a hovered source line to the IR lines generated from it; a kernel
whose name and source hold markup renders it as inert text; a tape renders as a graph whose
launches show their adjoint listing. Screenshots go to the module's tmp folder (and to
$KERNLAB_SCREENSHOT_DIR when set).

Skips cleanly without chromium + chromedriver, selenium, jupyterlab + ipykernel, or the built
extension (extension/labextension: ``pip install -e .`` with Node.js builds it).
"""
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "extension" / "labextension"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
XSS = "<img src=x onerror=alert(1)>"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="needs chromium and chromedriver (apt-get install chromium "
                              "chromium-driver)"),
    pytest.mark.skipif(not (BUILT / "package.json").exists(),
                       reason="the JupyterLab extension is not built (extension/labextension)"),
]
selenium = pytest.importorskip("selenium", reason="needs selenium")
pytest.importorskip("jupyterlab", reason="needs jupyterlab")
pytest.importorskip("ipykernel", reason="needs ipykernel")

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import NoAlertPresentException, TimeoutException  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

TOKEN = "kernlab-browser-test"
BAD = ("%%kernel\n"
       "def scale(x: array(dtype=float32), y: array(dtype=float32)):\n"
       "    i = tid()\n"
       "    y[i] = sin(x[i], 2.0)")
# A cell saved with the error output of a failed run (as ipykernel wrote it): its mark must
# show as soon as the notebook opens, before anything runs.
SAVED = BAD.replace("scale", "saved")
SAVED_ERROR = {
    "output_type": "error", "ename": "KernelTypeError",
    "evalue": "no overload of sin() accepts (float32, float32)\n"
              "  --> cell, line 4, in kernel 'saved'\n"
              "   4 |     y[i] = sin(x[i], 2.0)\n"
              "     |            ^^^^^^^^^^^^^^",
    "traceback": ["KernelTypeError: no overload of sin() accepts (float32, float32)"]}


SHOWN = ("%%kernel --quiet\n"
         "def shown(x: array(dtype=float32), y: array(dtype=float32)):\n"
         "    i = tid()\n"
         "    y[i] = sin(x[i])")
TAPED = ("from kernlab.notebook.display import TapeGraph\n"
         "@kl.kernel\n"
         "def taped(x: kl.array(dtype=float), y: kl.array(dtype=float)):\n"
         "    i = kl.tid()\n"
         "    y[i] = kl.sin(x[i])\n"
         "x = kl.array(np.arange(4, dtype=np.float32), requires_grad=True)\n"
         "y = kl.zeros(4, requires_grad=True)\n"
         "with kl.Tape() as tape:\n"
         "    kl.launch(taped, 4, inputs=[x, y])\n"
         "tape.backward(grads={y: kl.ones(4)})\n"
         "TapeGraph(tape, x=x, y=y)")
CELLS = [
    "import numpy as np\nimport kernlab as kl\n%load_ext kernlab",          # 0: run first
    BAD,                                                                     # 1
    SHOWN, "shown",                                                          # 2, 3
    f"%%kernel --quiet\ndef inert(x: array(dtype=float32)):\n    # {XSS}\n"
    "    x[tid()] = 1.0",                                                    # 4
    f"inert.key = {XSS!r}\ninert",                                          # 5
    TAPED,                                                                   # 6
    SAVED,                                                                   # 7
    "%%kernel\ndef oops(x: array(dtype=float32)):\n    x[tid()] = 1.0 +* 2.0",  # 8
]


def notebook(cells) -> dict:
    def cell(k, src):
        saved = src == SAVED
        return {"cell_type": "code", "id": f"c{k}", "metadata": {}, "source": src,
                "outputs": [SAVED_ERROR] if saved else [], "execution_count": 1 if saved else None}
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                        "language": "python"}},
            "cells": [cell(k, src) for k, src in enumerate(cells)]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def run_lab(tmp: Path, name: str, nb: dict, extra_args=()):
    """A JupyterLab server in ``tmp`` that loads the built extension, serving the notebook
    ``nb`` as ``name``; yields (base URL, tmp) and stops the server after."""
    (tmp / "data" / "labextensions").mkdir(parents=True)
    (tmp / "data" / "labextensions" / "kernlab").symlink_to(BUILT, target_is_directory=True)
    settings = tmp / "settings"
    write_json(settings / "@jupyterlab" / "apputils-extension" /
               "notification.jupyterlab-settings", {"fetchNews": "false",
                                                    "checkForUpdates": False})
    notebooks = tmp / "notebooks"
    write_json(notebooks / name, nb)
    port = free_port()
    env = {**os.environ,
           "JUPYTER_PATH": os.pathsep.join([str(tmp / "data"), os.environ.get("JUPYTER_PATH", "")]),
           "JUPYTER_CONFIG_DIR": str(tmp / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces"),
           "IPYTHONDIR": str(tmp / "ipython"),
           "KERNLAB_CACHE_DIR": str(tmp / "cache"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log = open(tmp / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
         f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         "--allow-root", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={notebooks}", *extra_args],
        env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(tmp))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    log.flush()
                    pytest.fail("JupyterLab did not start:\n" + (tmp / "server.log").read_text())
                time.sleep(0.5)
        yield base, tmp
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server that loads the extension from extension/labextension."""
    yield from run_lab(tmp_path_factory.mktemp("lab"), "kernlab.ipynb", notebook(CELLS))


@pytest.fixture(scope="module")
def browser(lab):
    _, tmp = lab
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1500,1300",
                f"--user-data-dir={tmp / 'chromium'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER),
                              options=options)
    try:
        yield driver
    finally:
        driver.quit()


# ---- driving the notebook -----------------------------------------------------------------

def wait(driver, predicate, timeout=60, what=""):
    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(
        lambda d: predicate(d), message=what)


def cells(driver):
    return driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell")


def prompt(cell) -> str:
    return cell.find_element(By.CSS_SELECTOR, ".jp-InputArea-prompt").text.strip()


def editor(driver, k):
    return cells(driver)[k].find_element(By.CSS_SELECTOR, ".cm-content")


def run(driver, k, timeout=120):
    """Runs cell k (Shift+Enter in its editor) and waits until it has finished."""
    before = prompt(cells(driver)[k])

    def started(d):
        text = prompt(cells(d)[k])
        return text != before and text not in ("", "[ ]:")

    for _ in range(3):  # a keystroke can land while the page is still settling: retry
        editor(driver, k).click()
        ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT) \
            .perform()
        try:
            wait(driver, started, 10)
            break
        except TimeoutException:
            continue
    wait(driver, lambda d: started(d) and "*" not in prompt(cells(d)[k]), timeout,
         f"cell {k} did not finish running")
    return cells(driver)[k]


def kernel_idle(base) -> bool:
    with urllib.request.urlopen(f"{base}/api/sessions?token={TOKEN}", timeout=5) as reply:
        sessions = json.load(reply)
    return any(s.get("kernel", {}).get("execution_state") == "idle" for s in sessions)


def shot(driver, tmp, name, element=None) -> Path:
    path = tmp / f"{name}.png"
    if element is None:
        driver.save_screenshot(str(path))
    else:
        element.screenshot(str(path))
    extra = os.environ.get("KERNLAB_SCREENSHOT_DIR")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(extra) / path.name)
    return path


def no_alert(driver) -> bool:
    try:
        driver.switch_to.alert
    except NoAlertPresentException:
        return True
    return False


@pytest.fixture(scope="module")
def page(lab, browser):
    """The notebook open in JupyterLab, its kernel started and kernlab loaded (cell 0)."""
    base, tmp = lab
    with screenshot_on_failure(browser, tmp, "failure-open"):
        browser.get(f"{base}/lab/tree/kernlab.ipynb?token={TOKEN}")
        wait(browser, lambda d: len(cells(d)) == len(CELLS), 120, "the notebook did not open")
        wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-Notebook .cm-content"))
        wait(browser, lambda d: kernel_idle(base), 120, "the kernel did not start")
        run(browser, 0)
    return browser, tmp


@contextlib.contextmanager
def screenshot_on_failure(driver, tmp, name):
    try:
        yield
    except Exception:
        shot(driver, tmp, name)
        print("screenshot:", tmp / f"{name}.png")
        print("server log:", (tmp / "server.log").read_text()[-3000:])
        raise


def marks(driver, k):
    return cells(driver)[k].find_elements(By.CSS_SELECTOR, ".kl-diagnostic-mark")


# ---- the tests --------------------------------------------------------------------------------

def test_a_saved_failed_cell_shows_its_mark_when_the_notebook_opens(page):
    d, tmp = page
    with screenshot_on_failure(d, tmp, "failure-saved"):
        mark = wait(d, lambda d: marks(d, 7), 30, "no mark on the saved failed cell")[0]
        assert mark.text == "sin(x[i], 2.0)"


def test_a_compile_error_is_marked_in_the_editor_and_clears_once_fixed(page):
    d, tmp = page
    with screenshot_on_failure(d, tmp, "failure-diagnostic"):
        bad = run(d, 1)
        assert "KernelTypeError" in bad.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text
        mark = wait(d, lambda d: marks(d, 1), 30, "no mark in the failed cell's editor")[0]
        assert mark.text == "sin(x[i], 2.0)"
        assert "no overload of sin()" in mark.get_attribute("title")
        line = cells(d)[1].find_element(By.CSS_SELECTOR, ".cm-line.kl-diagnostic-line")
        assert line.text.strip() == "y[i] = sin(x[i], 2.0)"
        shot(d, tmp, "1-diagnostic", cells(d)[1])

        editor(d, 1).click()  # the fix: 'sin(x[i], 2.0)' -> 'sin(x[i])'
        ActionChains(d).key_down(Keys.CONTROL).send_keys(Keys.END).key_up(Keys.CONTROL) \
            .send_keys(Keys.BACKSPACE * 6).send_keys(")").perform()
        fixed = run(d, 1)
        assert "kernel scale(" in fixed.find_element(By.CSS_SELECTOR, ".jp-OutputArea").text
        wait(d, lambda d: not marks(d, 1), 30, "the mark did not clear after the cell compiled")
        assert not cells(d)[1].find_elements(By.CSS_SELECTOR, ".kl-diagnostic-line")


def test_a_syntax_error_is_marked_where_pythons_caret_points(page):
    d, tmp = page
    with screenshot_on_failure(d, tmp, "failure-syntax"):
        run(d, 8)
        mark = wait(d, lambda d: marks(d, 8), 30, "no mark for the syntax error")[0]
        assert mark.text == "*"
        assert mark.get_attribute("title") == "SyntaxError: invalid syntax"
        shot(d, tmp, "6-syntax-error", cells(d)[8].find_element(By.CSS_SELECTOR, ".jp-InputArea"))


def test_hovering_a_kernel_source_line_highlights_the_ir_lines_from_it(page):
    d, tmp = page
    with screenshot_on_failure(d, tmp, "failure-hover"):
        run(d, 2)
        shown = run(d, 3)
        view = wait(d, lambda d: cells(d)[3].find_elements(By.CSS_SELECTOR, ".kl-source"), 30,
                    "the kernel did not render with kernlab's renderer")[0]
        line = next(e for e in view.find_elements(By.CSS_SELECTOR, ".kl-src-line")
                    if "sin(x[i])" in e.text)
        ActionChains(d).move_to_element(line).perform()
        linked = wait(d, lambda d: view.find_elements(By.CSS_SELECTOR,
                                                      ".kl-gen-line.kl-linked"),
                      10, "hovering a source line highlighted nothing")
        assert "kl-linked" in line.get_attribute("class")
        assert all(e.text.rstrip().endswith(":4") for e in linked)  # '# cell:4' comments
        assert any("sin(" in e.text for e in linked)
        shot(d, tmp, "2-hover-linked", shown)


def test_markup_in_a_kernel_name_and_source_renders_as_inert_text(page):
    d, tmp = page
    with screenshot_on_failure(d, tmp, "failure-inert"):
        run(d, 4)
        inert = run(d, 5)
        view = wait(d, lambda d: cells(d)[5].find_elements(By.CSS_SELECTOR, ".kl-source"),
                    30)[0]
        assert view.find_element(By.CSS_SELECTOR, ".kl-name").text == XSS
        assert any(XSS in e.text for e in view.find_elements(By.CSS_SELECTOR, ".kl-src-line"))
        assert d.execute_script("return document.querySelectorAll('img[src=\"x\"]').length") \
            == 0
        assert not inert.find_elements(By.CSS_SELECTOR, ".jp-OutputArea img")
        assert no_alert(d)
        shot(d, tmp, "3-inert-markup", inert)


def test_a_tape_renders_as_a_graph_whose_launch_shows_its_adjoint_listing(page):
    d, tmp = page
    with screenshot_on_failure(d, tmp, "failure-tape"):
        run(d, 6)
        graph = wait(d, lambda d: cells(d)[6].find_elements(By.CSS_SELECTOR, ".kl-tape"), 30,
                     "the tape did not render with kernlab's renderer")[0]
        norms = [e.text for e in graph.find_elements(By.CSS_SELECTOR, ".kl-grad-norm")]
        # |cos(0..3)| for x; y's seed was consumed by the store that wrote y (Warp 1.19)
        assert norms == ["|grad| 1.56371", "|grad| 0"]
        ActionChains(d).move_to_element(graph.find_element(By.CSS_SELECTOR, "g.kl-record")) \
            .click().perform()
        details = wait(d, lambda d: graph.find_elements(By.CSS_SELECTOR,
                                                        ".kl-details .kl-source"),
                       10, "clicking the launch showed no listing")[0]
        assert details.find_element(By.CSS_SELECTOR, ".kl-tab.kl-active").text == "IR (adjoint)"
        assert "adjoint kernel taped(" in details.text
        d.execute_script("arguments[0].scrollIntoView({block: 'start'})", graph)
        shot(d, tmp, "4-tape", graph)
        shot(d, tmp, "5-page")
        assert no_alert(d)
