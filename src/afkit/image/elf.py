"""Just enough ELF reading to know a file's interpreter and the libraries it needs (DT_NEEDED)."""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB, DT_RPATH, DT_RUNPATH = 0, 1, 5, 15, 29


@dataclass(frozen=True)
class ElfInfo:
    interp: str | None
    needed: tuple[str, ...]
    runpath: tuple[str, ...]


Data = bytes | mmap.mmap


def is_elf(head: Data) -> bool:
    return head[:4] == b"\x7fELF"


def read(path: Path) -> ElfInfo | None:
    """ElfInfo of a dynamically linked ELF file; None for anything else (or a broken ELF).
    The file is mapped, not read: only the pages of its headers and dynamic strings are touched
    (a shared library of hundreds of MiB costs a few pages)."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return parse(data)
    # unreadable, empty (cannot be mapped), or its headers point outside it
    except (OSError, ValueError, struct.error, IndexError):
        return None


def parse(data: Data) -> ElfInfo | None:
    if not is_elf(data) or data[4] not in (1, 2) or data[5] not in (1, 2):
        return None
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    if is64:
        e_phoff, e_phentsize, e_phnum = (
            struct.unpack_from(end + "Q", data, 0x20)[0],
            *struct.unpack_from(end + "HH", data, 0x36),
        )
        ph_fmt = end + "IIQQQQQQ"
    else:
        e_phoff, e_phentsize, e_phnum = (
            struct.unpack_from(end + "I", data, 0x1C)[0],
            *struct.unpack_from(end + "HH", data, 0x2A),
        )
        ph_fmt = end + "IIIIIIII"
    loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
    dynamic: tuple[int, int] | None = None
    interp: str | None = None
    for i in range(e_phnum):
        fields = struct.unpack_from(ph_fmt, data, e_phoff + i * e_phentsize)
        if is64:
            p_type, _flags, p_offset, p_vaddr, _paddr, p_filesz = fields[:6]
        else:
            p_type, p_offset, p_vaddr, _paddr, p_filesz = fields[:5]
        if p_type == PT_LOAD:
            loads.append((p_vaddr, p_offset, p_filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (p_offset, p_filesz)
        elif p_type == PT_INTERP:
            interp = data[p_offset : p_offset + p_filesz].split(b"\0", 1)[0].decode()
    if dynamic is None:
        return None
    entry_fmt = end + ("qQ" if is64 else "iI")
    size = struct.calcsize(entry_fmt)
    entries: list[tuple[int, int]] = []
    off, limit = dynamic
    for pos in range(off, off + limit, size):
        tag, val = struct.unpack_from(entry_fmt, data, pos)
        if tag == DT_NULL:
            break
        entries.append((tag, val))
    strtab_vaddr = next((v for t, v in entries if t == DT_STRTAB), None)
    if strtab_vaddr is None:
        return None
    strtab = _vaddr_to_offset(strtab_vaddr, loads)

    def string(at: int) -> str:
        start = strtab + at
        end = data.find(b"\0", start)
        if end < 0:
            raise ValueError("dynamic string without its terminating NUL")
        return data[start:end].decode()

    needed = tuple(string(v) for t, v in entries if t == DT_NEEDED)
    runpath: list[str] = []
    for t, v in entries:
        if t in (DT_RPATH, DT_RUNPATH):
            runpath.extend(p for p in string(v).split(":") if p)
    return ElfInfo(interp, needed, tuple(runpath))


def _vaddr_to_offset(vaddr: int, loads: list[tuple[int, int, int]]) -> int:
    for seg_vaddr, seg_offset, seg_filesz in loads:
        if seg_vaddr <= vaddr < seg_vaddr + seg_filesz:
            return vaddr - seg_vaddr + seg_offset
    raise ValueError("address outside every loadable segment")
