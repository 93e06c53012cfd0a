"""Compile time stays near-linear in kernel length: bodies too large for LLVM's vectorisers to
pay (whose time grows superlinearly with the loop body) are compiled without them."""
import re

import numpy as np
import pytest

import kernlab as kl
from kernlab.backends.llvm import jit


def long_kernel(tmp_path, n: int):
    lines = ["import kernlab as kl", "@kl.kernel",
             "def long_kernel(x: kl.array(dtype=float), y: kl.array(dtype=float)):",
             "    i = kl.tid()", "    v = x[i]"]
    for k in range(n):
        lines.append("    " + ("v = v * 1.0001 + 0.5", "v = kl.sin(v) + v",
                              "v = v - 0.25 * v * v")[k % 3])
    lines.append("    y[i] = v")
    path = tmp_path / f"long_{n}.py"
    path.write_text("\n".join(lines) + "\n")
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["long_kernel"]


def reference(x: np.ndarray, n: int) -> np.ndarray:
    v = x.astype(np.float64)
    for k in range(n):
        v = (v * 1.0001 + 0.5, np.sin(v) + v, v - 0.25 * v * v)[k % 3]
    return v


VECTOR = re.compile(r"<\d+ x (float|double)>")


@pytest.mark.cpu_only("LLVM code generation")
def test_a_long_adjoint_is_compiled_without_the_vectorisers_and_stays_correct(tmp_path):
    n = 400
    kernel = long_kernel(tmp_path, n)
    assert jit._body_size(kernel.adjoint_ir) > jit.VECTORIZE_MAX_INSTRUCTIONS
    assert not VECTOR.search(kl.source(kernel, "llvm-opt", adjoint=True))
    x = kl.array(np.linspace(-0.5, 0.5, 64, dtype=np.float32), requires_grad=True)
    y = kl.zeros(64, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, 64, inputs=[x], outputs=[y])
    np.testing.assert_allclose(y.numpy(), reference(x.numpy(), n), rtol=2e-4)
    tape.backward(grads={y: kl.ones(64, dtype=float)})
    h = 1e-4  # float64 central differences of the reference
    fd = (reference(x.numpy() + h, n) - reference(x.numpy() - h, n)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=2e-3, atol=1e-3)


@pytest.mark.cpu_only("LLVM code generation")
def test_a_short_kernel_is_still_vectorised(tmp_path):
    kernel = long_kernel(tmp_path, 3)
    assert VECTOR.search(kl.source(kernel, "llvm-opt"))


