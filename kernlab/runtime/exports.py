"""Which array memory code outside kernlab can write, and checksums of it for the tape.

kernlab counts its own writes (launches, ``assign``, ``fill_``, slices: the version counter),
but a NumPy view from ``a.numpy()`` / ``np.asarray(a)``, a DLPack or torch tensor, or the
NumPy array an array was made from without a copy can change the memory behind its back. Such
memory is *exported*: kept here per memory root (the NumPy array or device buffer that owns
it).

The tape uses this to notice writes between recording and ``backward()`` at no cost in the
common case: an array a recorded kernel reads gets a checksum (CRC-32 of its bytes) only if
its memory is exported — at record time if it already is, else at the moment it first is
(before anyone can write through the export). ``backward()`` compares the checksums.
"""
from __future__ import annotations

import weakref
import zlib

import numpy as np

from . import storage
from .array_convert import _Interface


class _Root:
    __slots__ = ("ref", "exported", "watchers", "__weakref__")

    def __init__(self, ref):
        self.ref, self.exported, self.watchers = ref, False, []


_ROOTS: dict = {}  # id(root object) -> _Root


def root_of(data):
    """The object that owns the memory of a storage: the NumPy array at the end of the view
    chain (through kernlab's restrided views), or a GPU array's buffer."""
    if isinstance(data, np.ndarray):
        while True:
            base = data.base
            if isinstance(base, np.ndarray):
                data = base
            elif isinstance(base, _Interface) and isinstance(getattr(base, "keep", None),
                                                             np.ndarray):
                data = base.keep
            else:
                return data
    return getattr(data, "buffer", data)


def _entry(root, create: bool):
    key = id(root)
    entry = _ROOTS.get(key)
    if entry is not None and entry.ref() is root:
        return entry
    if not create:
        return None
    try:
        ref = weakref.ref(root, lambda _r, key=key: _forget(key, _r))
    except TypeError:  # cannot be watched: treat it as exported forever
        ref = (lambda root=root: root)
    entry = _ROOTS[key] = _Root(ref)
    return entry


def _forget(key, ref):
    entry = _ROOTS.get(key)
    if entry is not None and entry.ref is ref:
        del _ROOTS[key]


def mark_exported(data) -> None:
    """Code outside kernlab may now write ``data``'s memory (a storage)."""
    if data is None:
        return
    entry = _entry(root_of(data), create=True)
    if entry.exported:
        return
    entry.exported = True
    watchers, entry.watchers = entry.watchers, []
    for w in watchers:  # checksums of recorded reads, before anyone can write
        callback = w()
        if callback is not None:
            callback()


def is_exported(data) -> bool:
    entry = _entry(root_of(data), create=False)
    return entry is not None and entry.exported


def watch(data, callback) -> None:
    """Call ``callback()`` when ``data``'s memory is first exported (``callback`` is held
    weakly: a bound method of a record that is gone is dropped)."""
    entry = _entry(root_of(data), create=True)
    entry.watchers.append(weakref.WeakMethod(callback) if hasattr(callback, "__self__")
                          else weakref.ref(callback))


_CHUNK = 1 << 22  # bytes per CRC-32 computed on one thread
_POOL = []


def _pool():
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor
        from .. import config
        _POOL.append(ThreadPoolExecutor(max(1, int(config.num_threads or 1)),
                                        thread_name_prefix="kernlab-checksum"))
    return _POOL[0]


def checksum(data) -> int:
    """A CRC-32 of the bytes of a storage's elements (in C order): of the whole for small
    arrays, else of the CRC-32s of 4 MB chunks, computed on several threads (zlib lets go of
    the GIL)."""
    host = np.ascontiguousarray(storage.to_host(data))
    if host.size == 0:
        return 0
    raw = host.reshape(-1).view(np.uint8)
    if raw.size <= 2 * _CHUNK:
        return zlib.crc32(raw)
    chunks = [raw[k:k + _CHUNK] for k in range(0, raw.size, _CHUNK)]
    crcs = list(_pool().map(zlib.crc32, chunks))
    return zlib.crc32(np.array(crcs, np.uint32).view(np.uint8))
