"""The short path of a small adjoint launch on the CPU (issue 20): launch_short.py's
treatment of the forward, for kl.launch(..., adjoint=True) and launch._run (recorded
adjoint launches, a tape's backward). It reuses that module's argument kinds, plan
keys, deferred compilation and native call; what differs is the plan, made per arrays,
thread count and retained gradients, which also picks the adjoint variant and its entry.
"""
from __future__ import annotations

import ctypes
import struct

from .. import config
from .array import array
from .device import _CPU
from .launch_short import (_CLEAN, _FLOATS, _INTS, PLANS_KEPT, ShortPath, _call, describe,
                           param_kinds)

_NULL = (None, 0, None)  # the key of an absent gradient array (a None adjoint argument)
_NUMBERS = _INTS | _FLOATS


class AdjointShortPath:
    """A kernel's short path for small adjoint launches on the CPU (issue 20): the treatment
    ShortPath gives the forward. ``run(total, args, retain)`` takes what launch._run takes
    (the primal arguments, then one adjoint per parameter; ``retain`` None: decided as
    launch._kept_gradients does), ``launch(total, inputs, outputs, adj_inputs,
    adj_outputs)`` what kl.launch(..., adjoint=True) takes. Either returns True when it ran
    the launch (or raised the kernel's own error), False to take the general path, which
    checks, converts and reports errors as it always did.

    Per launch (code written for the kernel's parameters, see adjoint_source): each array's
    key (``array._described``), each scalar's type and range, the settings unchanged, the
    gradients retained (launch._kept_gradients' rule, on the arrays' own attributes); then
    a plan per (keys, thread count, retained gradients), made once (``find``): which
    adjoint variant runs (launch._gradients_overlap picks the atomic "shared" one from the
    arrays' spans, which the keys fix), its runner, the entry for the absent gradients and
    the privatised atomics (Runner.launch's choice, made once), the packed block, the
    parameters the variant writes and the call (ShortPath's native call, or ctypes). The
    scalars are packed at every launch. The latest plan waits in a list, the others in a
    dict; a launch takes its plan out, so two threads never share a block."""

    __slots__ = ("kernel", "state", "changes", "run", "launch")

    @classmethod
    def make(cls, kernel):
        """The adjoint short path of ``kernel``; None under another backend, False where it
        has none (vector, bool or struct parameters, handles, launches over several dims)."""
        if config.cpu_backend != "llvm":
            return None
        from ..autodiff.inplace import plan as inplace_plan
        from ..backends.llvm import runner as jit
        from .launch import _gradients_overlap, _kept_gradients, _read_params, written_params
        func = kernel.ir
        if getattr(func, "handle_hidden", None) \
                or getattr(func, "struct_signature", None) is not None or func.ndim > 1:
            return False
        kinds = param_kinds(kernel.adjoint_ir.params)
        if kinds is None:
            return False
        n = len(func.params)
        checked = frozenset(k for k in range(n, 2 * n) if kinds[k][0] == 0)
        keyed = [k for k in range(2 * n) if kinds[k][0] == 0]
        offsets = jit.layout_of(kernel.adjoint_ir).offsets
        q = cls()
        q.kernel = kernel
        q.state, q.changes = ShortPath.settings(kernel), config.changes
        plans, last, retains = {}, [], {}

        def find(old, keys, total, retain, args):
            """The plan for these keys, thread count and retained gradients, after ``old``
            (the latest one) went back to the dict; None where the general path must run
            the launch (an array that does not fit its parameter, an adjoint of another
            shape, a null primal array, a variant that writes other arrays or needs the
            pool)."""
            if old[0] is not None:
                if len(plans) >= PLANS_KEPT:
                    plans.clear()
                plans[(*(id(old[8 + k]) for k in keyed), old[2], old[5])] = old
            plan = plans.pop((*(id(keys[k]) for k in keyed), total, retain), None)
            if plan is not None:
                return plan
            for k, ((kind, dtype, ndim), key) in enumerate(zip(kinds, keys)):
                if kind == 0 and (key is _NULL if k < n else key is not _NULL and (
                        key[0] is not dtype or key[1] != ndim or key[2] is not _CPU
                        or keys[k - n] is not _NULL
                        and key[4:4 + ndim] != keys[k - n][4:4 + ndim])):
                    return None
            variant = kernel.adjoint_variant(retain)
            shared = bool(variant.owned) and _gradients_overlap(variant, args)
            if shared:
                variant = kernel.adjoint_variant(retain, shared=True)
            runner = kernel.compiled("llvm", True, retain, shared=shared)
            written = tuple(k for k in written_params(variant) if keys[k] is not _NULL)
            if not isinstance(runner, jit.Runner) or runner.interruptible \
                    or not checked.issuperset(written):
                # (loops run off the main thread; a variant that writes a primal array):
                # this kernel's adjoints all take the general path from now on
                kernel._quick_adjoint = False
                return None
            layout = runner.layout
            if layout.offsets != offsets:  # every variant has the adjoint's parameters
                return None
            values = []
            for k, ((kind, _, ndim), key, p) in enumerate(zip(kinds, keys, variant.params)):
                if kind == 0:
                    values += key[3:] if key is not _NULL else \
                        [0] + [0] * ndim + [p.type.dtype.nbytes] * ndim
                else:
                    values.append(0)  # packed by the launch
            values += jit._grid((total,), runner._ndim)
            address = runner.entry.address
            if runner._optional or runner._private:  # Runner.launch's choice, made once
                which = (frozenset(k for k, at in runner._optional if not values[at]),
                         runner._privatised(values))
                entry = runner._fast_entries.get(which)
                if entry is None and which not in runner._fast_fns:  # else: runner.entry
                    entry = runner._fast_entries[which] = runner._load_fast(*which)
                    runner._fast_fns[which] = entry.cfunc
                if entry is not None:
                    address = entry.address
            buf = runner._block()
            layout.packer.pack_into(buf, 0, *values)
            # the plan holds the keys: their ids in PLANS stay theirs while it lives; a
            # scalar's place holds the value last packed
            plan = [None, buf, total, layout.status_offset, runner, retain, written, None,
                    *keys]
            plan[0] = _call(address, ctypes.CFUNCTYPE(None)(address), buf, int(total), plan,
                            tuple(args[k]._vbox for k in written))
            return plan

        def kept(mask, args):
            """The retained gradients as one frozenset object per set (a plan compares it by
            identity first); ``mask``: launch._kept_gradients' answer, one bit per array,
            None where the rule needs the arrays' addresses (it is asked then)."""
            if mask is None:
                mask = sum(1 << k for k in _kept_gradients(func, args))
            retain = retains.get(mask)
            if retain is None:
                retain = retains[mask] = frozenset(k for k in range(n) if mask >> k & 1)
            return retain
        names = {"describe": describe, "Q": q, "config": config,
                 "LAST": last, "NOPLAN": [None, None, -1, None, None, None, (), (),
                                          *([None] * (2 * n))],
                 "CLEAN": _CLEAN, "FIND": find, "KEPT": kept, "RETAINS": retains,
                 "INTS": _INTS, "NUMBERS": _NUMBERS,
                 "NULL": _NULL, "ARRAY": array, "KEY": kernel.key}
        for k, (kind, a, b) in enumerate(kinds):
            if kind:
                names[f"L{k}"], names[f"H{k}"] = a, b
                fmt = "<" + jit._scalar_format(kernel.adjoint_ir.params[k].type.scalar)
                names[f"S{k}"] = struct.Struct(fmt).pack_into
                names[f"O{k}"] = offsets[f"p{k}"]
        parts = (kinds, _read_params(func), inplace_plan(func).snapshot,
                 jit.PARALLEL_THRESHOLD)

        def build():  # on the first call of either (as ShortPath's _deferred, and why)
            text = adjoint_source(*parts)
            scope = dict(names)
            exec(compile(text, f"<kernlab short adjoint launch of {kernel.key}>", "exec"),
                 scope)
            q.run, q.launch = scope["run"], scope["launch"]

        def run(*args):
            build()
            return q.run(*args)

        def launch(*args):
            build()
            return q.launch(*args)
        q.run, q.launch = run, launch
        return q

    def still(self) -> bool:
        """As ShortPath.still, for this path."""
        if ShortPath.settings(self.kernel) != self.state:
            self.kernel._quick_adjoint = None
            return False
        self.changes = config.changes
        return True


