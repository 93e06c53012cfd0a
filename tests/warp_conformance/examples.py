"""Run NVIDIA Warp's own examples on kernlab and on Warp, on the CPU, and compare the numbers.

    python tests/warp_conformance/examples.py                 # every selected example
    python tests/warp_conformance/examples.py example_fluid --steps 4
    python tests/warp_conformance/examples.py --list          # what is left out, and why

The example files are read from the installed ``warp-lang`` package (``pip install -e
".[conformance]"``); nothing of Warp's is copied here. Each example runs twice, each time in
a child process with a time limit (a crash or a hang is recorded, not fatal): once with
Warp itself (``device="cpu"``) and once with ``import warp`` giving kernlab. Both runs build
the example with the same arguments and seeds, rendering off, advance it a few steps and
save its state arrays (positions, velocities, grids, images, losses); the parent compares
them within a tolerance and prints a table. The exit status is 1 when any example differs
or fails on kernlab.
"""
from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def warp_examples_dir() -> Path | None:
    """warp/examples of the installed warp-lang, found without importing Warp."""
    spec = importlib.util.find_spec("warp")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "examples"
    return path if path.is_dir() else None


# ---------------------------------------------------------------- what runs, and how

@dataclass
class Example:
    """How to drive one of Warp's examples headless: ``make(module)`` builds it with
    rendering off, ``advance(example)`` moves it one step, ``state`` names the attributes
    compared after the last step (arrays, or Python numbers such as a loss)."""
    make: Callable
    state: list[str]
    steps: int = 3
    advance: Callable = lambda ex: ex.step()
    rtol: float = 1e-4   # of the largest magnitude in the reference array
    rtol_of: dict = field(default_factory=dict)  # per state name, where it must differ
    quick: bool = True   # in tests/test_warp_examples.py (seconds, not minutes)
    note: str = ""


def _train_iteration(ex):
    """One iteration of the optim examples' training loop (their ``__main__``), without
    graphs: forward, checkpointed backward, an Adam step, clearing the tape."""
    ex.forward()
    ex.backward()
    ex.grad_vx = ex.vx_arrays[0].grad.numpy().copy()
    ex.grad_vy = ex.vy_arrays[0].grad.numpy().copy()
    ex.optimizer.step([ex.vx_arrays[0].grad.flatten(), ex.vy_arrays[0].grad.flatten()])
    ex.tape.zero()
    ex.last_loss = float(ex.loss.numpy()[0])


def _spin_lock(m):
    """example_spin_lock's test on the CPU: 1024 threads take a lock (atomic_cas) in turn
    and increment a counter inside it. Its own function hard-codes "cuda"; this makes the
    same three arrays and launch on the current device."""
    wp = m.wp
    ns = types.SimpleNamespace(lock=wp.array([0], dtype=int), counter=wp.array([0], dtype=int),
                               atomic_counter=wp.array([0], dtype=int))
    wp.launch(m.test_spinlock_counter, dim=1024,
              inputs=[ns.counter, ns.atomic_counter, ns.lock])
    return ns


def _substeps(ex, n, graph_attr=None):
    """Fewer substeps per step, so a CPU run takes seconds (the kernels are the same); an
    example that captured its substeps in a graph runs them without it."""
    for attr in ("sim_substeps", "sim_step_to_frame_ratio"):
        if hasattr(ex, attr):
            setattr(ex, attr, n)
    if graph_attr:
        setattr(ex, graph_attr, False)
    return ex


def _fdtd_step(ex):
    """One leapfrog step, then the energy report of the example's headless loop (the
    per-block sums: wp.tile, wp.tile_sum, wp.tile_atomic_add)."""
    ex.step()
    ex._check_em_energy(0)


def _perturbation_step(ex):
    """One iteration of example_navier_stokes_perturbation: forward through the tiled FFTs
    under a Tape, backward, Adam, the norm clamp; the gradient is kept as Adam takes it."""
    step = ex.optimizer.step

    def recording(grads):
        ex.grad_delta_omega = ex.delta_omega.grad.numpy().copy()
        step(grads)
    ex.optimizer.step = recording
    ex.step()
    ex.last_loss = float(ex.loss.numpy()[0])


