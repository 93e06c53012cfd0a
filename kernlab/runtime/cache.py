"""The disk cache for compiled code (CPU object code, PTX, cubins).

Callers hash whatever determines the output (IR text, options, compiler versions) into a
hex key with key_for(), then load(key) / store(key, payload). Each entry is one file,
``<key>.klc``, laid out as

    b"KLCACHE2" | key length (u16) | key (ASCII) | payload length (u64) | MAC | payload

where MAC is HMAC-SHA256, under a per-user secret, of the key and the payload. The secret
(32 random bytes) lives in the cache folder as ``.secret`` (mode 0600), so an entry forged
without it, even with a correctly recomputed hash, reads as a miss.

load() checks every part, so a truncated, tampered, forged or misplaced file reads as a miss
and is removed. Only regular files of ours are read: entries are opened with O_NOFOLLOW and
O_NONBLOCK (a FIFO or device where an entry should be cannot block or feed the loader), then
checked with fstat (a regular file, owned by this user, of a sane size) before a byte is read.
The cache folder is private to its user (mode 0700, entries 0600) because what it holds is
loaded as machine code; a folder owned by someone else is not used at all. Failures to write
are reported once and otherwise ignored: the cache only saves time.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat
import struct
import tempfile
import warnings
from pathlib import Path

from .. import config

MAGIC = b"KLCACHE2"
SUFFIX = ".klc"
SECRET_NAME = ".secret"
_SECRET_BYTES = 32
MAX_ENTRY_BYTES = 1 << 30  # larger files are not cache entries of ours
_TEMP_PREFIX = ".tmp-"
_KEY = re.compile(r"[0-9a-f]{16,128}")
_LENGTHS = struct.Struct("<Q")  # payload length
_KEY_LENGTH = struct.Struct("<H")

_warned = False  # store() warns about an unusable cache once per process


def key_for(*parts: str | bytes) -> str:
    """A sha256 hex key over parts (strings are UTF-8). Each part is length-prefixed, so
    ("ab", "c") and ("a", "bc") get different keys."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, str):
            part = part.encode("utf-8")
        elif not isinstance(part, (bytes, bytearray)):
            raise TypeError(f"cache key parts are str or bytes, not {type(part).__name__}")
        digest.update(_LENGTHS.pack(len(part)))
        digest.update(part)
    return digest.hexdigest()


def cache_root() -> Path:
    """The cache folder named by kernlab.config.cache_dir, created private (0700); an
    existing folder of ours is made private. OSError when it cannot be made or is not ours."""
    return Path(_root_dir())


def _root_dir() -> str:
    """cache_root() as a string (what load() uses: a Path costs a warm start 0.07 ms)."""
    folder = config.cache_dir
    if not folder:
        raise OSError("the disk cache is disabled (kernlab.config.cache_dir is empty)")
    root = _roots.get(folder) if isinstance(folder, str) else None
    if root is None:
        root = os.path.expanduser(os.fspath(folder))
        if isinstance(folder, str):
            _roots[folder] = root
    if root in _checked:  # made and checked by this process already: a compile asks
        return root       # a few times (each mkdir and stat took ~1 ms, loaded)
    try:  # (a folder that is there already: one stat, no mkdir and its exception)
        info = os.stat(root)
        if not stat.S_ISDIR(info.st_mode):
            raise FileNotFoundError(root)  # mkdir says what is wrong with it
    except FileNotFoundError:
        Path(root).mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(root)
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise OSError(f"cache folder {root} belongs to another user; not using it")
    if info.st_mode & 0o777 != 0o700:
        os.chmod(root, 0o700)
    _checked.add(root)
    return root


_checked: set = set()  # cache folders cache_root() made and checked in this process
_roots: dict = {}  # config.cache_dir -> that folder, expanded


def _read_regular(path: Path, limit: int) -> bytes:
    """The contents of ``path`` if it is a regular file of ours of at most ``limit`` bytes;
    OSError otherwise. Never follows a symlink, never blocks on a FIFO or device."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if hasattr(os, "getuid") and info.st_uid != os.getuid():
            raise OSError(f"{path} belongs to another user")
        if info.st_size > limit:
            raise OSError(f"{path} is larger than a cache entry can be")
        chunks, left = [], info.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_secrets: dict = {}  # cache folder -> its secret, once read


def _secret(root: Path | str) -> bytes:
    """This user's secret for the cache folder ``root``, created on first use (0600)."""
    cached = _secrets.get(str(root))
    if cached is not None:
        return cached
    path = os.path.join(root, SECRET_NAME)
    try:
        secret = _read_regular(path, _SECRET_BYTES)
    except FileNotFoundError:
        fd, temp = tempfile.mkstemp(prefix=_TEMP_PREFIX, dir=root)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(_SECRET_BYTES))
            try:
                os.link(temp, path)  # fails if another process made one meanwhile
            except FileExistsError:
                pass
        finally:
            os.unlink(temp)
        secret = _read_regular(path, _SECRET_BYTES)
    if len(secret) != _SECRET_BYTES:
        raise OSError(f"{path} is not a kernlab cache secret")
    _secrets[str(root)] = secret
    return secret


