"""The ``%%kernel`` cell magic: a notebook cell of kernels, compiled when the cell runs.

    %load_ext kernlab

    %%kernel --show ir
    def saxpy(x: array(dtype=float32), y: array(dtype=float32), a: float32):
        i = tid()
        y[i] = a * x[i] + y[i]

Every top-level ``def`` becomes a kernel unless it is decorated (``@func``,
``@func_grad(f)``, ``@kernel(...)`` or anything else is kept as written). kernlab's names
work bare and as ``kl.*``; the notebook's names (constants, funcs) resolve too. The cell
runs in a namespace layered over the notebook's — kernlab's names below, the notebook's
above — and what it defines (kernels, funcs, constants) lands in the notebook. Its source is
registered with IPython's compile cache, so errors, tracebacks and ``inspect`` show the
cell's own line numbers. Kernels compile eagerly (IR, adjoint IR, machine code for the
device): a compile error fails the cell, shown as the user's line with a caret.
"""
from __future__ import annotations

import ast
import builtins
import time
import types
from dataclasses import dataclass, field

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .. import config
from ..errors import KernelError
from ..kernel import Func, Kernel
from . import cellerrors
from .display import RichRepr, escape, get_listing, html_table

SHOW_CHOICES = ("ir", "adjoint", "llvm", "cuda", "ptx")
_DECORATOR = "__kernlab_cell_kernel__"


def load_ipython_extension(ipython):
    """``%load_ext kernlab``: registers ``%%kernel``. Imports nothing heavy (no LLVM, no
    widgets): those load when a cell first needs them."""
    ipython.register_magics(KernelMagics)
    cellerrors.install(ipython)  # kernlab's errors without internal frames, from any cell


class CellKernel(Kernel):
    """A kernel defined in a ``%%kernel`` cell; ``--backend`` pins how it runs on the CPU."""

    def compiled(self, backend: str, *args, **kwargs):
        pinned = self.options.get("backend")
        if pinned and backend in ("llvm", "interp"):
            backend = pinned
        return super().compiled(backend, *args, **kwargs)


@magics_class
class KernelMagics(Magics):
    @magic_arguments("%kernel")  # the usage line then reads %%kernel
    @argument("--device", "-d", default="cpu",
              help="compile for this device: cpu (default), cuda or cuda:N")
    @argument("--show", "-s", action="append", choices=SHOW_CHOICES, default=None,
              help="after compiling, display this listing of each kernel: the typed IR, "
                   "the adjoint's IR, LLVM IR, CUDA C or PTX (may be given more than once)")
    @argument("--no-bounds-check", action="store_true",
              help="compile without index checks (faster; an out-of-range index is then "
                   "undefined behaviour)")
    @argument("--backend", "-b", choices=("llvm", "interp"), default=None,
              help="how these kernels run on the CPU: llvm (machine code) or interp (the "
                   "NumPy reference interpreter; slow, exact, prints work). Default: "
                   "kl.config.cpu_backend")
    @argument("--no-adjoint", action="store_true",
              help="do not build the adjoint now (it is built on the first backward)")
    @argument("--lazy", action="store_true",
              help="do not compile now; kernels compile on their first launch")
    @argument("--quiet", "-q", action="store_true", help="display no summary")
    @cell_magic
    def kernel(self, line, cell):
        """Compile the functions in this cell as kernlab kernels and put them (and every
        other name the cell defines) into the notebook's namespace.

        Every top-level ``def`` becomes a kernel unless decorated: ``@func`` makes a func,
        ``@func_grad(f)`` a custom gradient, ``@kernel(...)`` a kernel with its own options.
        kernlab's names (tid, sin, vec3, array, float32, ...) work bare and as kl.*.
        A compile error fails the cell and shows the offending line of the cell.
        """
        args = parse_argstring(self.kernel, line)
        return run_kernel_cell(self.shell, line, cell, args)


# ---- running a cell ------------------------------------------------------------------------

@dataclass
class Entry:
    """One function the cell defined."""

    name: str
    kind: str            # "kernel" or "func"
    signature: str
    status: str = ""     # how its machine code was obtained
    seconds: float = 0.0
    notes: list = field(default_factory=list)


