"""kl.lab views in a real JupyterLab, through save and reopen, in light and dark themes.

A notebook that shows ``kl.lab.inspect``, ``kl.lab.tape``, ``kl.lab.grads``, ``kl.lab.step``
and a ``%%kernel --show`` listing is run in JupyterLab (headless Debian Chromium, Selenium),
saved, and then looked at four ways:

1. live, right after running: the widgets show on top of the saved renderings (except
   inspect's, which the extension's source renderer keeps: it links lines by hover, which
   the widget's dropdown cannot);
2. after a page reload with the kernel still running: the widgets come back live;
3. after the kernel was shut down and the page reloaded (JupyterLab starts a new kernel,
   which has none of the widget models): the saved renderings show;
4. a copy written to disk (so not signed: untrusted) opened with no kernel: the saved
   renderings show.

Each time: no output reads "Error displaying widget", the browser console logged no
ipywidgets "model not found" (the view renderer never asks for a model the widget manager
does not hold), every view is visible, no element of
a view (or of the ``%%kernel --show`` listing) reaches outside its output area (nothing
clipped), and, in the dark theme, the text of every view and of the listing contrasts with what is behind it (WCAG ratio >= 3, computed from the styles
the browser applied, translucent backgrounds blended). Screenshots of each view in light and
dark go to the module's tmp folder, ``views-screens/`` (printed; also copied to
$KERNLAB_SCREENSHOT_DIR when set). The file saved by JupyterLab is checked too: its view
outputs hold no widget view, only the saved rendering and kernlab's view type. After the
``kl.lab.inspect`` is drawn by the extension's source renderer in every state: the IR tab
holds forward, adjoint and tangent side by side, and hovering a user line highlights the
lines generated from it in all three (and back).

Skips cleanly without chromium + chromedriver, selenium, jupyterlab + ipykernel,
ipywidgets, or the built extension.
"""
import json
import os
import shutil
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("ipywidgets", reason="needs ipywidgets")
from test_extension_browser import (BUILT, CHROMEDRIVER, CHROMIUM, TOKEN,  # noqa: E402
                                    kernel_idle, run_lab, write_json)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                       reason="needs chromium and chromedriver (apt-get install chromium "
                              "chromium-driver)"),
    pytest.mark.skipif(not (BUILT / "package.json").exists(),
                       reason="the JupyterLab extension is not built (extension/labextension)"),
]

ROOT = Path(__file__).resolve().parents[1]
VIEW_MIME = "application/vnd.kernlab.view+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SETUP = '''import numpy as np
import kernlab as kl
%load_ext kernlab
kl.config.cpu_backend = "interp"