@pytest.mark.cpu_only("LLVM code generation")
def test_a_huge_adjoint_gets_its_blocks_cut_and_stays_correct(tmp_path, monkeypatch):
    """Bodies past FAST_CODEGEN_MIN_INSTRUCTIONS get O0 code generation on blocks cut into
    pieces (one 25,000-instruction block took 3 s in LLVM's instruction selection). The
    thresholds are lowered here so that a 350-line kernel takes that path."""
    n = 350
    monkeypatch.setattr(jit, "FAST_CODEGEN_MIN_INSTRUCTIONS", 1000)
    monkeypatch.setattr(jit, "BLOCK_SPLIT_INSTRUCTIONS", 100)
    cut = []
    real = jit.split_long_blocks
    monkeypatch.setattr(jit, "split_long_blocks",
                        lambda text, limit: cut.append(real(text, limit)) or cut[-1])
    kernel = long_kernel(tmp_path, n)
    x = kl.array(np.linspace(-0.5, 0.5, 64, dtype=np.float32), requires_grad=True)
    y = kl.zeros(64, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(kernel, 64, inputs=[x], outputs=[y])
    tape.backward(grads={y: kl.ones(64, dtype=float)})
    assert cut and all(text.count("kl.piece.") >= 2 * 5 for text in cut)  # br + label each
    np.testing.assert_allclose(y.numpy(), reference(x.numpy(), n), rtol=2e-4)
    h = 1e-4  # float64 central differences of the reference
    fd = (reference(x.numpy() + h, n) - reference(x.numpy() - h, n)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=2e-3, atol=1e-3)


LOOP_IR = """
define i64 @sum(i64 %n) {
entry:
  %slot = alloca i64
  store i64 0, ptr %slot
  br label %body
body:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %acc = phi i64 [ 0, %entry ], [ %a{last}, %body ]
{chain}
  %next = add i64 %i, 1
  %more = icmp slt i64 %next, %n
  br i1 %more, label %body, label %exit
exit:
  %out = phi i64 [ %a{last}, %body ]
  ret i64 %out
}
"""


def test_split_long_blocks_keeps_phis_and_the_entry_block_right():
    import llvmlite.binding as llvm
    count = 50  # %a_k = %a_{k-1} + k: each pass through the loop adds 1 + 2 + ... + 50
    chain = "\n".join(f"  %a{k} = add i64 %{'acc' if k == 1 else f'a{k - 1}'}, {k}"
                      for k in range(1, count + 1))
    text = LOOP_IR.replace("{chain}", chain).replace("{last}", str(count))
    split = jit.split_long_blocks(text, 8)
    pieces = re.findall(r"^kl\.piece\.(\d+):", split, re.M)
    assert len(pieces) >= count // 8 - 1
    for block in re.split(r"^\S+:.*$", split, flags=re.M)[2:-1]:  # body and its pieces
        assert len([b for b in block.splitlines() if b.startswith("  ")]) <= 8 + 1
    entry = split[split.index("entry:"):split.index("body:")]
    assert "kl.piece" not in entry  # the entry block, with its alloca, is never cut
    last = f"kl.piece.{pieces[-1]}"
    # the phis that named %body as a predecessor now name its last piece
    assert f"[ %next, %{last} ]" in split and f"[ %a{count}, %{last} ]" in split
    assert "[ 0, %entry ]" in split
    jit._host()
    module = llvm.parse_assembly(split, context=llvm.create_context())
    module.verify()
    # an engine owns (and frees) its target machine: one of its own, not the backend's
    machine = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(jit=True)
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    import ctypes
    fn = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("sum"))
    per_iteration = count * (count + 1) // 2
    assert fn(7) == 7 * per_iteration


MIXED = """
import kernlab as kl
@kl.kernel
def mixed_{tag}(x: kl.array(dtype=float), w: kl.array(dtype=float),
                y: kl.array(dtype=float), total: kl.array(dtype=float)):
    i = kl.tid()
    v = x[i]
    acc = float(0.0)
    for k in range(4):
        acc = acc + w[k] * kl.sin(v * float(k + 1))
    if v > 0.0:
        acc = acc * v
    else:
        acc = acc - v * v
    y[i] = acc
    kl.atomic_add(total, 0, acc * acc)
"""


def mixed_reference(x: np.ndarray, w: np.ndarray):
    x, w = x.astype(np.float64), w.astype(np.float64)
    acc = sum(w[k] * np.sin(x * (k + 1)) for k in range(4))
    acc = np.where(x > 0.0, acc * x, acc - x * x)
    return acc, np.sum(acc * acc)


def run_mixed(tmp_path, tag: str):
    path = tmp_path / f"mixed_{tag}.py"
    path.write_text(MIXED.replace("{tag}", tag))
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    n = 96
    x = kl.array(np.linspace(-1.0, 1.0, n, dtype=np.float32), requires_grad=True)
    w = kl.array(np.array([0.5, -1.25, 2.0, 0.75], dtype=np.float32), requires_grad=True)
    y = kl.zeros(n, dtype=float, requires_grad=True)
    total = kl.zeros(1, dtype=float, requires_grad=True)
    with kl.Tape() as tape:
        kl.launch(namespace[f"mixed_{tag}"], n, inputs=[x, w], outputs=[y, total])
    tape.backward(grads={y: kl.ones(n, dtype=float), total: kl.ones(1, dtype=float)})
    return [a.numpy().copy() for a in (x, w, y, total, x.grad, w.grad)]


