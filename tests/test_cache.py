"""The disk cache: round trips, damaged entries, permissions, atomic writes, configuration."""
import hashlib
import os
import stat
import warnings

import pytest

from kernlab import config
from kernlab.runtime import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "kernlab-cache"
    monkeypatch.setattr(config, "cache_dir", str(folder))
    return folder


KEY = hashlib.sha256(b"some kernel").hexdigest()
OTHER_KEY = hashlib.sha256(b"another kernel").hexdigest()


def entry(folder, key=KEY):
    return folder / (key + ".klc")


def test_round_trip(cache_dir):
    cache.store(KEY, b"\x00object code\xff")
    assert cache.load(KEY) == b"\x00object code\xff"


def test_missing_entry_is_none(cache_dir):
    assert cache.load(KEY) is None


def test_store_replaces_an_entry(cache_dir):
    cache.store(KEY, b"old")
    cache.store(KEY, b"new")
    assert cache.load(KEY) == b"new"


def test_truncated_entry_is_none_and_removed(cache_dir):
    cache.store(KEY, b"x" * 100)
    path = entry(cache_dir)
    path.write_bytes(path.read_bytes()[:-10])
    assert cache.load(KEY) is None
    assert not path.exists()


def test_tampered_payload_is_none(cache_dir):
    cache.store(KEY, b"x" * 100)
    path = entry(cache_dir)
    blob = bytearray(path.read_bytes())
    blob[-1] ^= 0xFF
    path.write_bytes(bytes(blob))
    assert cache.load(KEY) is None


def test_entry_written_for_another_key_is_none(cache_dir):
    cache.store(OTHER_KEY, b"payload")
    entry(cache_dir, OTHER_KEY).rename(entry(cache_dir, KEY))
    assert cache.load(KEY) is None


def test_file_without_magic_is_none(cache_dir):
    cache_dir.mkdir(mode=0o700)
    entry(cache_dir).write_bytes(b"not a cache entry at all, just bytes" * 4)
    assert cache.load(KEY) is None


def test_cache_folder_is_private(cache_dir):
    cache.store(KEY, b"payload")
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry(cache_dir).stat().st_mode) == 0o600


def test_existing_open_folder_is_made_private(cache_dir):
    cache_dir.mkdir()
    cache_dir.chmod(0o755)
    cache.cache_root()
    assert stat.S_IMODE(cache_dir.stat().st_mode) == 0o700


def test_store_leaves_no_temporary_files(cache_dir):
    for i in range(3):
        cache.store(KEY, bytes([i]) * 10)
    assert sorted(os.listdir(cache_dir)) == [cache.SECRET_NAME, KEY + ".klc"]


def test_unwritable_cache_warns_once_and_carries_on(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(config, "cache_dir", str(blocker / "cache"))
    monkeypatch.setattr(cache, "_warned", False)
    with pytest.warns(RuntimeWarning, match="cannot write the compile cache"):
        cache.store(KEY, b"payload")
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        cache.store(KEY, b"payload")
    assert later == []
    assert cache.load(KEY) is None


def test_disabled_cache_stores_nothing(monkeypatch):
    monkeypatch.setattr(config, "cache_dir", None)
    cache.store(KEY, b"payload")
    assert cache.load(KEY) is None


def test_cache_root_follows_config_at_call_time(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "first"))
    assert cache.cache_root() == tmp_path / "first"
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "second"))
    assert cache.cache_root() == tmp_path / "second"


def test_default_cache_dir_reads_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNLAB_CACHE_DIR", str(tmp_path / "env"))
    assert config.default_cache_dir() == str(tmp_path / "env")
    monkeypatch.delenv("KERNLAB_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert config.default_cache_dir() == str(tmp_path / "xdg" / "kernlab")


def test_clear_removes_entries_only(cache_dir):
    cache.store(KEY, b"a")
    cache.store(OTHER_KEY, b"b")
    (cache_dir / "notes.txt").write_text("keep me")
    cache.clear()
    assert sorted(os.listdir(cache_dir)) == [cache.SECRET_NAME, "notes.txt"]  # the key stays


def test_key_for_is_sha256_hex_and_separates_parts():
    assert len(cache.key_for("a")) == 64
    assert cache.key_for("ab", "c") != cache.key_for("a", "bc")
    assert cache.key_for("x", b"y") == cache.key_for(b"x", "y")


def test_malformed_key_is_rejected(cache_dir):
    with pytest.raises(ValueError, match="hex"):
        cache.store("../escape", b"payload")
