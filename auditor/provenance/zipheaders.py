"""A zip bundle's members read only where Python's zipfile and Info-ZIP's unzip agree.

The proof reads a zip bundle with Python's zipfile; the deployer runs ``unzip``, which reads some
members differently and writes another tree:

- an Info-ZIP Unicode Path extra field (0x7075) names the file for unzip; zipfile ignores it;
- a name with bytes beyond ASCII and without the UTF-8 flag: zipfile decodes it as cp437, unzip
  writes the bytes as they are; a backslash, which unzip may take as a folder separator;
- a local header that says another thing than the central directory (flags, method, CRC, sizes,
  extra fields): each reader trusts another copy;
- a deflate stream that holds more (or less) than the declared size: zipfile stops at the
  declared size, unzip writes the whole stream; bytes after the stream's end inside the member;
- an entry whose Unix mode says folder but whose name has no trailing ``/`` (a folder to zipfile,
  a file to unzip), or a folder with data; an entry made on a non-Unix system whose attributes
  carry execute or special mode bits on a file or folder (unzip may apply them, zipfile reads
  none; a link is a link on any system, as :mod:`auditor.zipsafety` reads it);
- compression methods other than stored and deflate, encryption, extra fields unzip may read and
  this reader does not know (named by their id).

:func:`check_member` refuses those before anything is read; :class:`MemberStream` is the one
reader of a member's data, which decompresses the stored bytes itself and refuses a stream whose
length, end or CRC is not what the headers state. Refusals are
:class:`~auditor.provenance.bundleformat.AmbiguousArchive` (readings differ) or
:class:`~auditor.provenance.bundleformat.BadArchive` (the member is corrupt).
"""

from __future__ import annotations

import io
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO

from auditor.provenance.bundleformat import AmbiguousArchive, BadArchive

_LOCAL = b"PK\x03\x04"
_UNICODE_PATH = 0x7075
#: extra fields that do not change a member's name, type, size, mode or content for unzip
_HARMLESS_EXTRA = frozenset({
    0x0001,  # zip64 sizes (checked against the central directory)
    0x000A,  # NTFS times
    0x5455,  # extended timestamp
    0x5855,  # Info-ZIP Unix (old: times and ids)
    0x7855,  # Info-ZIP Unix ids
    0x7875,  # Info-ZIP Unix ids (new)
    0x6375,  # Info-ZIP Unicode comment
    0xCAFE,  # jar marker
})
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_CHUNK = 1 << 16


def _show(name: str) -> str:
    return repr(name[:200])


@dataclass(frozen=True)
class Local:
    """What a member's local header says, and where its data begins."""

    flags: int
    method: int
    crc: int
    compressed: int
    size: int
    extra: bytes
    data_offset: int


def _extras(extra: bytes, where: str) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    i = 0
    while i < len(extra):
        if i + 4 > len(extra):
            raise AmbiguousArchive(f"{where}: a truncated extra field")
        tag, size = struct.unpack_from("<HH", extra, i)
        if i + 4 + size > len(extra):
            raise AmbiguousArchive(f"{where}: extra field 0x{tag:04x} runs past its end")
        if tag in out:
            raise AmbiguousArchive(f"{where}: extra field 0x{tag:04x} appears twice")
        out[tag] = extra[i + 4: i + 4 + size]
        i += 4 + size
    return out


def _unicode_path(body: bytes, name: str, where: str) -> None:
    """An Info-ZIP Unicode Path field must name the file exactly as the header does."""
    if len(body) < 5 or body[0] != 1:
        raise AmbiguousArchive(f"{where}: a malformed Unicode Path extra field (0x7075)")
    try:
        uname = body[5:].decode("utf-8")
    except UnicodeDecodeError:
        raise AmbiguousArchive(f"{where}: a Unicode Path extra field that is not UTF-8") from None
    if uname != name:
        raise AmbiguousArchive(
            f"bundle member {_show(name)} is ambiguous: Python's zipfile reads {_show(name)}, "
            f"unzip reads {_show(uname)} (an Info-ZIP Unicode Path extra field, 0x7075)")


