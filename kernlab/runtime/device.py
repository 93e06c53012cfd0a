"""Devices: "cpu" always, "cuda:N" when a CUDA driver and a GPU are present.

A Device compares equal to its name, so ``a.device == "cpu"`` and ``a.device == "cuda:0"``
read naturally; ``"cuda"`` names the default CUDA device, cuda:0.
"""
from __future__ import annotations


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
    def ordinal(self) -> int:
        """The CUDA device number; -1 for the CPU (as in Warp)."""
        return int(self.name[5:]) if self.is_cuda else -1

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

_cuda_probe: tuple[int, str] | None = None  # (device count, why none) once probed


def _probe_cuda() -> tuple[int, str]:
    """Ask the CUDA driver how many GPUs there are. Never raises: any failure means none."""
    try:
        try:
            from cuda.bindings import driver
        except ImportError:  # cuda-python before 12.6 spelled it this way
            from cuda import cuda as driver
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return 0, f"the CUDA driver did not initialise ({err})"
        err, count = driver.cuDeviceGetCount()
        if err != driver.CUresult.CUDA_SUCCESS or count == 0:
            return 0, "the CUDA driver reports no GPU"
        return int(count), ""
    except ImportError:
        return 0, "the CUDA Python bindings are not installed (pip install 'kernlab[cuda]')"
    except Exception as exc:  # a broken driver install must not break `import kernlab`
        return 0, f"the CUDA driver could not be loaded ({type(exc).__name__}: {exc})"


def _cuda_state() -> tuple[int, str]:
    global _cuda_probe
    if _cuda_probe is None:
        _cuda_probe = _probe_cuda()
    return _cuda_probe


def is_cuda_available() -> bool:
    """True when at least one CUDA GPU can be used. The answer is cached."""
    return _cuda_state()[0] > 0


def get_cuda_device_count() -> int:
    return _cuda_state()[0]


# --- Looking devices up -------------------------------------------------------------------

_CPU = Device("cpu")
_devices: dict[str, Device] = {"cpu": _CPU}


def get_device(ident: Device | str | None = None) -> Device:
    """The Device named by ident: None gives the default device (the CPU), and a Device is
    returned as it is. Unknown names and CUDA devices that are not present raise ValueError."""
    if ident is None:
        return _CPU
    if isinstance(ident, Device):
        return ident
    if not isinstance(ident, str):
        raise TypeError(f"a device is a name such as 'cpu' or 'cuda:0', not {ident!r}")
    name = _canonical_name(ident)
    if name not in _devices:
        count, why_none = _cuda_state()
        ordinal = int(name[5:])
        if count == 0:
            raise ValueError(f"device {ident!r} is not available: {why_none}")
        if ordinal >= count:
            raise ValueError(f"device {ident!r} is not available: this machine has "
                             f"{count} CUDA device{'s' if count != 1 else ''}")
        _devices[name] = Device(name)
    return _devices[name]


def get_devices() -> list[Device]:
    """Every usable device: the CPU first, then each CUDA GPU."""
    return [_CPU] + [get_device(f"cuda:{i}") for i in range(get_cuda_device_count())]


def synchronize() -> None:
    """Wait for all outstanding work on every device. CPU launches finish before they
    return, so there is nothing to wait for there."""


def synchronize_device(device: Device | str | None = None) -> None:
    """Wait for the outstanding work on one device (the name is checked)."""
    get_device(device)


def init() -> None:
    """Kept for Warp programs, which call wp.init(); kernlab initialises lazily."""
