"""Loading relocatable object code without LLVM: the warm start's loader.

A kernel's machine code is kept in the disk cache as the relocatable ELF object LLVM
emitted for it. Putting such an object into memory takes a linker's smallest job, done here
in Python with ctypes, so that a process whose kernels all come from the cache never loads
llvmlite (180 MB of library and 20 to 100 ms of import):

1. parse the ELF header, the section headers, the symbol table and the RELA sections;
2. lay the allocated sections out in one anonymous mapping, in three page-aligned regions:
   code (with a stub per external function a 32-bit call must reach), read-only data (with
   a GOT slot per symbol a GOT relocation names) and writable data;
3. resolve each symbol: a defined one to its section's address, an undefined one through
   ``resolve`` (the kernel runtime's own symbols, then the process's C libraries);
4. apply the x86-64 relocations into a copy of the image, copy it into the mapping, and
   make the code region read+execute and the read-only region read-only (W^X: nothing is
   ever writable and executable at once).

Handled: ELF64 little-endian relocatable objects for x86-64 (LLVM's small, medium and large
code models, static or PIC: R_X86_64_64, PC32, PLT32, 32, 32S, PC64, the GOT-relative
forms). Unwind tables (``.eh_frame``) are not loaded: kernels raise no exceptions and call
nothing that unwinds through them. Anything else (another machine, TLS, COMMON symbols,
constructors, an unresolvable symbol, a malformed file) raises ObjectError; the caller then
loads the object with LLVM instead (jit.py), so an object this loader cannot place costs
time, never correctness.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import struct
import sys
import threading

EM_X86_64 = 62
_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
_SHDR = struct.Struct("<IIQQQQIIQQ")
_SYM = struct.Struct("<IBBHQQ")
_RELA = struct.Struct("<QQq")
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 1, 2, 3, 4, 8, 9
SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY = 14, 15, 16
SHT_X86_64_UNWIND = 0x70000001
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_TLS = 0x1, 0x2, 0x4, 0x400
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON = 0, 0xFF00, 0xFFF1, 0xFFF2
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
STT_SECTION, STT_TLS = 3, 6
_STUB = bytes.fromhex("ff2500000000")  # jmp *0(%rip), then the 8-byte target
_STUB_SIZE = 16
_MASK64 = (1 << 64) - 1
_GOT_SYMBOL = "_GLOBAL_OFFSET_TABLE_"  # the linker's name for the GOT: ours
_MAP_32BIT = 0x40  # Linux x86-64: map in the low 2 GB

# relocation types (System V x86-64 psABI): what each computes and how wide it is
R_NONE, R_64, R_PC32, R_GOT32, R_PLT32 = 0, 1, 2, 3, 4
R_GOTPCREL, R_32, R_32S, R_PC64, R_GOTOFF64 = 9, 10, 11, 24, 25
R_GOTPC32, R_GOT64, R_GOTPCREL64, R_GOTPC64 = 26, 27, 28, 29
R_GOTPCRELX, R_REX_GOTPCRELX = 41, 42
_GOT_KINDS = {R_GOT32, R_GOTPCREL, R_GOT64, R_GOTPCREL64, R_GOTPCRELX, R_REX_GOTPCRELX}
_FORMATS = {R_64: "<Q", R_PC32: "<i", R_GOT32: "<i", R_PLT32: "<i", R_GOTPCREL: "<i",
            R_32: "<I", R_32S: "<i", R_PC64: "<q", R_GOTOFF64: "<q", R_GOTPC32: "<i",
            R_GOT64: "<q", R_GOTPCREL64: "<q", R_GOTPC64: "<q", R_GOTPCRELX: "<i",
            R_REX_GOTPCRELX: "<i"}
_PACKERS = {fmt: struct.Struct(fmt) for fmt in set(_FORMATS.values())}
_RANGES = {"<Q": (0, _MASK64), "<q": (-(1 << 63), (1 << 63) - 1), "<i": (-(1 << 31), (1 << 31) - 1),
           "<I": (0, (1 << 32) - 1)}


class ObjectError(Exception):
    """An object this loader does not place, though it is a well-formed relocatable object
    for this machine: it uses what the loader does not handle. LLVM's loader may place it."""


class MalformedObject(ObjectError):
    """Not a well-formed relocatable object for this machine (damaged, or built for another
    one). Nobody may load it (LLVM's loader aborts the process on some): compile anew."""


_MACHINES = {"x86_64": EM_X86_64, "AMD64": EM_X86_64, "aarch64": 183, "arm64": 183}


def host_machine() -> int | None:
    """The ELF machine number of this process's processor (None if unknown)."""
    return _MACHINES.get(os.uname().machine) if hasattr(os, "uname") else None