def _check_extra(extra: bytes, name: str, where: str) -> dict[int, bytes]:
    fields = _extras(extra, where)
    for tag, body in fields.items():
        if tag == _UNICODE_PATH:
            _unicode_path(body, name, where)
        elif tag not in _HARMLESS_EXTRA:
            raise AmbiguousArchive(f"{where}: extra field 0x{tag:04x}, which unzip may read "
                                   f"(what it changes is not proven)")
    return fields


def read_local(fh: IO[bytes], info: zipfile.ZipInfo) -> Local:
    fh.seek(info.header_offset)
    head = fh.read(30)
    if len(head) < 30 or not head.startswith(_LOCAL):
        raise BadArchive(f"no zip local header for {_show(info.filename)}")
    flags, method, _time, _date, crc, comp, size, n, e = struct.unpack_from("<HHHHIIIHH",
                                                                            head, 6)
    fh.seek(n, io.SEEK_CUR)
    extra = fh.read(e)
    fields = _extras(extra, f"the local header of {_show(info.filename)}")
    if 0xFFFFFFFF in (comp, size) and 0x0001 in fields:
        z64 = fields[0x0001]
        if size == 0xFFFFFFFF and len(z64) >= 8:
            size = int.from_bytes(z64[:8], "little")
            z64 = z64[8:]
        if comp == 0xFFFFFFFF and len(z64) >= 8:
            comp = int.from_bytes(z64[:8], "little")
    return Local(flags, method, crc, comp, size, extra, info.header_offset + 30 + n + e)


def check_member(fh: IO[bytes], info: zipfile.ZipInfo, is_folder: bool) -> Local:
    """Refuse a member zipfile and unzip would read differently; its local header otherwise."""
    name = info.filename
    where = f"bundle member {_show(name)}"
    utf8 = bool(info.flag_bits & 0x800)
    if not utf8 and any(ord(c) > 0x7F for c in info.orig_filename):
        raw = info.orig_filename.encode("cp437", "replace")
        raise AmbiguousArchive(
            f"{where} is ambiguous: its name has bytes beyond ASCII without the UTF-8 flag: "
            f"Python's zipfile reads {_show(name)} (cp437), unzip writes the bytes "
            f"{_show(raw.decode('utf-8', 'backslashreplace'))}")
    if "\x00" in info.orig_filename:
        raise AmbiguousArchive(f"{where} is ambiguous: its name holds a NUL byte (Python's "
                               f"zipfile cuts it there)")
    if "\\" in name:
        raise AmbiguousArchive(f"{where} is ambiguous: a backslash in the name, which unzip may "
                               f"take as a folder separator")
    if info.flag_bits & 0x1:
        raise AmbiguousArchive(f"{where} is encrypted")
    if info.compress_type not in _METHODS:
        raise AmbiguousArchive(f"{where} uses compression method {info.compress_type}; only "
                               f"stored and deflate read the same everywhere")
    _check_extra(info.extra, name, f"{where} (central directory)")
    local = read_local(fh, info)
    _check_extra(local.extra, name, f"{where} (local header)")
    _same_headers(info, local, where)
    _check_kind(info, is_folder, where)
    return local


def _same_headers(info: zipfile.ZipInfo, local: Local, where: str) -> None:
    mismatch = []
    if (local.flags & 0x0809) != (info.flag_bits & 0x0809):
        mismatch.append(f"flags {local.flags:#x} / {info.flag_bits:#x}")
    if local.method != info.compress_type:
        mismatch.append(f"method {local.method} / {info.compress_type}")
    if not info.flag_bits & 0x08:
        for what, ours, theirs in (("CRC", local.crc, info.CRC),
                                   ("compressed size", local.compressed, info.compress_size),
                                   ("size", local.size, info.file_size)):
            if ours != theirs:
                mismatch.append(f"{what} {ours} / {theirs}")
    if mismatch:
        raise AmbiguousArchive(f"{where} is ambiguous: its local header and the central "
                               f"directory disagree ({'; '.join(mismatch)}; local / central)")