def _torch_step(ex):
    ex.step()
    ex.xy_now = ex.xy.detach().numpy().copy()
    ex.grad_now = ex.xy.grad.detach().numpy().copy()


_FLUID_TRAINING = ["last_loss", "grad_vx", "grad_vy", "vx_arrays[0]", "vy_arrays[0]",
                   "density_arrays[-1]"]
# Adam's step lr * g / (|g| + 1e-8) is about lr * sign(g): where a gradient is within
# rounding of zero (|g| ~ 1e-9 next to 1e-5 elsewhere) the step can go either way on two
# correct implementations. The gradients themselves are compared at the default 1e-4.
_ADAM_RTOL = {"vx_arrays[0]": 5e-3, "vy_arrays[0]": 5e-3}

EXAMPLES: dict[str, Example] = {
    "core/example_wave": Example(
        make=lambda m: m.Example(stage_path=None),
        state=["sim_grid0", "sim_grid1", "sim_verts", "sim_time"], steps=3),
    "core/example_fluid": Example(
        make=lambda m: m.Example(),
        state=["u0", "u1", "rho0", "rho1", "p0", "div", "sim_time"], steps=2,
        note="the pressure solve is replayed from a captured graph (wp.ScopedCapture)"),
    "core/example_graph_capture": Example(
        make=lambda m: m.Example(), state=["pixel_values", "x"], steps=3,
        note="16 octaves of wp.noise replayed from a captured graph"),
    "core/example_raymarch": Example(
        make=lambda m: m.Example(height=96, width=192),
        advance=lambda ex: ex.render(), state=["pixels"], steps=1),
    "core/example_dem": Example(
        make=lambda m: _substeps(m.Example(stage_path=None), 4, "use_graph_capture"),
        state=["x", "v", "f"], steps=2,
        note="65536 particles, 4 substeps per step (64 in the file) without its graph"),
    "core/example_sph": Example(
        make=lambda m: _substeps(m.Example(stage_path=None), 4),
        state=["x", "v", "rho", "a"], steps=2,
        note="62500 particles, 4 substeps per step (40 in the file)"),
    "optim/example_particle_repulsion": Example(
        make=lambda m: _substeps(m.Example(), 4),
        state=["positions", "velocities", "forces"], steps=2,
        note="the particles of the NVIDIA logo image, 4 substeps per step (32 in the file)"),
    "core/example_torch": Example(
        make=lambda m: m.Example(headless=True, num_particles=1500),
        advance=_torch_step, state=["xy_now", "grad_now", "mean_pos"], steps=3, quick=False,
        note="a torch.autograd.Function whose forward and backward launch a kernel and "
             "its adjoint on arrays shared with PyTorch (CPU tensors)"),
    "core/example_sample_mesh": Example(
        make=lambda m: m.Example(stage_path=None), state=["points", "cdf"], steps=3,
        note="wp.Mesh, wp.mesh_eval_position; triangles drawn by area with wp.lower_bound"),
    "core/example_nvdb": Example(
        make=lambda m: m.Example(stage_path=None), state=["positions", "velocities"], steps=3,
        note="10000 particles against rocks.nvdb (wp.Volume.load_from_nvdb, a ZIP-compressed "
             "float grid): volume_world_to_index, volume_sample_grad_f"),
    "core/example_spin_lock": Example(
        make=_spin_lock, advance=lambda ns: None, state=["counter", "atomic_counter", "lock"],
        steps=1, note="on the CPU (the file's own main asks for cuda)"),
    "optim/example_fluid_checkpoint": Example(
        make=lambda m: m.Example(sim_steps=4, pressure_iterations=4, segment_size=2),
        advance=_train_iteration, state=_FLUID_TRAINING, steps=2, rtol_of=_ADAM_RTOL,
        quick=False,  # its sibling below covers the same kernels in the quick test
        note="4 steps in 2 checkpoint segments, 4 Jacobi iterations; Adam on the "
             "initial velocity"),
    "optim/example_fluid_checkpoint_custom_backward": Example(
        make=lambda m: m.Example(sim_steps=4, pressure_iterations=4, segment_size=2),
        advance=_train_iteration, state=_FLUID_TRAINING, steps=2, rtol_of=_ADAM_RTOL,
        note="as example_fluid_checkpoint, with a Tape.record_func adjoint for the "
             "pressure solve"),
    "core/example_fdtd_3d": Example(
        make=lambda m: m.Example(), advance=_fdtd_step,
        state=["e_x", "e_y", "e_z", "h_x", "h_y", "h_z", "electric_energy_sum",
               "magnetic_energy_sum"], steps=4,
        note="per-block energy sums with wp.tile, wp.tile_sum and wp.tile_atomic_add"),
    "core/example_fft_poisson_navier_stokes_2d": Example(
        make=lambda m: m.Example(),
        state=["omega_curr", "psi", "omega_complex", "fft_temp_1", "fft_temp_2"], steps=2,
        note="row FFTs with wp.tile_fft/tile_ifft and a tiled transpose (launch_tiled)"),
    "optim/example_navier_stokes_perturbation": Example(
        make=lambda m: m.Example(spin_up_steps=2, lead_steps=1),
        advance=_perturbation_step,
        state=["last_loss", "grad_delta_omega", "delta_omega", "omega_timesteps[1]"], steps=2,
        rtol_of={"delta_omega": 5e-3}, quick=False,
        note="512x512, 2 spin-up steps and 1 differentiable step (500 and 80 in the file); "
             "gradients through tile_load, tile_fft/tile_ifft, tile_transpose, tile_store"),
}

