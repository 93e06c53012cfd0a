"""Devices: names, equality with strings, lookup, CUDA detection."""
import pytest

from kernlab.runtime import device as D


def test_default_device_is_cpu():
    dev = D.get_device()
    assert dev.is_cpu and not dev.is_cuda
    assert str(dev) == "cpu" and dev.ordinal == -1


def test_device_equals_its_name():
    assert D.get_device("cpu") == "cpu"
    assert D.get_device("cpu") != "cuda:0"
    assert D.Device("cuda:1") == "cuda:1"
    assert D.Device("cuda") == "cuda:0" and D.Device("cuda:0") == "cuda"


def test_device_hash_matches_its_name():
    table = {D.get_device("cpu"): 1}
    assert table["cpu"] == 1


def test_cuda_device_ordinal_and_str():
    dev = D.Device("cuda:2")
    assert dev.is_cuda and dev.ordinal == 2 and str(dev) == "cuda:2"


def test_get_device_returns_a_device_unchanged():
    dev = D.Device("cpu")
    assert D.get_device(dev) is dev


def test_unknown_device_name_raises_value_error():
    with pytest.raises(ValueError, match="unknown device"):
        D.get_device("gpu0")


def test_missing_cuda_device_raises_value_error():
    if D.is_cuda_available():
        name = f"cuda:{D.get_cuda_device_count()}"  # one past the last GPU
    else:
        name = "cuda"
    with pytest.raises(ValueError, match="not available"):
        D.get_device(name)


def test_is_cuda_available_is_a_cached_bool():
    first = D.is_cuda_available()
    assert isinstance(first, bool) and D.is_cuda_available() is first


def test_get_devices_starts_with_cpu():
    assert D.get_devices()[0] == "cpu"


def test_synchronize_and_init_are_harmless_on_cpu():
    assert D.init() is None
    assert D.synchronize() is None
    assert D.synchronize_device("cpu") is None


def test_scoped_stream_of_none_changes_nothing_and_a_stream_is_refused():
    import kernlab as kl
    a = kl.zeros(3)
    with kl.ScopedStream(None):
        a.fill_(2.0)
    assert a.numpy().tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="no CUDA streams"):
        kl.ScopedStream(object())


def test_a_device_alias_is_the_name_warp_code_passes_around():
    cpu = D.get_device("cpu")
    assert cpu.alias == "cpu" and D.get_device(cpu.alias) == cpu
    assert D.Device("cuda").alias == "cuda:0" and D.Device("cuda:1").alias == "cuda:1"  # "cuda" names the default CUDA device