def adjoint_source(kinds, read, snapshot, most) -> str:
    """The Python source of an AdjointShortPath's ``run`` and ``launch`` for the adjoint's
    parameters ``kinds`` (as ShortPath's source: the primal ones, then their adjoints),
    ``read``: the primal arrays the kernel loads from, ``snapshot``: those an adjoint by
    hand refuses while they hold what the forward launch wrote. A plan is ``[the call,
    block, thread count, status offset, runner, retained gradients, written parameters,
    None, one key per parameter (an array's, or the value last packed for a scalar)]``."""
    n2 = len(kinds)
    n = n2 // 2
    arrays = [k for k in range(n) if kinds[k][0] == 0]
    out = ["def run(total, args, retain):",
           f"    if not 0 < total < {most}:",
           "        return False",
           "    try:",
           f"        {''.join(f'a{k}, ' for k in range(n2))}= args"]
    out += [f"        d{k} = a{k}._described" for k in arrays]  # primal: arrays only
    out += [f"        d{k} = NULL if a{k} is None else a{k}._described"
            for k in range(n, n2) if kinds[k][0] == 0]
    out += ["    except (TypeError, ValueError, AttributeError):  # not arrays",
            "        return False"]
    for k in range(n2):
        kind = kinds[k][0]
        if kind == 0:
            out += [f"    if d{k} is None:",
                    f"        d{k} = describe(a{k})",
                    f"        if d{k} is None:",
                    "            return False"]
        else:
            accept = "INTS" if kind == 2 else "NUMBERS"
            out += [f"    if not (type(a{k}) in {accept} and L{k} <= a{k} <= H{k}):",
                    "        return False"]
    out += ["    if config.changes != Q.changes and not Q.still():", "        return False"]
    # launch._kept_gradients: an array's gradient is left in place when it has retain_grad,
    # or (the kernel does not read it) when its adjoint is not its own .grad
    out += ["    if retain is None:", "        mask = 0"]
    for k in arrays:
        g = f"a{n + k}"
        if k in read:
            out += [f"        if a{k}._retain_grad:", f"            mask |= {1 << k}"]
        else:
            out += [f"        if a{k}._retain_grad or {g} is None or a{k}._grad is None:",
                    f"            mask |= {1 << k}",
                    f"        elif {g} is not a{k}._grad:",
                    "            mask = -1  # their addresses decide: _kept_gradients"]
    out += ["        if mask < 0:",
            "            retain = KEPT(None, args)",
            "        else:",
            "            retain = RETAINS.get(mask)",
            "            if retain is None:",
            "                retain = KEPT(mask, args)"]
    keyed = [k for k in range(n2) if kinds[k][0] == 0]
    same = " or ".join([f"plan[{8 + k}] is not d{k}" for k in keyed]
                       + ["plan[2] != total", "plan[5] is not retain and plan[5] != retain"])
    keys = "".join(f"d{k}, " if kinds[k][0] == 0 else "None, " for k in range(n2))
    out += ["    try:",
            "        plan = LAST.pop()  # taken out: no other launch uses it meanwhile",
            "    except IndexError:",
            "        plan = NOPLAN",
            f"    if {same}:",
            f"        plan = FIND(plan, ({keys}), total, retain, args)",
            "        if plan is None:",
            "            return False",
            "    buf, written = plan[1], plan[6]",
            "    for k in written:  # launch._refuse_readonly refuses it, with its message",
            "        if not args[k]._data.flags.writeable:",
            "            LAST.append(plan)",
            "            return False"]
    for k in range(n2):  # as in ShortPath's run: a zero is packed every time (0.0 == -0.0)
        if kinds[k][0]:
            out += [f"    if a{k} != plan[{8 + k}] or not a{k}:",
                    f"        S{k}(buf, O{k}, a{k})",
                    f"        plan[{8 + k}] = a{k}"]
    out += ["    done = plan[0]()  # the native call counts the versions up (see ShortPath)",
            "    if done is None:  # the ctypes call: here, before any error (launch._run)",
            "        for k in written:",
            "            args[k]._vbox[0] += 1",
            "    if done is not CLEAN and buf[plan[3]] != b'\\0':",
            "        # an index out of bounds, or the fast entry declined: the general one",
            "        plan[4].settle(buf, [0, total], list(args))",
            "    LAST.append(plan)",
            "    return True",
            "",
            "def launch(total, inputs, outputs, adj_inputs, adj_outputs):",
            "    try:",
            f"        {''.join(f'a{k}, ' for k in range(n))}= [*inputs, *outputs] "
            "if outputs else inputs",
            "        if adj_inputs is None and adj_outputs is None:",
            f"            {''.join(f'a{k}, ' for k in range(n, n2))}= "
            f"{', '.join(['None'] * n)},",
            "        else:",
            "            n_in = len(inputs)",
            f"            {''.join(f'a{k}, ' for k in range(n, n2))}= "
            f"[*(adj_inputs or [None] * n_in), *(adj_outputs or [None] * ({n} - n_in))]",
            "    except (TypeError, ValueError):  # not as many as parameters",
            "        return False"]
    for k in range(n):
        g = f"a{n + k}"
        if kinds[k][0] == 0:  # None or 0 is the array's own gradient, as in Warp
            out += [f"    if type(a{k}) is not ARRAY:", "        return False",
                    f"    if {g} is None or type({g}) in NUMBERS and {g} == 0:",
                    f"        {g} = a{k}._grad",
                    f"    elif type({g}) is not ARRAY:", "        return False"]
        else:
            out += [f"    if {g} is None:", f"        {g} = 0"]
    for k in snapshot:  # autodiff.inplace.refuse_manual_adjoint refuses it, with its message
        out += [f"    if getattr(a{k}, '_overwritten_by', None) == (KEY, a{k}._vbox[0]):",
                "        return False"]
    out += [f"    return run(total, [{', '.join(f'a{k}' for k in range(n2))}], None)"]
    return "\n".join(out) + "\n"