# Each example of warp/examples/core and warp/examples/optim that is not in EXAMPLES, and
# why. One place for every exclusion.
EXCLUDED: dict[str, str] = {
    "core/example_alloc_tracker": "Warp's allocation tracker and memory report "
                                  "(wp.config.track_memory, print_memory_report): Warp internals",
    "core/example_custom_allocator": "CUDA device allocators (device.get_allocator): GPU only",
    "core/example_cupy": "CuPy interop on a CUDA device: GPU only (and CuPy)",
    "core/example_mesh": "reads a USD asset (pxr) into wp.Mesh",
    "core/example_mesh_intersect": "reads USD assets (pxr) into wp.Mesh",
    "core/example_raycast": "reads a USD asset (pxr) into wp.Mesh",
    "core/example_render_opengl": "an OpenGL window (warp.render.OpenGLRenderer): rendering only",
    "optim/example_diffray": "reads a USD asset (pxr) into wp.Mesh",
    "core/example_work_queue": "no reference: the example writes past its queue buffer "
                               "(capacity 8192, buffer of 4096 items); Warp 1.19 on the CPU "
                               "dies of it (double free), kernlab stops with an index error "
                               "on queue.buffer",
}


def selected_names(names=None) -> list[str]:
    if not names:
        return list(EXAMPLES)
    out = []
    for n in names:
        n = n.removesuffix(".py")
        hits = [k for k in EXAMPLES if k == n or k.split("/")[-1] == n]
        if not hits:
            raise SystemExit(f"unknown example {n!r}; selected: {', '.join(EXAMPLES)}"
                             + (f" (left out: {EXCLUDED[n]})" if n in EXCLUDED else ""))
        out += hits
    return out


# ---------------------------------------------------------------- the child process

def _bind_warp_to_kernlab(examples_dir: Path):
    """``import warp`` gives kernlab in this process, as in the test-file runner; also
    ``warp.examples.get_asset_directory()`` gives the installed examples' assets."""
    import kernlab
    from run import _WarpAsKernlab, warp_tests_dir

    class Finder(_WarpAsKernlab):
        def find_spec(self, name, path=None, target=None):
            if name == "warp.examples":
                return importlib.util.spec_from_loader(name, self, origin="warp-examples",
                                                       is_package=True)
            return super().find_spec(name, path, target)

        def create_module(self, spec):
            if spec.origin == "warp-examples":
                mod = types.ModuleType(spec.name)
                mod.__path__ = []
                mod.get_asset_directory = lambda: str(examples_dir / "assets")
                return mod
            return super().create_module(spec)

    finder = Finder(warp_tests_dir())  # before `warp` is kernlab: found from warp-lang
    sys.modules["warp"] = kernlab
    sys.meta_path.insert(0, finder)