def check_header(data: bytes) -> None:
    """MalformedObject unless ``data`` starts like a relocatable little-endian 64-bit ELF
    object for this machine (what LLVM's loader needs before it may be handed an ELF
    object: it aborts on another machine's)."""
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        raise MalformedObject("not an ELF object")
    ident, e_type, machine = _EHDR.unpack_from(data)[:3]
    if ident[4] != 2 or ident[5] != 1 or e_type != 1 or machine != host_machine():
        raise MalformedObject("not a relocatable 64-bit little-endian object for this machine")


def supported() -> bool:
    """Whether this process can use the loader: Linux on x86-64 with glibc's mmap."""
    return _LIBC is not None


def _libc():
    if not sys.platform.startswith("linux") or ctypes.sizeof(ctypes.c_void_p) != 8 \
            or os.uname().machine != "x86_64":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        libc.dlsym.restype = ctypes.c_void_p
        libc.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_PAGE = mmap.PAGESIZE
_MAP_FAILED = (1 << 64) - 1
_process_symbols: dict = {}
_lock = threading.Lock()
stats = {"mapped": 0, "unmapped": 0}  # objects placed and freed by this loader


def process_symbol(name: str) -> int | None:
    """The address of a symbol of the process's loaded libraries (libm, libc ...), or None:
    the lookup LLVM's JIT does for a name nothing registered."""
    address = _process_symbols.get(name)
    if address is None and _LIBC is not None:
        address = _LIBC.dlsym(None, name.encode())  # RTLD_DEFAULT: the global scope
        if address:
            _process_symbols[name] = address
    return address or None


class LoadedObject:
    """One object placed in memory: ``symbols`` maps its global symbols to addresses.
    ``free()`` unmaps it (once); nothing may run its code afterwards."""

    __slots__ = ("address", "size", "symbols", "__weakref__")

    def __init__(self, address: int, size: int, symbols: dict):
        self.address, self.size, self.symbols = address, size, symbols

    def free(self) -> None:
        with _lock:
            if self.address:
                _LIBC.munmap(self.address, self.size)
                self.address = 0
                stats["unmapped"] += 1

    def release(self) -> None:  # the finaliser's name for it (jit's arenas have the same)
        self.free()

    @property
    def closed(self) -> bool:  # (as jit's arenas say it)
        return not self.address


class _Section:
    __slots__ = ("index", "name", "type", "flags", "offset", "size", "align", "link", "info",
                 "entsize", "place")

    def __init__(self, index, fields):
        (self.name, self.type, self.flags, _, self.offset, self.size, self.link, self.info,
         self.align, self.entsize) = fields
        self.index = index
        self.place = None  # offset in the mapping, for the sections loaded

    def region(self) -> int:
        """0: code, 1: read-only data, 2: writable data."""
        return 0 if self.flags & SHF_EXECINSTR else 2 if self.flags & SHF_WRITE else 1


def _string(table: bytes, at: int) -> str:
    end = table.find(b"\0", at)
    if at >= len(table) or end < 0:
        raise MalformedObject("a name lies outside its string table")
    return table[at:end].decode("utf-8", "replace")


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a if a > 1 else n