_pads: dict = {}  # secret -> SHA-256 states after its inner and outer padded keys


def _mac(key: str, payload: bytes, root: str | None = None) -> bytes:
    """HMAC-SHA256 (RFC 2104) under the folder's secret of the key (length-prefixed) and
    the payload. Computed with hashlib from the two padded-key states, made once per
    secret: the hmac module's first call in a process sets up OpenSSL's HMAC, 0.15 ms
    that a warm start would pay."""
    secret = _secret(root or _root_dir())
    pads = _pads.get(secret)
    if pads is None:
        block = secret.ljust(64, b"\0")  # (a 32-byte secret: shorter than SHA-256's block)
        pads = _pads[secret] = (hashlib.sha256(bytes(b ^ 0x36 for b in block)),
                                hashlib.sha256(bytes(b ^ 0x5C for b in block)))
    key_bytes = key.encode("ascii")
    inner, outer = pads[0].copy(), pads[1].copy()
    inner.update(_KEY_LENGTH.pack(len(key_bytes)) + key_bytes)
    inner.update(payload)
    outer.update(inner.digest())
    return outer.digest()


def _entry_path(key: str) -> Path:
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"cache keys are 16 to 128 lowercase hex digits, not {key!r}")
    return cache_root() / (key + SUFFIX)


def _encode(key: str, payload: bytes) -> bytes:
    key_bytes = key.encode("ascii")
    return b"".join([MAGIC, _KEY_LENGTH.pack(len(key_bytes)), key_bytes,
                     _LENGTHS.pack(len(payload)), _mac(key, payload), payload])


def _decode(key: str, blob: bytes, root: str | None = None) -> bytes | None:
    """The payload of an entry file's contents, or None unless every check passes."""
    if not blob.startswith(MAGIC):
        return None
    at = len(MAGIC)
    if len(blob) < at + _KEY_LENGTH.size:
        return None
    (key_length,) = _KEY_LENGTH.unpack_from(blob, at)
    at += _KEY_LENGTH.size
    if blob[at: at + key_length] != key.encode("ascii"):
        return None  # a foreign entry: written for another key
    at += key_length
    if len(blob) < at + _LENGTHS.size + 32:
        return None
    (length,) = _LENGTHS.unpack_from(blob, at)
    at += _LENGTHS.size
    digest, payload = blob[at: at + 32], blob[at + 32:]
    if len(payload) != length:
        return None  # truncated
    try:
        expected = _mac(key, payload, root)
    except OSError:
        return None
    if not hmac.compare_digest(expected, digest):
        return None  # tampered with, or forged without this user's secret
    return payload


def load(key: str) -> bytes | None:
    """The payload stored under key, or None when there is none or the entry is damaged
    (a damaged entry is removed)."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise ValueError(f"cache keys are 16 to 128 lowercase hex digits, not {key!r}")
    try:
        root = _root_dir()
    except OSError:
        return None
    path = os.path.join(root, key + SUFFIX)  # (a string: a Path costs microseconds)
    try:
        blob = _read_regular(path, MAX_ENTRY_BYTES)
    except FileNotFoundError:
        return None
    except OSError:  # not a regular file of ours: remove it, so the entry is written anew
        blob = b""
    payload = _decode(key, blob, root)
    if payload is None:
        try:
            os.unlink(path)
        except OSError:
            pass
    return payload


def store(key: str, payload: bytes) -> None:
    """Save payload under key, atomically: readers see the old entry or the new one, never
    half of one. Never raises on an unusable cache; warns once and carries on."""
    global _warned
    if not config.cache_dir:
        return  # caching is switched off
    temp_name = None
    try:
        path = _entry_path(key)
        try:
            fd, temp_name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=SUFFIX,
                                             dir=path.parent)
        except FileNotFoundError:  # the folder was removed since: make it again
            _checked.discard(_roots.get(config.cache_dir, str(path.parent)))
            path = _entry_path(key)
            fd, temp_name = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=SUFFIX,
                                             dir=path.parent)
        with os.fdopen(fd, "wb") as f:  # mkstemp creates the file with mode 0600
            f.write(_encode(key, bytes(payload)))
        os.replace(temp_name, path)
        temp_name = None
    except OSError as exc:
        if not _warned:
            _warned = True
            warnings.warn(f"kernlab: cannot write the compile cache ({exc}); carrying on "
                          "without it (set kernlab.config.cache_dir to change the folder)",
                          RuntimeWarning, stacklevel=2)
    finally:
        if temp_name is not None:
            try:
                os.unlink(temp_name)
            except OSError:
                pass


def clear() -> None:
    """Remove every cache entry (and stray temporary files); other files are left alone."""
    try:
        root = cache_root()
    except OSError:
        return
    for path in root.iterdir():
        if path.suffix == SUFFIX and path.is_file():
            try:
                path.unlink()
            except OSError:
                pass
