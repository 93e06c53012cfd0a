"""Cache hardening: only regular files of ours are read (no FIFO can block a launch, no
symlink is followed, no huge file is read), and entries are authenticated with a per-user
secret, so a forged entry with a correctly recomputed hash is a miss."""
import hashlib
import os
import struct
import subprocess
import sys
import textwrap

import pytest

import kernlab as kl
from kernlab import config
from kernlab.runtime import cache
from test_reliability import child_env

KEY = hashlib.sha256(b"a kernel").hexdigest()
OTHER = hashlib.sha256(b"another kernel").hexdigest()


def entry(folder, key=KEY):
    return folder / (key + ".klc")


def forged(key: str, payload: bytes) -> bytes:
    """An entry as someone who knows the format but not the secret writes it: the header,
    and SHA-256 of the payload where the authentication code goes."""
    k = key.encode("ascii")
    return b"".join([cache.MAGIC, struct.pack("<H", len(k)), k, struct.pack("<Q", len(payload)),
                     hashlib.sha256(payload).digest(), payload])


def test_a_forged_entry_with_a_recomputed_hash_is_a_miss_and_removed(cache_dir):
    cache.store(KEY, b"genuine object code")
    entry(cache_dir).write_bytes(forged(KEY, b"evil object code"))
    assert cache.load(KEY) is None
    assert not entry(cache_dir).exists()


def test_an_entry_made_under_another_secret_is_a_miss(cache_dir, tmp_path, monkeypatch):
    cache.store(KEY, b"code")
    blob = entry(cache_dir).read_bytes()
    assert cache.load(KEY) == b"code"
    other = tmp_path / "other-user-cache"  # another folder: another secret
    monkeypatch.setattr(config, "cache_dir", str(other))
    other.mkdir(mode=0o700)
    entry(other).write_bytes(blob)
    assert cache.load(KEY) is None


def test_the_secret_is_private_and_stable(cache_dir):
    cache.store(KEY, b"x")
    secret = cache_dir / cache.SECRET_NAME
    info = secret.stat()
    assert info.st_mode & 0o777 == 0o600 and info.st_size == 32
    first = secret.read_bytes()
    cache._secrets.clear()  # as a new process would
    cache.store(OTHER, b"y")
    assert secret.read_bytes() == first and cache.load(KEY) == b"x"


def test_a_symlinked_entry_is_not_followed(cache_dir, tmp_path):
    cache.store(OTHER, b"code of another kernel")
    entry(cache_dir).symlink_to(entry(cache_dir, OTHER))
    assert cache.load(KEY) is None
    assert not os.path.lexists(entry(cache_dir))  # the link is removed, its target kept
    assert cache.load(OTHER) == b"code of another kernel"


def test_a_huge_file_is_not_read(cache_dir):
    cache.store(KEY, b"code")
    with open(entry(cache_dir), "r+b") as f:  # sparse: costs no disk
        f.truncate(cache.MAX_ENTRY_BYTES + 1)
    assert cache.load(KEY) is None
    assert not entry(cache_dir).exists()


FIFO_CHILD = r"""
import os, sys, hashlib
import numpy as np
import kernlab as kl
from kernlab.runtime import cache

@kl.kernel
def doubled(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] * 2.0

x = kl.ones(4, dtype=float)
kl.launch(doubled, 4, inputs=[x])  # fills the cache
entries = [p for p in os.listdir(cache.cache_root()) if p.endswith(".klc")]
for name in entries:  # a FIFO (or a device) where every entry should be
    path = os.path.join(cache.cache_root(), name)
    os.unlink(path)
    os.mkfifo(path, 0o600)
kl.config.cache_dir = kl.config.cache_dir  # the same folder, in a fresh kernel:
@kl.kernel
def doubled_again(x: kl.array(dtype=float)):
    i = kl.tid()
    x[i] = x[i] * 2.0
key = hashlib.sha256(b"k").hexdigest()
os.mkfifo(os.path.join(cache.cache_root(), key + ".klc"), 0o600)
print("load", cache.load(key), flush=True)
kl.launch(doubled_again, 4, inputs=[x])
print(x.numpy().tolist(), flush=True)
print("alive", flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_where_an_entry_should_be_cannot_block_a_launch(tmp_path):
    script = tmp_path / "child_fifo.py"
    script.write_text(FIFO_CHILD)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=child_env(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.splitlines() == ["load None", "[4.0, 4.0, 4.0, 4.0]", "alive"]
