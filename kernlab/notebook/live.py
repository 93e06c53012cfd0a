"""Views that refresh themselves after every ``Tape.backward``.

The registry holds weak references only: a view that is closed or dropped is forgotten.
The hook is installed into ``kernlab.runtime.tape._BACKWARD_HOOKS`` when the first view
registers; a view whose refresh fails warns and never breaks the backward pass.
"""
from __future__ import annotations

import warnings
import weakref

_LIVE: "weakref.WeakSet" = weakref.WeakSet()


def register(view) -> None:
    from ..runtime import tape

    if _on_backward not in tape._BACKWARD_HOOKS:
        tape._BACKWARD_HOOKS.append(_on_backward)
    _LIVE.add(view)


def unregister(view) -> None:
    _LIVE.discard(view)


def live_views() -> list:
    return list(_LIVE)


def _on_backward(tape) -> None:
    for view in list(_LIVE):
        try:
            view.refresh()
        except Exception as exc:  # noqa: BLE001 - a display must not break backward()
            warnings.warn(f"kernlab: could not refresh {view!r}: {exc}", stacklevel=2)