def load(data: bytes, resolve) -> LoadedObject:
    """Place the relocatable object ``data`` in executable memory. ``resolve(name)`` gives
    the address of an undefined symbol, or None (then the process's libraries are searched
    for it). ObjectError when it cannot be placed; nothing stays mapped then."""
    if _LIBC is None:
        raise ObjectError("this platform has no object loader (Linux x86-64 only)")
    data = bytes(data)
    sections, symbols, relocations = _parse(data)
    placed = [s for s in sections if s.flags & SHF_ALLOC and s.type in (SHT_PROGBITS, SHT_NOBITS)]
    # the symbols each kind of indirection needs, before the layout: stubs for 32-bit
    # calls to external functions, GOT slots for GOT-relative references
    stubs, slots, low = {}, {}, False
    got_named = any(name == _GOT_SYMBOL for name, shndx, _, _ in symbols if shndx == SHN_UNDEF)
    for target, entries in relocations:
        for _, info, _ in entries:
            kind, k = info & 0xFFFFFFFF, info >> 32
            if k >= len(symbols):
                raise MalformedObject(f"a relocation names symbol {k} of {len(symbols)}")
            if kind == R_PLT32 and symbols[k][1] == SHN_UNDEF:
                stubs.setdefault(k, len(stubs))
            elif kind in _GOT_KINDS:
                slots.setdefault(k, len(slots))
            elif kind in (R_GOTOFF64, R_GOTPC32, R_GOTPC64):
                got_named = True
            low = low or kind in (R_32, R_32S)  # absolute 32-bit addresses: the low 2 GB
    size, regions = 0, [0, 0, 0, 0]  # region starts, and the end
    stub_at = got_at = 0
    for region in range(3):
        size = regions[region] = _align(size, _PAGE)
        for s in placed:
            if s.region() == region:
                size = _align(size, max(s.align, 1))
                s.place, size = size, size + s.size
        if region == 0 and stubs:
            size = stub_at = _align(size, _STUB_SIZE)
            size += _STUB_SIZE * len(stubs)
        if region == 1 and (slots or got_named):
            size = got_at = _align(size, 8)
            size += 8 * max(len(slots), 1)
    total = max(_align(size, _PAGE), _PAGE)
    regions[3] = total
    base = _LIBC.mmap(None, total, mmap.PROT_READ | mmap.PROT_WRITE,
                      mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (_MAP_32BIT if low else 0), -1, 0)
    if not base or base == _MAP_FAILED:
        raise ObjectError(f"mmap of {total} bytes failed (errno {ctypes.get_errno()})")
    try:
        image = bytearray(total)
        for s in placed:
            if s.type == SHT_PROGBITS and s.size:
                image[s.place:s.place + s.size] = data[s.offset:s.offset + s.size]
        got = base + got_at
        address = _symbol_addresses(sections, symbols, base, resolve, got)
        for k, n in stubs.items():
            at = stub_at + _STUB_SIZE * n
            image[at:at + 6] = _STUB
            struct.pack_into("<Q", image, at + 6, _used(address, k))
        for k, n in slots.items():
            struct.pack_into("<Q", image, got_at + 8 * n, _used(address, k))
        for target, entries in relocations:
            s = sections[target]
            if s.place is None:
                continue  # relocations of an unwind table, or of another section left out
            for offset, info, addend in entries:
                kind, k = info & 0xFFFFFFFF, info >> 32
                if kind == R_NONE:
                    continue
                fmt = _FORMATS.get(kind)
                if fmt is None:
                    raise ObjectError(f"relocation type {kind} is not handled")
                packer = _PACKERS[fmt]
                if offset + packer.size > s.size or s.type != SHT_PROGBITS:
                    raise MalformedObject(f"a relocation at {offset} lies outside section "
                                      f"{s.index} ({s.size} bytes)")
                where = base + s.place + offset
                S, A = _used(address, k), addend
                if kind in (R_64, R_32, R_32S):
                    value = S + A
                elif kind == R_PC32 or kind == R_PLT32:
                    if k in stubs and kind == R_PLT32:
                        S = base + stub_at + _STUB_SIZE * stubs[k]
                    value = S + A - where
                elif kind == R_PC64:
                    value = S + A - where
                elif kind == R_GOTOFF64:
                    value = S + A - got
                elif kind in (R_GOTPC32, R_GOTPC64):
                    value = got + A - where
                elif kind in (R_GOT32, R_GOT64):
                    value = 8 * slots[k] + A
                else:  # GOTPCREL, GOTPCRELX, REX_GOTPCRELX, GOTPCREL64
                    value = got + 8 * slots[k] + A - where
                if fmt == "<Q":
                    value &= _MASK64
                lo, hi = _RANGES[fmt]
                if not lo <= value <= hi:
                    raise ObjectError(f"relocation type {kind} at {offset} of section "
                                      f"{s.index} is out of range")
                packer.pack_into(image, s.place + offset, value)
        ctypes.memmove(base, bytes(image), total)
        protections = (mmap.PROT_READ | mmap.PROT_EXEC, mmap.PROT_READ,
                       mmap.PROT_READ | mmap.PROT_WRITE)
        for region in range(3):
            start, end = regions[region], regions[region + 1]
            if end > start and region < 2:
                if _LIBC.mprotect(base + start, end - start, protections[region]) != 0:
                    raise ObjectError(f"mprotect failed (errno {ctypes.get_errno()})")
        exported = {}
        for k, (name, shndx, bind, _) in enumerate(symbols):
            if name and bind in (STB_GLOBAL, STB_WEAK) and shndx != SHN_UNDEF \
                    and address[k] is not None:
                exported[name] = address[k]
    except BaseException:
        _LIBC.munmap(base, total)
        raise
    with _lock:
        stats["mapped"] += 1
    return LoadedObject(base, total, exported)