def _state_arrays(example, names) -> dict:
    out = {}
    for name in names:  # an attribute, or an attribute's item: "vx_arrays[0]"
        base, _, index = name.partition("[")
        value = getattr(example, base)
        if index:
            value = value[int(index.rstrip("]"))]
        if hasattr(value, "numpy"):
            value = value.numpy()
        out[name] = np.asarray(value, dtype=np.float64 if np.isscalar(value) else None)
    return out


def run_example(name: str, use_warp: bool, steps: int, out: Path) -> dict:
    """Build one example, advance it ``steps`` times, save its state to ``out`` (npz)."""
    spec = EXAMPLES[name]
    examples_dir = warp_examples_dir()
    if use_warp:
        os.environ.setdefault("WARP_CACHE_PATH", str(Path.home() / ".cache" / "warp-conf"))
        import warp
        warp.config.quiet = True
        warp.init()
    else:
        _bind_warp_to_kernlab(examples_dir)
    import warp as wp
    path = examples_dir / (name + ".py")
    modspec = importlib.util.spec_from_file_location(
        "warp_example_" + name.replace("/", "_"), path)
    module = importlib.util.module_from_spec(modspec)
    timings = {}
    t0 = time.perf_counter()
    with wp.ScopedDevice("cpu"):
        modspec.loader.exec_module(module)
        example = spec.make(module)
        timings["build_s"] = time.perf_counter() - t0
        step_s = []
        for _ in range(steps):
            t = time.perf_counter()
            spec.advance(example)
            wp.synchronize()
            step_s.append(time.perf_counter() - t)
        state = _state_arrays(example, spec.state)
    timings["first_step_s"] = step_s[0] if step_s else 0.0
    timings["step_s"] = min(step_s) if step_s else 0.0  # warm (compiled) step
    np.savez(out, **state)
    return timings


# ---------------------------------------------------------------- the parent process

_RESULT = "@@RESULT@@"


def run_child(name, use_warp, steps, out, timeout_s) -> tuple[str, dict | str]:
    """('ok', timings) or ('error', first error line) or ('timeout'|'crash', message)."""
    cmd = [sys.executable, __file__, "--child", name, "--steps", str(steps), "--out", str(out)]
    if use_warp:
        cmd.append("--warp")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              env=dict(os.environ, PYTHONUNBUFFERED="1"))
    except subprocess.TimeoutExpired:
        return "timeout", f"ran longer than {timeout_s:.0f} s"
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith(_RESULT):
            status, payload = json.loads(line[len(_RESULT):])
            if isinstance(payload, dict):
                payload["wall_s"] = wall
            return status, payload
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
    return "crash", f"the process died (exit {proc.returncode}): {tail[0][:200]}"


def compare(ref: dict, got: dict, rtol: float, rtol_of: dict | None = None) \
        -> tuple[float, str]:
    """(max abs diff over all state arrays, first mismatch or ''). An array matches when
    every element is within ``rtol`` times the array's largest magnitude (in Warp's run)
    of Warp's; an all-zero array must be zero."""
    worst, first = 0.0, ""
    for key, a in ref.items():
        tol_r = (rtol_of or {}).get(key, rtol)
        if key not in got:
            return float("inf"), f"{key}: missing"
        b = got[key]
        a64 = np.asarray(a, dtype=np.float64)
        b64 = np.asarray(b, dtype=np.float64)
        if a64.shape != b64.shape:
            return float("inf"), f"{key}: shape {b64.shape}, Warp's {a64.shape}"
        if a64.size == 0:
            continue
        if not np.array_equal(np.isfinite(a64), np.isfinite(b64)):
            return float("inf"), f"{key}: non-finite values differ"
        fin = np.isfinite(a64)
        diff = float(np.max(np.abs(a64[fin] - b64[fin]), initial=0.0))
        worst = max(worst, diff)
        scale = float(np.max(np.abs(a64[fin]), initial=0.0))
        if diff > tol_r * scale and not first:
            idx = tuple(int(k) for k in np.unravel_index(
                int(np.argmax(np.where(fin, np.abs(a64 - b64), -1))), a64.shape))
            first = (f"{key}{list(idx)}: {float(b64[idx])!r} on kernlab, "
                     f"{float(a64[idx])!r} on Warp (tolerance {tol_r * scale:.3g})")
    return worst, first


