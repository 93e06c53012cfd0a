"""Tape soundness: every change of a recorded input between recording and backward() is
noticed (writes through NumPy views and other exports included), and the recording tape is
per thread and per asyncio task."""
import asyncio
import threading

import numpy as np
import pytest

import kernlab as kl
from kernlab.errors import GradientError


@kl.kernel
def square(x: kl.array(dtype=float), y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = x[i] * x[i]


@kl.kernel
def scaled_square(x: kl.array(dtype=float), s: float, y: kl.array(dtype=float)):
    i = kl.tid()
    y[i] = s * x[i] * x[i]


def recorded_square(x):
    y = kl.zeros(x.shape[0], dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(square, x.shape[0], inputs=[x], outputs=[y])
    return tape, y


VALUES = np.array([0.5, 1.0, -2.0, 3.0], np.float32)


def write_through_numpy_after(x, src):
    x.numpy()[1] = 10.0


def write_through_asarray(x, src):
    np.asarray(x)[2] = 10.0


def write_through_a_view_taken_before(x, src):
    view = x.__dict__.setdefault("_test_view", None)
    view[0] = 10.0


def write_the_shared_numpy_array(x, src):
    src[3] = 10.0


def write_through_dlpack(x, src):
    np.from_dlpack(x)[1] = 10.0


def write_a_slice_view(x, src):
    x[1:].numpy()[0] = 10.0


WRITES = {f.__name__: f for f in (write_through_numpy_after, write_through_asarray,
                                   write_through_a_view_taken_before,
                                   write_the_shared_numpy_array, write_through_dlpack,
                                   write_a_slice_view)}


@pytest.mark.parametrize("how", list(WRITES))
@pytest.mark.cpu_only("host memory views")
def test_a_write_through_an_export_between_record_and_backward_is_refused(backend, how):
    src = VALUES.copy()
    x = kl.from_numpy(src, requires_grad=True) if how == "write_the_shared_numpy_array" \
        else kl.array(src, dtype=float, requires_grad=True)
    if how == "write_through_a_view_taken_before":
        x.__dict__["_test_view"] = x.numpy()
    tape, y = recorded_square(x)
    WRITES[how](x, src)
    with pytest.raises(GradientError, match="array 'x' was modified.*'square'"):
        tape.backward(grads={y: kl.ones(4, dtype=float)})
    assert not x.grad.numpy().any()  # refused before any gradient was touched


@pytest.mark.cpu_only("host memory views")
def test_reading_exports_and_no_writes_keep_the_gradient(backend):
    src = VALUES.copy()
    x = kl.from_numpy(src, requires_grad=True)  # exported from the start: checksummed
    tape, y = recorded_square(x)
    assert np.asarray(x).sum() == pytest.approx(VALUES.sum())  # read, not written
    src[...] = VALUES  # the same values written back: nothing changed
    tape.backward(grads={y: kl.ones(4, dtype=float)})
    np.testing.assert_allclose(x.grad.numpy(), 2.0 * VALUES)  # d(x^2)/dx


def taped_run(seed: int, barrier, results, errors):
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-2.0, 2.0, 64).astype(np.float32)
    scale = float(seed % 7 + 1)
    x = kl.array(xs, dtype=float, requires_grad=True)
    y = kl.zeros(64, dtype=float, requires_grad=True)
    try:
        with kl.Tape() as tape:
            barrier.wait()  # every thread records at the same time
            for _ in range(3):
                kl.launch(scaled_square, 64, inputs=[x, scale], outputs=[y])
            barrier.wait()
        tape.backward(grads={y: kl.ones(64, dtype=float)})
        # only this thread's launch may be on its tape: three records of its own
        results[seed] = (len(tape.launches), x.grad.numpy().astype(np.float64),
                         2.0 * scale * xs.astype(np.float64))
    except Exception as exc:  # reported by the main thread
        errors.append(repr(exc))
        barrier.abort()


def test_tapes_on_different_threads_record_only_their_own_launches():
    n_threads, rounds = 8, 5
    scaled_square.compiled(kl.config.cpu_backend)  # compiled once, before the threads race
    scaled_square.compiled(kl.config.cpu_backend, adjoint=True)
    for r in range(rounds):
        barrier, results, errors = threading.Barrier(n_threads), {}, []
        threads = [threading.Thread(target=taped_run,
                                    args=(r * n_threads + k, barrier, results, errors))
                   for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert not errors, errors[0]
        assert len(results) == n_threads, f"round {r}: {len(results)} threads finished"
        for count, grad, expected in results.values():
            # each of the three launches overwrites y, whose gradient the first adjoint
            # consumes: the input gradient is that of one launch
            assert count == 3
            np.testing.assert_allclose(grad, expected, rtol=1e-6)


def test_a_tape_is_per_asyncio_task():
    async def task(seed):
        xs = np.arange(1, 5, dtype=np.float32) * seed
        x = kl.array(xs, dtype=float, requires_grad=True)
        y = kl.zeros(4, dtype=float, requires_grad=True)
        with kl.Tape() as tape:
            await asyncio.sleep(0)  # the other task records meanwhile
            kl.launch(square, 4, inputs=[x], outputs=[y])
            await asyncio.sleep(0)
        tape.backward(grads={y: kl.ones(4, dtype=float)})
        return len(tape.launches), x.grad.numpy(), 2.0 * xs

    async def main():
        return await asyncio.gather(task(1), task(3))

    for count, grad, expected in asyncio.run(main()):
        assert count == 1
        np.testing.assert_allclose(grad, expected)


def test_a_tape_still_refuses_to_nest_within_one_thread():
    with kl.Tape():
        with pytest.raises(RuntimeError, match="already recording"):
            with kl.Tape():
                pass
    with kl.Tape() as tape:  # and recording works again afterwards
        kl.launch(square, 4, inputs=[kl.array(VALUES, dtype=float)],
                  outputs=[kl.zeros(4, dtype=float)])
    assert len(tape.launches) == 1


FRESH = ("import kernlab as kl\n"
         "@kl.kernel\n"
         "def fresh_{k}(x: kl.array(dtype=float), y: kl.array(dtype=float)):\n"
         "    i = kl.tid()\n"
         "    y[i] = {s} * x[i] * x[i]\n")


def first_launch(kernel, scale, seed, barrier, results, errors):
    xs = np.random.default_rng(seed).uniform(-2.0, 2.0, 32).astype(np.float32)
    x = kl.array(xs, dtype=float, requires_grad=True)
    y = kl.zeros(32, dtype=float, requires_grad=True)
    try:
        with kl.Tape() as tape:
            barrier.wait()  # every thread compiles the kernel on its first launch, at once
            kl.launch(kernel, 32, inputs=[x], outputs=[y])
        barrier.wait()  # ... and its adjoint in backward(), at once
        tape.backward(grads={y: kl.ones(32, dtype=float)})
        results[seed] = (y.numpy().astype(np.float64), x.grad.numpy().astype(np.float64),
                         xs.astype(np.float64))
    except Exception as exc:  # reported by the main thread
        errors.append(f"{type(exc).__name__}: {exc}")
        barrier.abort()


@pytest.mark.cpu_only("CPU compiles")
def test_threads_first_launching_one_fresh_kernel_at_once_agree(tmp_path, monkeypatch,
                                                                 backend):
    """Eight threads launch a kernel none has compiled yet, each under its own tape: the
    front end, the adjoint transform, the IR printer (the cache key) and the backend run
    on all of them at once."""
    import sys
    monkeypatch.setattr(kl.config, "cache_dir", str(tmp_path / "cache"))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # switch threads often, to make a race likely
    try:
        n_threads = 8
        for r in range(3):
            scale = 1.5 + r
            path = tmp_path / f"fresh_{backend}_{r}.py"
            path.write_text(FRESH.format(k=r, s=scale))
            namespace = {}
            exec(compile(path.read_text(), str(path), "exec"), namespace)
            kernel = namespace[f"fresh_{r}"]
            barrier, results, errors = threading.Barrier(n_threads), {}, []
            threads = [threading.Thread(target=first_launch,
                                        args=(kernel, scale, 100 * r + k, barrier, results,
                                              errors)) for k in range(n_threads)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)
            assert not errors, errors[0]
            assert len(results) == n_threads
            for y, grad, xs in results.values():
                np.testing.assert_allclose(y, scale * xs * xs, rtol=1e-6)
                np.testing.assert_allclose(grad, 2.0 * scale * xs, rtol=1e-6)
    finally:
        sys.setswitchinterval(old)