def _parse(data: bytes):
    """(sections, symbols as (name, section index, binding, value), [(target section,
    relocations)]) of an x86-64 relocatable ELF64 object."""
    if len(data) < _EHDR.size or data[:4] != b"\x7fELF":
        raise MalformedObject("not an ELF object")
    (ident, e_type, machine, _, _, _, shoff, _, _, _, _, shentsize, shnum,
     shstrndx) = _EHDR.unpack_from(data)
    if ident[4] != 2 or ident[5] != 1:
        raise MalformedObject("not a little-endian 64-bit ELF object")
    if e_type != 1:
        raise MalformedObject(f"ELF type {e_type} is not a relocatable object")
    if machine != host_machine():
        raise MalformedObject(f"ELF machine {machine} is not this machine's")
    if machine != EM_X86_64:
        raise ObjectError(f"ELF machine {machine} is not handled (x86-64 only)")
    if shentsize != _SHDR.size or shnum == 0 or shoff + shnum * _SHDR.size > len(data):
        raise MalformedObject("the section header table is malformed")
    sections = [_Section(k, _SHDR.unpack_from(data, shoff + k * _SHDR.size))
                for k in range(shnum)]
    for s in sections:
        if s.type != SHT_NOBITS and s.offset + s.size > len(data):
            raise MalformedObject(f"section {s.index} lies outside the file")
        if s.align & (s.align - 1) or s.align > _PAGE:
            raise MalformedObject(f"section {s.index} has alignment {s.align}")
        if s.flags & SHF_ALLOC:
            if s.flags & SHF_TLS:
                raise ObjectError("thread-local storage is not handled")
            if s.type in (SHT_INIT_ARRAY, SHT_FINI_ARRAY, SHT_PREINIT_ARRAY):
                raise ObjectError("constructors and destructors are not handled")
            if s.flags & SHF_WRITE and s.flags & SHF_EXECINSTR:
                raise ObjectError(f"section {s.index} is writable and executable")
            if s.type not in (SHT_PROGBITS, SHT_NOBITS, SHT_X86_64_UNWIND):
                raise ObjectError(f"allocated section {s.index} has type {s.type:#x}")
        if s.type == SHT_REL:
            raise ObjectError("REL relocations are not handled (x86-64 objects use RELA)")
    if shstrndx >= shnum:
        raise MalformedObject("no section name table")
    names = data[sections[shstrndx].offset:sections[shstrndx].offset + sections[shstrndx].size]
    for s in sections:
        s.name = _string(names, s.name) if s.name else ""
    tables = [s for s in sections if s.type == SHT_SYMTAB]
    if len(tables) != 1:
        raise MalformedObject(f"{len(tables)} symbol tables")
    table = tables[0]
    if table.entsize != _SYM.size or table.link >= shnum \
            or sections[table.link].type != SHT_STRTAB:
        raise MalformedObject("the symbol table is malformed")
    strings = data[sections[table.link].offset:sections[table.link].offset
                   + sections[table.link].size]
    symbols = []
    for name, info, _, shndx, value, _ in _SYM.iter_unpack(
            data[table.offset:table.offset + table.size - table.size % _SYM.size]):
        if info & 0xF == STT_TLS:
            raise ObjectError("thread-local symbols are not handled")
        if shndx == SHN_COMMON:
            raise ObjectError("COMMON symbols are not handled")
        if SHN_LORESERVE <= shndx and shndx != SHN_ABS or shndx < SHN_LORESERVE and shndx >= shnum:
            raise MalformedObject(f"a symbol names section {shndx}")
        symbols.append((_string(strings, name) if name else "", shndx, info >> 4, value)
                       if info & 0xF != STT_SECTION else ("", shndx, STB_LOCAL, value))
    relocations = []
    for s in sections:
        if s.type == SHT_RELA:
            if s.entsize != _RELA.size or s.info >= shnum or s.link != table.index:
                raise MalformedObject(f"relocation section {s.index} is malformed")
            target = sections[s.info]
            if not target.flags & SHF_ALLOC or target.type == SHT_X86_64_UNWIND:
                continue  # debug information or an unwind table: not loaded
            relocations.append((s.info, list(_RELA.iter_unpack(
                data[s.offset:s.offset + s.size - s.size % _RELA.size]))))
    return sections, symbols, relocations


def _symbol_addresses(sections, symbols, base: int, resolve, got: int) -> list:
    out = []
    for name, shndx, bind, value in symbols:
        if shndx == SHN_ABS:
            out.append(value)
        elif shndx != SHN_UNDEF:
            s = sections[shndx]
            # a symbol in a section not loaded (an unwind table): None, refused if used
            out.append(base + s.place + value if s.place is not None else None)
        elif not name:
            out.append(0)
        elif name == _GOT_SYMBOL:
            out.append(got)
        else:
            address = resolve(name) if resolve is not None else None
            if address is None:
                address = process_symbol(name)
            if address is None:
                if bind != STB_WEAK:
                    raise ObjectError(f"undefined symbol {name}")
                address = 0
            out.append(address)
    return out


def _used(address: list, k: int) -> int:
    """The address of symbol k, which a relocation, stub or GOT slot uses."""
    a = address[k]
    if a is None:
        raise ObjectError("a relocation names a symbol of a section that is not loaded")
    return a