def check_example(name: str, steps: int | None = None, timeout_s: float = 600.0) -> dict:
    """Run one example on Warp and on kernlab and compare: a dict with status ('match',
    'differs', 'fails', 'warp fails'), max_diff, first_error and timings."""
    spec = EXAMPLES[name]
    steps = spec.steps if steps is None else steps
    with tempfile.TemporaryDirectory(prefix="kernlab_examples_") as tmp:
        ref_out, got_out = Path(tmp) / "warp.npz", Path(tmp) / "kernlab.npz"
        w_status, w = run_child(name, True, steps, ref_out, timeout_s)
        k_status, k = run_child(name, False, steps, got_out, timeout_s)
        row = {"example": name, "steps": steps, "warp": w if w_status == "ok" else None,
               "kernlab": k if k_status == "ok" else None, "max_diff": None,
               "first_error": ""}
        if w_status != "ok":
            row.update(status="warp fails", first_error=f"Warp: {w}")
        elif k_status != "ok":
            row.update(status="fails", first_error=f"{k_status}: {k}")
        else:
            ref, got = dict(np.load(ref_out)), dict(np.load(got_out))
            diff, first = compare(ref, got, spec.rtol, spec.rtol_of)
            row.update(status="differs" if first else "match", max_diff=diff,
                       first_error=first)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("examples", nargs="*", help="examples (default: every selected one)")
    ap.add_argument("--steps", type=int, default=None, help="steps (default: per example)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds a run may take")
    ap.add_argument("--list", action="store_true", help="list selected and left-out examples")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--warp", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        try:
            timings = run_example(args.child, args.warp, args.steps, Path(args.out))
            result = ("ok", timings)
        except BaseException as e:  # noqa: BLE001 — the parent records it
            message = getattr(e, "message", None)
            text = message.splitlines()[0] if isinstance(message, str) and message else str(e)
            text = (text.strip().splitlines() or [""])[0]
            result = ("error", f"{type(e).__name__}: {text}"[:300])
        sys.stdout.flush()
        print("\n" + _RESULT + json.dumps(result), flush=True)  # on a line of its own
        return 0

    if args.list:
        for name, spec in EXAMPLES.items():
            print(f"run   {name}  ({spec.steps} steps){'  ' + spec.note if spec.note else ''}")
        for name, why in EXCLUDED.items():
            print(f"out   {name}: {why}")
        return 0
    if warp_examples_dir() is None:
        print("warp-lang is not installed: pip install -e '.[conformance]'")
        return 2
    rows = []
    print(f"{'example':<48} {'steps':>5} {'max abs diff':>12} {'status':<10} "
          f"{'kernlab s':>9} {'Warp s':>7}  first error")
    for name in selected_names(args.examples):
        row = check_example(name, args.steps, args.timeout)
        rows.append(row)
        diff = "" if row["max_diff"] is None else f"{row['max_diff']:.3g}"
        kt = f"{row['kernlab']['wall_s']:.1f}" if row["kernlab"] else ""
        wt = f"{row['warp']['wall_s']:.1f}" if row["warp"] else ""
        print(f"{name:<48} {row['steps']:>5} {diff:>12} {row['status']:<10} {kt:>9} {wt:>7}  "
              f"{row['first_error'][:120]}", flush=True)
    matched = sum(r["status"] == "match" for r in rows)
    print(f"TOTAL: {matched} of {len(rows)} examples match Warp "
          f"({len(EXCLUDED)} left out: --list says why)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if matched == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
