"""Arrays over read-only memory are marked read-only, and a launch that writes one is refused
before it runs, naming the parameter. The memory-map case crashed the process: it runs in a
child that must survive."""
import subprocess
import sys

import numpy as np
import pytest

import kernlab as kl
from test_reliability import child_env


@kl.kernel
def doubles(src: kl.array(dtype=float), dst: kl.array(dtype=float)):
    i = kl.tid()
    dst[i] = src[i] * 2.0


@kl.kernel
def bumps(counter: kl.array(dtype=float)):
    kl.atomic_add(counter, 0, 1.0)


def frozen(values) -> np.ndarray:
    a = np.array(values, np.float32)
    a.flags.writeable = False
    return a


def test_from_numpy_of_a_non_writeable_array_says_it_is_read_only():
    a = kl.from_numpy(frozen([1.0, 2.0]))
    assert a.is_readonly
    assert "readonly=True" in repr(a)
    assert not kl.from_numpy(np.ones(2, np.float32)).is_readonly
    assert not kl.array(frozen([1.0, 2.0])).is_readonly  # kl.array copies


@pytest.mark.cpu_only("read-only host memory")
def test_a_launch_writing_a_read_only_array_is_refused_and_the_data_kept(backend):
    data = frozen([1.0, 2.0, 3.0])
    ro = kl.from_numpy(data)
    with pytest.raises(kl.KernelError) as info:
        kl.launch(doubles, 3, inputs=[kl.ones(3, dtype=float), ro])
    text = str(info.value)
    assert "'doubles'" in text and "'dst'" in text and "read-only" in text
    assert data.tolist() == [1.0, 2.0, 3.0]
    # reading it is fine
    out = kl.zeros(3, dtype=float)
    kl.launch(doubles, 3, inputs=[ro, out])
    assert out.numpy().tolist() == [2.0, 4.0, 6.0]


@pytest.mark.cpu_only("read-only host memory")
def test_atomics_into_read_only_bytes_and_views_are_refused(backend):
    raw = np.frombuffer(bytes(16), np.float32)  # immutable bytes
    ro = kl.from_numpy(raw)
    with pytest.raises(kl.KernelError, match="'counter'.*read-only"):
        kl.launch(bumps, 1, inputs=[ro])
    with pytest.raises(kl.KernelError, match="'counter'.*read-only"):
        kl.launch(bumps, 1, inputs=[ro[1:]])  # a view stays read-only
    assert raw.tolist() == [0.0] * 4


MEMMAP_CHILD = r"""
import sys
import numpy as np
import kernlab as kl

path = sys.argv[1]
np.arange(8, dtype=np.float32).tofile(path)
mm = np.memmap(path, dtype=np.float32, mode="r")

@kl.kernel
def scribble(a: kl.array(dtype=float)):
    i = kl.tid()
    a[i] = -1.0

kl.config.bounds_check = True
for make in (kl.from_numpy, lambda m: kl.array(m, copy=False)):
    try:
        kl.launch(scribble, 8, inputs=[make(mm)])
        print("launched")
    except kl.KernelError as err:
        print("refused", "'a'" in str(err))
print(np.fromfile(path, dtype=np.float32).tolist() == list(range(8)))
print("alive")
"""


def test_writing_a_read_only_memory_map_is_refused_in_a_surviving_process(tmp_path):
    script = tmp_path / "child_memmap.py"
    script.write_text(MEMMAP_CHILD)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "data.bin")],
                          capture_output=True, text=True, timeout=120,
                          env=child_env(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split("\n")[:4] == ["refused True", "refused True", "True", "alive"]