def run_kernel_cell(shell, line: str, cell: str, args):
    device = _device(args.device)
    backend = None if not device.is_cpu else (args.backend or config.cpu_backend)
    options = {"bounds_check": False} if args.no_bounds_check else {}
    if args.backend:
        options["backend"] = args.backend
    text = f"%%kernel {line}".rstrip() + "\n" + cell
    filename = shell.compile.cache(text, _cell_number(shell), raw_code=text)
    # The magic's line is blank in the parsed text, so the AST's line numbers are the cell's.
    try:
        tree = ast.parse("\n" + cell, filename=filename)
    except SyntaxError as exc:
        raise cellerrors.CellSyntaxError.from_syntax_error(exc, filename) from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    for node in defs:
        if not node.decorator_list:
            node.decorator_list = [_decorator_name(node)]

    namespace, extra = layered_namespace(shell.user_ns)
    before = dict(namespace)
    namespace[_DECORATOR] = lambda pyfunc: CellKernel(pyfunc, extra, options)
    try:
        exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - the user's cell
        for k in [k for k in extra if namespace.get(k, extra[k]) is not extra[k]]:
            del extra[k]  # the cell rebound a kernlab name: its binding wins
        for node in defs:
            obj = namespace.get(node.name)
            if isinstance(obj, Kernel) and _defined_in(obj, filename) \
                    and not isinstance(obj, CellKernel):
                namespace[node.name] = obj = CellKernel(obj.pyfunc, extra,
                                                        {**options, **obj.options})
        entries = [_entry(namespace[n.name], n) for n in defs
                   if isinstance(namespace.get(n.name), (Kernel, Func))]
        start = time.perf_counter()
        if not args.lazy:
            for entry in entries:
                _compile(namespace[entry.name], entry, device, backend, args)
        elapsed = time.perf_counter() - start
    except KernelError as err:
        _user_facing(shell, err)
        raise
    # Only a cell that compiled defines anything: a failed cell leaves the notebook as it was.
    for key, value in namespace.items():
        if key != _DECORATOR and (key not in before or before[key] is not value):
            shell.user_ns[key] = value
    summary = CellSummary(entries, str(device), backend or "cuda", elapsed, args.lazy)
    for target in args.show or ():
        from IPython.display import display
        for entry in entries:
            if entry.kind == "kernel":
                adjoint = target == "adjoint"
                display(get_listing(namespace[entry.name], "ir" if adjoint else target,
                                    adjoint))
    return None if args.quiet else summary


def _cell_number(shell) -> int:
    """The number IPython gave the cell running now: the last one it cached. (While a cell
    that stores history runs, ``shell.execution_count`` already holds the next number.)"""
    numbers = list(getattr(shell.compile, "_filename_map", {}).values())
    return numbers[-1] if numbers else shell.execution_count


def layered_namespace(user_ns: dict) -> tuple[dict, dict]:
    """The cell's globals: kernlab's names below the notebook's (a copy; what the cell
    defines is copied back). kernlab names that Python builtins also have (print, min,
    abs, ...) keep their Python meaning at the cell's top level. Also the kernels'
    ``extra_globals``: every kernlab name the notebook does not bind otherwise, so kernel
    bodies see kl.print, kl.min, ... bare."""
    names = kernel_language_names()
    namespace = {k: v for k, v in names.items() if not hasattr(builtins, k)}
    namespace.update(user_ns)
    extra = {k: v for k, v in names.items() if namespace.get(k, v) is v}
    return namespace, extra


def _device(name: str):
    from ..runtime.device import get_device
    try:
        return get_device(name)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"%%kernel --device: {exc}") from None


def _decorator_name(node: ast.FunctionDef) -> ast.Name:
    """Our decorator, placed on the def's own line so co_firstlineno stays the def's."""
    return ast.Name(_DECORATOR, ast.Load(), lineno=node.lineno, col_offset=node.col_offset,
                    end_lineno=node.lineno, end_col_offset=node.col_offset)


def _defined_in(k: Kernel, filename: str) -> bool:
    return getattr(k.pyfunc, "__code__", None) is not None \
        and k.pyfunc.__code__.co_filename == filename


def kernel_language_names() -> dict:
    """kernlab's public names (tid, sin, vec3, array, float32, launch, ...) and ``kl``."""
    import kernlab

    out = {k: v for k, v in vars(kernlab).items()
           if not k.startswith("_") and not isinstance(v, types.ModuleType)
           and k not in ("annotations", "load_ipython_extension")}
    out["kl"] = kernlab
    return out


def _entry(obj, node: ast.FunctionDef) -> Entry:
    if isinstance(obj, Kernel):
        return Entry(node.name, "kernel", f"{node.name}({ast.unparse(node.args)})")
    return Entry(node.name, "func", f"{node.name}({ast.unparse(node.args)})")