def _check_kind(info: zipfile.ZipInfo, is_folder: bool, where: str) -> None:
    mode = info.external_attr >> 16
    ftype = stat.S_IFMT(mode)
    if info.create_system == 3 and ftype == stat.S_IFDIR and not info.filename.endswith("/"):
        raise AmbiguousArchive(f"{where} is ambiguous: its mode says folder but its name has no "
                               f"trailing '/': Python's zipfile reads a folder, unzip a file")
    if is_folder and info.file_size:
        raise AmbiguousArchive(f"{where} is a folder with {info.file_size} bytes of data")
    if info.create_system != 3 and ftype != stat.S_IFLNK and mode & 0o7111:
        raise AmbiguousArchive(
            f"{where} is ambiguous: made on system {info.create_system} (not Unix) with Unix "
            f"mode {mode & 0o7777:o} in its attributes: unzip may apply it, Python's zipfile "
            f"reads no mode")


class MemberStream(io.RawIOBase):
    """A member's data, decompressed here from its stored bytes; refused at the end unless the
    stream ended exactly with its stored bytes, gave exactly the declared size and CRC."""

    def __init__(self, fh: IO[bytes], info: zipfile.ZipInfo, local: Local) -> None:
        self.fh = fh
        self.info = info
        self.at = local.data_offset
        self.left = info.compress_size
        self.out = 0
        self.crc = 0
        self.dec = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
        self.pending = b""
        self.finished = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self._next(len(buf))
        buf[: len(data)] = data
        return len(data)

    def _raw(self, n: int) -> bytes:
        """Up to ``n`` more stored bytes (b"" once all are read)."""
        if not self.left:
            return b""
        self.fh.seek(self.at)
        chunk = self.fh.read(min(n, self.left))
        if not chunk:
            raise BadArchive(f"bundle member {_show(self.info.filename)} is truncated")
        self.at += len(chunk)
        self.left -= len(chunk)
        return chunk

    def _next(self, n: int) -> bytes:
        while not self.finished:
            if self.dec is None:
                data = self._raw(min(n, _CHUNK))
                if not data:
                    self._finish()
                    return b""
                return self._count(data)
            if self.dec.eof:
                self._finish()
                return b""
            if not self.pending:
                self.pending = self._raw(_CHUNK)
                if not self.pending:
                    self._finish()  # the stored bytes ended before the stream did
                    return b""
            try:
                data = self.dec.decompress(self.pending, n)
            except zlib.error as exc:
                raise BadArchive(f"bundle member {_show(self.info.filename)}: corrupt deflate "
                                 f"data ({exc})") from None
            self.pending = self.dec.unconsumed_tail
            if data:
                return self._count(data)
        return b""

    def _count(self, data: bytes) -> bytes:
        self.out += len(data)
        if self.out > self.info.file_size:
            raise AmbiguousArchive(
                f"bundle member {_show(self.info.filename)} is ambiguous: its data holds more "
                f"than the {self.info.file_size} bytes declared: Python's zipfile stops there, "
                f"unzip writes the whole stream")
        self.crc = zlib.crc32(data, self.crc)
        return data

    def _finish(self) -> None:
        self.finished = True
        name = _show(self.info.filename)
        if self.dec is not None:
            if not self.dec.eof:
                raise BadArchive(f"bundle member {name}: the deflate stream is truncated")
            rest = self.left + len(self.dec.unused_data) + len(self.pending)
            if rest:
                raise AmbiguousArchive(
                    f"bundle member {name} is ambiguous: {rest} stored byte(s) after the end of "
                    f"its deflate stream")
        if self.out != self.info.file_size:
            raise AmbiguousArchive(
                f"bundle member {name} is ambiguous: its data holds {self.out} bytes, its "
                f"header declares {self.info.file_size}")
        if self.crc != self.info.CRC:
            raise BadArchive(f"bundle member {name}: bad CRC")
