"""'Did you mean ...?' for a name a kernel uses that nothing defines.

A misspelt builtin (``kl.sine``, a bare ``sinn`` in a ``%%kernel`` cell) or local
(``totl`` for ``total``) gets the closest name that does exist, spelt as the user would
write it: a local or global bare, a kernlab builtin through the name the kernel's module
gave kernlab (``kl.sin``, ``wp.sin``), or ``kernlab.sin`` when it imported kernlab under
no name.
"""
from __future__ import annotations

import difflib
import types

# Python builtins the kernel language understands (range loops, casts, len of an array).
_PYTHON_NAMES = ("range", "len", "float", "int", "bool")
# How close a candidate must be (difflib's ratio): "sine" -> "sin" is 0.86, "lenght" ->
# "length" 0.83; unrelated short names ("foo" -> "floor", 0.5) stay unsuggested.
_CUTOFF = 0.75


def public_names(module) -> list[str]:
    return [n for n in dir(module) if not n.startswith("_")]


def _kernlab():
    import kernlab
    return kernlab


def _best(name: str, candidates) -> tuple[float, str] | None:
    found = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=_CUTOFF)
    if not found:
        return None
    return difflib.SequenceMatcher(None, name, found[0]).ratio(), found[0]


def _kernlab_alias(pyfunc, extra: dict | None) -> str:
    """The name the kernel's module (or the notebook) bound the kernlab package to."""
    kl = _kernlab()
    for space in (extra or {}, getattr(pyfunc, "__globals__", {})):
        for key, value in space.items():
            if value is kl and not key.startswith("_"):
                return key
    return "kernlab"


def hint_for_name(name: str, pyfunc, local_names, extra: dict | None = None) -> str:
    """'; did you mean ...?' for an undefined bare name, or '' when nothing is close."""
    visible = [n for n in local_names if isinstance(n, str)]
    visible += list(getattr(pyfunc, "__globals__", {})) + list(extra or {})
    visible += list(getattr(getattr(pyfunc, "__code__", None), "co_freevars", ()))
    visible += list(_PYTHON_NAMES)
    near = _best(name, [n for n in visible if not n.startswith("_")])
    far = _best(name, public_names(_kernlab()))
    if far is not None and (near is None or far[0] > near[0]):
        return f"; did you mean {_kernlab_alias(pyfunc, extra)}.{far[1]}?"
    if near is not None:
        return f"; did you mean '{near[1]}'?"
    return ""


def hint_for_attribute(base_text: str, module, attr: str) -> str:
    """'; did you mean kl.sin?' for a missing attribute of a module, or ''."""
    if not isinstance(module, types.ModuleType):
        return ""
    found = _best(attr, public_names(module))
    return f"; did you mean {base_text}.{found[1]}?" if found else ""