def _compile(obj, entry: Entry, device, backend, args):
    """Build the kernel's IR, adjoint and machine code now, so errors surface at the cell.
    A forward error raises; an adjoint that cannot be built is noted (the kernel may never
    be differentiated)."""
    if not isinstance(obj, Kernel):
        return
    t0 = time.perf_counter()
    ir = obj.ir
    entry.signature = f"{obj.key}(" + ", ".join(f"{p.name}: {p.type}" for p in ir.params) + ")"
    adjoint = not args.no_adjoint
    if adjoint:
        try:
            obj.adjoint_ir
        except KernelError as err:
            adjoint = False
            entry.notes.append(f"no adjoint: {err.message}")
    stats = _llvm_stats() if backend == "llvm" else None
    before = dict(stats) if stats is not None else None
    try:
        obj.compiled(backend or "cuda")
    except KernelError:
        raise
    except Exception as exc:  # e.g. no CUDA code generator in this build
        if backend is not None:
            raise
        raise UsageError(f"%%kernel: cannot compile '{obj.key}' for {device}: {exc}") from None
    if adjoint:
        try:
            obj.compiled(backend or "cuda", adjoint=True)
        except KernelError as err:
            entry.notes.append(f"adjoint not compiled: {err.message}")
    entry.seconds = time.perf_counter() - t0
    if backend == "interp":
        entry.status = "interpreter (no machine code)"
    elif stats is None or stats["compiled"] > before["compiled"]:
        entry.status = "compiled"
    elif stats.get("loaded", 0) > before.get("loaded", 0):
        entry.status = "cache hit (disk)"
    else:
        entry.status = "cache hit (memory)"


def _llvm_stats():
    """The LLVM backend's counters of compiled and cache-loaded kernels (None if absent)."""
    try:
        from ..backends.llvm import variants as jit
    except ImportError:
        return None
    stats = getattr(jit, "stats", None)
    return stats if isinstance(stats, dict) and "compiled" in stats else None


def _user_facing(shell, err: KernelError):
    """Show a KernelError as its message alone (it already holds the user's line and a
    caret), without the magic's and the compiler's frames; name the cell like IPython.
    (IPython uses this where the handler ``cellerrors.install`` sets is not in place.)"""
    err._render_traceback_ = lambda: cellerrors.render(shell, err)


# ---- the summary -----------------------------------------------------------------------------

class CellSummary(RichRepr):
    """What a ``%%kernel`` cell compiled. text/plain is deterministic (no timings), so
    saved outputs compare equal across runs; text/html adds compile time and cache use."""

    def __init__(self, entries, device: str, backend: str, seconds: float, lazy: bool):
        self.entries = entries
        self.device = device
        self.backend = backend
        self.seconds = seconds
        self.lazy = lazy

    @property
    def kernels(self) -> list[str]:
        return [e.name for e in self.entries if e.kind == "kernel"]

    @property
    def cache_hit(self) -> bool:
        compiled = [e for e in self.entries if e.kind == "kernel" and e.status]
        return bool(compiled) and all(e.status.startswith("cache hit") for e in compiled)

    def _where(self) -> str:
        return f"{self.device} ({self.backend})" if self.device == "cpu" else self.device

    def _text(self) -> str:
        n = len(self.kernels)
        head = f"%%kernel: {n} kernel{'s' if n != 1 else ''} for {self._where()}"
        if self.lazy:
            head += ", compiled on first launch"
        lines = [head] + [f"  {e.kind} {e.signature}" for e in self.entries]
        lines += [f"    {e.name}: {note}" for e in self.entries for note in e.notes]
        return "\n".join(lines)

    def _html(self) -> str:
        rows = [(e.kind, e.signature, e.status or "-",
                 f"{e.seconds * 1e3:.1f} ms" if e.status else "-") for e in self.entries]
        if self.lazy:
            cache = "not compiled yet"
        elif self.backend == "interp" or not self.kernels:
            cache = "-"
        else:
            cache = "hit" if self.cache_hit else "miss"
        head = (f"<div><b>%%kernel</b> · device <code>{escape(self._where())}</code> · "
                f"compile {self.seconds * 1e3:.1f} ms · cache {escape(cache)}</div>")
        notes = "".join(f"<div style='color: #a60'>{escape(e.name)}: {escape(n)}</div>"
                        for e in self.entries for n in e.notes)
        return "<div>" + head + html_table(["", "signature", "code", "time"], rows) + notes \
            + "</div>"
