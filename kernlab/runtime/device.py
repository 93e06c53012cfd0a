"""Devices: "cpu" always, "cuda:N" when a CUDA driver and a GPU are present.

A Device compares equal to its name, so ``a.device == "cpu"`` and ``a.device == "cuda:0"``
read naturally; ``"cuda"`` names the default CUDA device, cuda:0.
"""
from __future__ import annotations

import sys


class Device:
    """A place where arrays live and kernels run. Use get_device() rather than Device()."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = _canonical_name(name)

    @property
    def is_cpu(self) -> bool:
        return self.name == "cpu"

    @property
    def is_cuda(self) -> bool:
        return self.name.startswith("cuda:")

    @property
    def alias(self) -> str:
        """The name Warp code passes around ("cpu", "cuda:0"); the same as ``str(device)``."""
        return self.name

    @property
    def ordinal(self) -> int:
        """The CUDA device number; -1 for the CPU (as in Warp)."""
        return int(self.name[5:]) if self.is_cuda else -1

    @property
    def free_memory(self) -> int:
        """Bytes of memory available for new arrays (host memory for the CPU)."""
        if self.is_cpu:
            import os
            return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        free = getattr(_driver(), "mem_get_info", None)
        return int(free(self.ordinal)[0]) if free is not None else 0

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Device({self.name!r})"

    def __eq__(self, other) -> bool:
        if isinstance(other, Device):
            return self.name == other.name
        if isinstance(other, str):
            try:
                return self.name == _canonical_name(other)
            except ValueError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        # Same hash as the canonical name, so a dict keyed by Device finds "cpu" too.
        return hash(self.name)


def _canonical_name(ident: str) -> str:
    """'cpu' -> 'cpu', 'cuda' -> 'cuda:0', 'cuda:N' -> 'cuda:N'; anything else is an error."""
    name = ident.strip().lower()
    if name == "cpu":
        return "cpu"
    if name == "cuda":
        return "cuda:0"
    if name.startswith("cuda:") and name[5:].isdigit():
        return f"cuda:{int(name[5:])}"
    raise ValueError(f"unknown device {ident!r}: expected 'cpu', 'cuda' or 'cuda:N'")


# --- CUDA discovery -----------------------------------------------------------------------
# The CUDA driver module answers (kernlab.backends.cuda.driver): it loads the bindings and
# libcuda on first use, caches the answer and never raises, so `import kernlab` works on
# machines without either.

def _driver():
    from ..backends.cuda import driver
    return driver


def is_cuda_available() -> bool:
    """True when at least one CUDA GPU can be used. The answer is cached."""
    return _driver().is_available()


def is_cpu_available() -> bool:
    """True: kernlab always runs kernels on the CPU (Warp's may be built without it)."""
    return True


def is_cubql_available() -> bool:
    """False: kernlab builds its BVHs itself (kl.Mesh), never with NVIDIA's cuBQL."""
    return False


def get_cuda_device_count() -> int:
    return _driver().device_count()


class DeviceUnavailableError(RuntimeError, ValueError):
    """A CUDA device was asked for that this machine does not have. A RuntimeError, as in
    Warp; also a ValueError, which kernlab raised for unusable device names before."""


# --- Looking devices up -------------------------------------------------------------------

_CPU = Device("cpu")
_devices: dict[str, Device] = {"cpu": _CPU}
_default: list[Device] = [_CPU]  # kl.set_device / kl.ScopedDevice change it


def get_device(ident: Device | str | None = None) -> Device:
    """The Device named by ident: None gives the default device (the CPU unless
    kl.set_device or kl.ScopedDevice chose another), and a Device is returned as it is.
    "cuda" is the default device when that is a GPU, else cuda:0 (Warp's alias). Unknown
    names raise ValueError; CUDA devices that are not present DeviceUnavailableError."""
    if ident is None:
        return _default[-1]
    if isinstance(ident, Device):
        return ident
    if not isinstance(ident, str):
        raise TypeError(f"a device is a name such as 'cpu' or 'cuda:0', not {ident!r}")
    name = _canonical_name(ident)
    if ident.strip().lower() == "cuda" and _default[-1].is_cuda:
        return _default[-1]
    device = _devices.get(name)
    if device is None:
        count = get_cuda_device_count()
        if count == 0:
            raise DeviceUnavailableError(f"no CUDA device: {ident!r} is not available "
                                         f"({_driver().why_unavailable()})")
        if int(name[5:]) >= count:
            raise DeviceUnavailableError(
                f"no CUDA device {ident!r}: it is not available, this machine has {count} "
                f"CUDA device{'s' if count != 1 else ''}")
        device = _devices[name] = Device(name)
    return device


def get_devices() -> list[Device]:
    """Every usable device: the CPU first, then each CUDA GPU."""
    return [_CPU] + [get_device(f"cuda:{i}") for i in range(get_cuda_device_count())]


def set_device(ident: Device | str | None) -> None:
    """Make ident the default device: where arrays are made and kernels launched when no
    device is given (as wp.set_device)."""
    _default[-1] = get_device(ident)


class ScopedDevice:
    """``with kl.ScopedDevice("cuda:1"):`` — the default device for the block (as
    wp.ScopedDevice); ``as`` gives the Device."""

    def __init__(self, device: Device | str | None):
        self.device = get_device(device)

    def __enter__(self) -> Device:
        _default.append(self.device)
        return self.device

    def __exit__(self, *exc) -> None:
        _default.pop()


class ScopedStream:
    """``with kl.ScopedStream(None):`` — Warp's stream scope. kernlab runs each device's work
    in order on one stream and has no stream objects, so the one stream it accepts is None
    (Warp's "no stream change", what Warp code passes for CPU work); the block then runs
    as it would without the scope. Any other value is an error, not silently ignored."""

    def __init__(self, stream, sync_enter: bool = True, sync_exit: bool = False):
        if stream is not None:
            raise ValueError(f"kl.ScopedStream: kernlab has no CUDA streams (each device's "
                             f"work runs in order on one), so only None can be given, not "
                             f"{stream!r}")
        self.stream = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None


def synchronize() -> None:
    """Wait for all outstanding work on every device. CPU launches finish before they
    return; on GPUs kernlab has used, this synchronises their contexts. A process that
    never loaded the CUDA driver module has no GPU work (and need not import the CUDA
    backend here: 10-30 ms, most of it in a first launch's kl.synchronize())."""
    driver = sys.modules.get(_DRIVER_MODULE)
    if driver is not None:
        driver.synchronize_all()


_DRIVER_MODULE = __name__.rsplit(".", 2)[0] + ".backends.cuda.driver"


def synchronize_device(device: Device | str | None = None) -> None:
    """Wait for the outstanding work on one device (the name is checked)."""
    dev = get_device(device)
    if dev.is_cuda and _driver().is_initialised(dev.ordinal):
        _driver().synchronize(dev.ordinal)


def init() -> None:
    """Kept for Warp programs, which call wp.init(); kernlab initialises lazily."""