@pytest.mark.cpu_only("LLVM code generation")
def test_the_short_pipeline_of_huge_bodies_gives_o2s_bits(tmp_path, monkeypatch):
    """Bodies past SHORT_PIPELINE_MIN_INSTRUCTIONS are optimised by a few passes instead of
    O2. The threshold is lowered here so that a small kernel with a loop, a branch and an
    atomic takes that path: its values and gradients match NumPy and finite differences,
    and are bit for bit those of the same kernel compiled at O2."""
    ran = []
    real = jit._short_pipeline
    monkeypatch.setattr(jit, "_short_pipeline", lambda *a, **k: ran.append(1) or real(*a, **k))
    o2 = run_mixed(tmp_path, "o2")
    assert not ran
    monkeypatch.setattr(jit, "SHORT_PIPELINE_MIN_INSTRUCTIONS", 0)
    short = run_mixed(tmp_path, "short")  # (another name: not the O2 code from the cache)
    assert len(ran) >= 2  # the kernel and its adjoint
    x, w, y, total, x_grad, w_grad = short
    want_y, want_total = mixed_reference(x, w)
    np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total[0], want_total, rtol=1e-5)

    def loss(x, w):
        acc, tot = mixed_reference(x, w)
        return np.sum(acc) + tot

    h = 1e-6  # float64 central differences
    fd_x = np.array([(loss(x + h * e, w) - loss(x - h * e, w)) / (2 * h)
                     for e in np.eye(len(x))])
    fd_w = np.array([(loss(x, w + h * e) - loss(x, w - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(x_grad, fd_x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(w_grad, fd_w, rtol=1e-4, atol=1e-3)
    for a, b in zip(o2, short):  # (96 threads run inline, in order: atomics included)
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.cpu_only("LLVM code generation")
@pytest.mark.parametrize("loader", ["kernlab", "llvm"])
def test_the_huge_body_path_gives_o2s_bits(tmp_path, monkeypatch, loader):
    """With both thresholds lowered, a small kernel (a loop, a branch, sin, an atomic) and its
    adjoint take the whole path of huge bodies: blocks cut in the lowered text, llvm.sin
    called as sinf, SROA alone, O0 code generation (small code model, position-independent,
    where kernlab's loader places it; MCJIT placing the same object too). Values and
    gradients are bit for bit those of the same kernel compiled at O2."""
    from kernlab.backends.llvm import variants
    o2 = run_mixed(tmp_path, f"o2_{loader}")
    texts = []
    real = jit.fast_codegen_text
    monkeypatch.setattr(jit, "fast_codegen_text", lambda t: texts.append(real(t)) or texts[-1])
    monkeypatch.setattr(jit, "SHORT_PIPELINE_MIN_INSTRUCTIONS", 0)
    monkeypatch.setattr(jit, "FAST_CODEGEN_MIN_INSTRUCTIONS", 0)
    monkeypatch.setattr(jit, "BLOCK_SPLIT_INSTRUCTIONS", 4)
    monkeypatch.setattr(variants, "OWN_LOADER", loader == "kernlab")
    huge = run_mixed(tmp_path, f"huge_{loader}")
    assert len(texts) >= 2  # the kernel and its adjoint
    for text in texts:
        assert "kl.piece." in text and "llvm.sin" not in text and '@"sinf"(' in text
    for a, b in zip(o2, huge):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_fast_codegen_text_keeps_a_declared_c_function():
    """Where the module declares sinf itself, llvm.sin.f32 stays (a second declaration of
    sinf would not parse); llvm.cos.f64 becomes cos."""
    text = ('declare float @"sinf"(float)\ndeclare float @"llvm.sin.f32"(float)\n'
            'declare double @"llvm.cos.f64"(double)\n')
    out = jit.fast_codegen_text(text)
    assert '@"llvm.sin.f32"(' in out and '@"cos"(' in out and "llvm.cos" not in out