@kl.kernel
def power(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    v = x[i] * x[i]
    y[i] = kl.sin(v)

@kl.kernel
def total(y: kl.array(dtype=float), loss: kl.array(dtype=float)):
    kl.atomic_add(loss, 0, y[kl.tid()])

x = kl.array(np.linspace(0.1, 1.0, 6).astype(np.float32), requires_grad=True)
y = kl.zeros(6, requires_grad=True)
loss = kl.zeros(1, requires_grad=True)
tape = kl.Tape()
with tape:
    kl.launch(power, 6, inputs=[x, y])
    kl.launch(total, 6, inputs=[y, loss])
tape.backward(loss=loss)'''
SHOWN = '''%%kernel --quiet --show ir
def shown(a: array(dtype=float32), b: array(dtype=float32)):
    i = tid()
    b[i] = cos(a[i]) * a[i]'''
# cell source -> the view's name (screenshots) and a text its rendering shows, live or saved
VIEWS = {
    "kl.lab.inspect(power)": ("inspect", "power"),
    "kl.lab.tape(tape, x=x, y=y, loss=loss)": ("tape", "total"),
    "kl.lab.grads(x=x, y=y)": ("grads", "|grad|"),
    "kl.lab.step(power, 6, [x, y], tid=2)": ("step", "sin(v)"),
    "kl.lab.step(power, 6, [x, y], tid=2, mode='tangent')": ("step-tangent", "tangent"),
}
LIVE_VIEWS = len(VIEWS) - 1  # all but inspect, which stays on the source renderer
INSPECT_LINE = "v = x[i] * x[i]"  # a user line of power that generates code in every listing
CELLS = [SETUP, SHOWN] + list(VIEWS)
FIRST_VIEW = 2


def notebook(kernel="python3") -> dict:
    return {"nbformat": 4, "nbformat_minor": 5,
            "metadata": {"kernelspec": {"name": kernel, "display_name": "Python 3",
                                        "language": "python"}},
            "cells": [{"cell_type": "code", "id": f"c{k}", "metadata": {}, "source": src,
                       "outputs": [], "execution_count": None}
                      for k, src in enumerate(CELLS)]}


# ---- the server and the browser ---------------------------------------------------------------

@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab with the built extension, exposing ``window.jupyterapp`` to drive it."""
    yield from run_lab(tmp_path_factory.mktemp("views"), "views.ipynb", notebook(),
                       ["--LabApp.expose_app_in_browser=True"])


@pytest.fixture(scope="module")
def driver(lab):
    _, tmp = lab
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1500,1300",
                f"--user-data-dir={tmp / 'chromium'}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER),
                         options=options)
    d.set_script_timeout(120)
    try:
        yield d
    finally:
        d.quit()


@pytest.fixture(scope="module")
def screens(lab):
    _, tmp = lab
    folder = tmp / "views-screens"
    folder.mkdir(exist_ok=True)
    print("screenshots:", folder)
    return folder


# ---- helpers -----------------------------------------------------------------------------------

def wait(d, predicate, timeout=60, what=""):
    return WebDriverWait(d, timeout, poll_frequency=0.25).until(lambda d: predicate(d),
                                                                message=what)


def command(d, name, args=None):
    """Runs a JupyterLab command and waits for it to finish."""
    return d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.jupyterapp.commands.execute(arguments[0], arguments[1])"
        ".then(() => done(null), e => done(String(e)));", name, args or {})


def open_notebook(d, base, name, expect_kernel=True):
    d.get(f"{base}/lab/tree/{name}?token={TOKEN}")
    wait(d, lambda d: d.execute_script("return !!window.jupyterapp"), 120, "no jupyterapp")
    wait(d, lambda d: len(cells(d)) == len(CELLS), 120, f"{name} did not open")
    if expect_kernel:
        wait(d, lambda d: kernel_idle(base), 120, "the kernel did not start")
    wait(d, lambda d: len(view_outputs(d)) == len(VIEWS), 60, "the views did not render")


def sessions(base) -> list:
    with urllib.request.urlopen(f"{base}/api/sessions?token={TOKEN}", timeout=5) as reply:
        return json.load(reply)


def shut_down_kernels(base):
    for s in sessions(base):
        req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={TOKEN}",
                                     method="DELETE")
        urllib.request.urlopen(req, timeout=20).close()


def cells(d) -> list:
    """The cells of the notebook in the active tab (other tabs' stay in the page, hidden)."""
    return d.find_elements(By.CSS_SELECTOR,
                           ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")


def view_outputs(d) -> list:
    """The output area of each view cell (one output each)."""
    out = []
    for cell in cells(d)[FIRST_VIEW:]:
        found = cell.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output")
        if found:
            out.append(found[0])
    return out


def set_theme(d, dark: bool):
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    command(d, "apputils:change-theme", {"theme": theme})
    wait(d, lambda d: d.execute_script("return document.body.dataset.jpThemeLight")
         == ("false" if dark else "true"), 30, f"the theme did not change to {theme}")
    time.sleep(1.0)  # the theme's stylesheet applies


# Elements of a view that reach outside its output area, or scroll sideways. A code listing
# may scroll inside its box (long lines), but the box must fit; anything else that needs a
# sideways scroll to be seen (a pane, a table, the output itself) is clipped, and so is what
# overflow: hidden cuts off (every Lumino widget's default).
CLIPPED_JS = r'''
const area = arguments[0], box = area.getBoundingClientRect(), bad = [];
const name = c => `${c.tagName}.${(c.getAttribute('class') || '').slice(0, 40)}`;
const listing = c => c.tagName === 'PRE' || c.matches('.kl-code') || (c.children.length === 1 &&
  (c.children[0].tagName === 'PRE' || c.children[0].classList.contains('highlight')));
if (area.scrollWidth > area.clientWidth + 2)
  bad.push(`the output scrolls sideways: ${area.scrollWidth} px in ${area.clientWidth} px`);
function walk(el) {
  for (const c of el.children) {
    const r = c.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < box.left - 1 || r.right > box.right + 1)
      bad.push(`${name(c)} [${Math.round(r.left)}, ${Math.round(r.right)}] outside ` +
               `[${Math.round(box.left)}, ${Math.round(box.right)}]`);
    const st = getComputedStyle(c);
    const scrolls = ['auto', 'scroll'].includes(st.overflowX) && c.tagName !== 'svg' &&
      c.scrollWidth > c.clientWidth + 2;
    if (scrolls) {
      if (!listing(c))
        bad.push(`${name(c)} scrolls sideways: ${c.scrollWidth} px in ${c.clientWidth} px`);
      continue;  // a listing's lines may scroll inside it
    }
    walk(c);
  }
}
walk(area);
return bad;
'''

# Text in a view whose colour is too close to the colour behind it (WCAG contrast < 3).
CONTRAST_JS = r'''
const area = arguments[0], low = [];
function rgba(s) {
  const m = s.match(/rgba?\(([^)]+)\)/);
  if (!m) return [0, 0, 0, 0];
  const p = m[1].split(/[ ,\/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
}
function over(top, under) {  // top blended onto an opaque colour
  const a = top[3];
  return [0, 1, 2].map(k => top[k] * a + under[k] * (1 - a)).concat([1]);
}
function background(el) {
  const layers = [];
  for (let e = el; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let col = [255, 255, 255, 1];
  for (let k = layers.length - 1; k >= 0; k--) col = over(layers[k], col);
  return col;
}
function lum(c) {
  const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
}
const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
const seen = new Set();
while (walker.nextNode()) {
  const t = walker.currentNode, el = t.parentElement;
  if (!t.textContent.trim() || seen.has(el)) continue;
  seen.add(el);
  const r = el.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) continue;
  const st = getComputedStyle(el);
  const svg = el instanceof SVGElement;
  const fg = rgba(svg ? st.fill : st.color);
  const bg = svg ? background(el.closest('svg')) : background(el);
  // the SVG's text sits on its node shapes: check it against those where it is inside one
  let under = bg;
  if (svg) {
    const g = el.closest('g');
    const shape = g && g.querySelector('rect, ellipse');
    if (shape) under = over(rgba(getComputedStyle(shape).fill), bg);
    else {
      const mid = [r.left + r.width / 2, r.top + r.height / 2];
      for (const s of el.closest('svg').querySelectorAll('rect, ellipse')) {
        const b = s.getBoundingClientRect();
        if (mid[0] > b.left && mid[0] < b.right && mid[1] > b.top && mid[1] < b.bottom) {
          under = over(rgba(getComputedStyle(s).fill), bg);
        }
      }
    }
  }
  const a = over(fg, under), l1 = lum(a), l2 = lum(under);
  const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
  if (ratio < 3) low.push(`${ratio.toFixed(2)} "${t.textContent.trim().slice(0, 30)}" ` +
                          `color ${svg ? st.fill : st.color} on rgb(${under.slice(0, 3).map(Math.round)})`);
}
return low;
'''


def check_views(d, screens, state: str, live: bool | None):
    """The checks every state gets; screenshots of each view in light and dark."""
    errors = d.execute_script(  # what shows: rendered elements' innerText (hidden ones' not)
        "return [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".jp-OutputArea-output')].filter(e => e.getClientRects().length && "
        "e.innerText.includes('Error displaying widget')).length")
    assert errors == 0, f"{state}: an output shows 'Error displaying widget'"
    outputs = view_outputs(d)
    assert len(outputs) == len(VIEWS)
    for dark in (False, True):
        set_theme(d, dark)
        # the %%kernel --show listing (kernlab's source renderer), then the kl.lab views
        listing = cells(d)[1].find_element(By.CSS_SELECTOR, ".jp-OutputArea-output")
        for k, (out, (name, text)) in enumerate(zip([listing] + view_outputs(d),
                                                    [("kernel-show", "cos(")]
                                                    + list(VIEWS.values()))):
            d.execute_script("arguments[0].scrollIntoView({block: 'start'})", out)
            time.sleep(0.3)
            classes = out.get_attribute("class").split()  # the renderer is the output node
            if k == 0:
                assert out.find_elements(By.CSS_SELECTOR, ".kl-source"), f"{state}: {name}"
            else:
                assert "kl-view" in classes, f"{state}: {name} is not kernlab's view"
            if live is not None and k:
                is_live = "kl-is-live" in classes
                expected = live and name != "inspect"
                assert is_live == expected, f"{state}: {name} live={is_live}, not {expected}"
            assert out.is_displayed() and out.size["height"] > 40, f"{state}: {name} hidden"
            assert text in out.text, f"{state}: {name} does not show {text!r}"
            clipped = d.execute_script(CLIPPED_JS, out)
            assert not clipped, f"{state}: {name} is clipped: {clipped[:5]}"
            if dark:
                low = d.execute_script(CONTRAST_JS, out)
                assert not low, f"{state}: {name} has unreadable text in dark: {low[:6]}"
            path = screens / f"{state}-{name}-{'dark' if dark else 'light'}.png"
            out.screenshot(str(path))
            extra = os.environ.get("KERNLAB_SCREENSHOT_DIR")
            if extra:
                Path(extra).mkdir(parents=True, exist_ok=True)
                shutil.copy(path, Path(extra) / path.name)
    set_theme(d, False)


def console_errors(d) -> list:
    """What the browser console logged since the last call that says a widget model is
    missing (ipywidgets' "widget model not found", logged when a view asks for one)."""
    return [e.get("message", "")[:300] for e in d.get_log("browser")
            if "model not found" in e.get("message", "")]


def check_saved_inspect(d, state: str):
    """The saved inspect rendering (the extension's source renderer): forward, adjoint and
    tangent side by side in the IR tab, linked both ways to the user's lines."""
    from selenium.webdriver.common.action_chains import ActionChains

    out = view_outputs(d)[0]
    source = out.find_element(By.CSS_SELECTOR, ".kl-view-saved .kl-source")
    assert "kl-stacked" in source.get_attribute("class"), f"{state}: inspect is not stacked"
    tab = source.find_element(By.CSS_SELECTOR, ".kl-tab.kl-active")
    assert tab.text == "IR", f"{state}: the first tab is {tab.text!r}"
    titles = [t.text for t in source.find_elements(By.CSS_SELECTOR, ".kl-tab")]
    assert titles == ["IR", "LLVM IR", "CUDA C", "PTX"], f"{state}: tabs {titles}"
    columns = source.find_elements(By.CSS_SELECTOR, ".kl-columns > .kl-column")
    kinds = [c.get_attribute("data-kind") for c in columns]
    assert kinds == ["forward", "adjoint", "tangent"], f"{state}: columns {kinds}"
    boxes = [c.rect for c in columns]  # side by side: one row, left to right, not stacked
    assert all(abs(b["y"] - boxes[0]["y"]) < 2 for b in boxes), f"{state}: {boxes}"
    assert boxes[0]["x"] < boxes[1]["x"] < boxes[2]["x"], f"{state}: {boxes}"
    assert all(b["width"] > 150 for b in boxes), f"{state}: columns too narrow: {boxes}"
    heads = [c.find_element(By.CSS_SELECTOR, ".kl-pane-title").text for c in columns]
    assert heads == kinds
    assert "tangent kernel power(" in columns[2].text
    d.execute_script("arguments[0].scrollIntoView({block: 'start'})", out)
    line = next(e for e in source.find_elements(By.CSS_SELECTOR, ".kl-src-line")
                if INSPECT_LINE in e.text)
    ActionChains(d).move_to_element(line).perform()
    wait(d, lambda d: all(c.find_elements(By.CSS_SELECTOR, ".kl-gen-line.kl-linked")
                          for c in columns), 10,
         f"{state}: hovering a user line did not highlight all three listings")
    for c in columns:
        for g in c.find_elements(By.CSS_SELECTOR, ".kl-gen-line.kl-linked"):
            # each highlighted line came from the hovered user line (its origin comment)
            tail = g.find_elements(By.CSS_SELECTOR, ".kl-origin")
            assert not tail or tail[0].text.strip().endswith(
                ":" + line.get_attribute("data-line")), f"{state}: {g.text!r}"
    assert "kl-linked" in line.get_attribute("class")
    status = source.find_element(By.CSS_SELECTOR, ".kl-status").text
    assert "forward" in status and "adjoint" in status and "tangent" in status, status
    # and back: hovering a tangent line highlights its user line
    ActionChains(d).move_to_element(
        columns[2].find_elements(By.CSS_SELECTOR, ".kl-gen-line.kl-linked")[0]).perform()
    assert "kl-linked" in line.get_attribute("class")
    extra = os.environ.get("KERNLAB_SCREENSHOT_DIR")
    if extra:  # the hovered state, for a person to look at
        Path(extra).mkdir(parents=True, exist_ok=True)
        out.screenshot(str(Path(extra) / f"{state}-inspect-hover.png"))


# ---- the test ---------------------------------------------------------------------------------

def test_views_survive_save_and_reopen_in_light_and_dark(lab, driver, screens):
    base, tmp = lab
    d = driver
    try:
        d.get(f"{base}/lab/tree/views.ipynb?token={TOKEN}")
        wait(d, lambda d: d.execute_script("return !!window.jupyterapp"), 120, "no jupyterapp")
        wait(d, lambda d: len(cells(d)) == len(CELLS), 120, "the notebook did not open")
        wait(d, lambda d: kernel_idle(base), 120, "the kernel did not start")
        assert command(d, "notebook:run-all-cells") is None
        wait(d, lambda d: all(c.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output")
                              for c in cells(d)[1:]) and kernel_idle(base), 240,
             "the cells did not run")
        wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".kl-view.kl-is-live"))
             == LIVE_VIEWS, 60, "the live widgets did not show")

        # 1. live: the stepper moves on and its current line stays readable
        step = view_outputs(d)[3]
        nxt = next(b for b in step.find_elements(By.CSS_SELECTOR, "button")
                   if "Next" in b.text)
        for _ in range(4):
            nxt.click()
        wait(d, lambda d: "step 5 of" in view_outputs(d)[3].text, 10, "the stepper did not move")
        # the %%kernel listing renders with kernlab's source renderer
        assert cells(d)[1].find_elements(By.CSS_SELECTOR, ".kl-source")
        check_views(d, screens, "1-live", live=True)
        check_saved_inspect(d, "1-live")
        assert not console_errors(d), "1-live: the console logged a missing widget model"

        assert command(d, "docmanager:save") is None
        saved = json.loads((tmp / "notebooks" / "views.ipynb").read_text())
        for cell in saved["cells"][FIRST_VIEW:]:
            (output,) = cell["outputs"]
            assert WIDGET_MIME not in output["data"]
            assert output["data"][VIEW_MIME]["version"] == 1
            assert output["metadata"][VIEW_MIME]["model_id"]
            assert {"text/plain", "text/html"} <= set(output["data"])

        # 2. reload with the kernel running: the models come back from the kernel
        d.refresh()
        open_notebook(d, base, "views.ipynb")
        wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".kl-view.kl-is-live"))
             == LIVE_VIEWS, 60, "the widgets did not come back live after a reload")
        check_views(d, screens, "2-reloaded", live=True)
        check_saved_inspect(d, "2-reloaded")
        assert not console_errors(d), "2-reloaded: the console logged a missing widget model"

        # 3. kernel shut down, page reloaded: a new kernel without the models
        shut_down_kernels(base)
        d.refresh()
        open_notebook(d, base, "views.ipynb")
        time.sleep(5)  # the widget manager has asked the new kernel for its (no) widgets
        check_views(d, screens, "3-new-kernel", live=False)
        assert cells(d)[1].find_elements(By.CSS_SELECTOR, ".kl-source")
        check_saved_inspect(d, "3-new-kernel")
        assert not console_errors(d), "3-new-kernel: the console logged a missing widget model"

        # 4. a copy opened with no kernel: a kernelspec that does not exist, dialog dismissed
        assert command(d, "application:close-all") is None
        shut_down_kernels(base)
        # (JupyterLab would start a kernel of the notebook's language: none has this one)
        saved["metadata"]["kernelspec"] = {"name": "kernlab-no-such-kernel",
                                           "display_name": "none", "language": "kernlab-none"}
        saved["metadata"].pop("language_info", None)
        write_json(tmp / "notebooks" / "nokernel.ipynb", saved)
        d.get(f"{base}/lab/tree/nokernel.ipynb?token={TOKEN}")
        wait(d, lambda d: len(cells(d)) == len(CELLS), 120, "the copy did not open")
        dialogs = wait(d, lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-Dialog"), 30,
                       "no kernel dialog")
        reject = dialogs[0].find_elements(By.CSS_SELECTOR, ".jp-Dialog-button.jp-mod-reject")
        (reject or dialogs[0].find_elements(By.CSS_SELECTOR, "button"))[0].click()
        wait(d, lambda d: not d.find_elements(By.CSS_SELECTOR, ".jp-Dialog"), 10)
        wait(d, lambda d: len(view_outputs(d)) == len(VIEWS), 60, "the views did not render")
        time.sleep(3)
        assert not [s for s in sessions(base) if s["path"].endswith("nokernel.ipynb")
                    and s.get("kernel")]
        check_views(d, screens, "4-no-kernel", live=False)
        check_saved_inspect(d, "4-no-kernel")
        assert not console_errors(d), "4-no-kernel: the console logged a missing widget model"
    except Exception:
        d.save_screenshot(str(screens / "failure.png"))
        print("failure screenshot:", screens / "failure.png")
        print("server log:", (tmp / "server.log").read_text()[-3000:])
        print("views:", d.execute_script(
            "return [...document.querySelectorAll('.kl-view')].map(v => v.className + ' :: ' + "
            "[...v.children].map(c => c.className + ' [' + c.textContent.slice(0, 60) + ']')"
            ".join(' || '))"))
        for entry in [e for e in d.get_log("browser") if e.get("level") != "WARNING"][-40:]:
            print("console:", entry.get("level"), entry.get("message", "")[:300])
        raise
