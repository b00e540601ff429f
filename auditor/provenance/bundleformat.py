"""What kind of archive a bundle file is, decided by its bytes alone, and proof that it is only that.

The format is the magic at offset 0 (gzip, xz, bzip2, zstd, a zip local header) or a ustar tar
header; the file name is never consulted and no format is "tried" first. A file that would read as
two formats is refused, because the proof would be computed over one reading while pip, tar or
unzip install the other:

- a compressed file or a tar whose first block is also a valid tar header, or that also opens as a
  zip (a central directory found from the end of the file, with a local header where it points);
- a zip whose first 512 bytes are also a valid tar header;
- data after the end of the archive: bytes after the last compressed stream (a second stream of the
  same kind is part of the file, as gzip and bzip2 define it), non-zero bytes after the tar's
  end-of-archive block, or a zip whose entries do not lie end to end from offset 0 up to the
  central directory, which must end where the end record begins, which must end the file.

:class:`BundleFormat` records the decision and the evidence for it (audit.json shows both).
"""

from __future__ import annotations

import bz2
import io
import lzma
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import IO, Any


class BadArchive(Exception):
    """The bundle's bytes are refused; the message says why (the caller names the bundle)."""


class AmbiguousArchive(BadArchive):
    """Two common extractors (GNU tar, bsdtar, Python, Info-ZIP unzip) would read a member
    differently: the proof would hold for one reading and the deployment get the other. The
    message names the member and the readings; it is a failed proof, not unreadable input."""


class ArchiveFormat(StrEnum):
    DIRECTORY = "directory"
    TAR = "tar"
    TAR_GZIP = "tar+gzip"
    TAR_XZ = "tar+xz"
    TAR_BZIP2 = "tar+bzip2"
    ZIP = "zip"


@dataclass(frozen=True)
class BundleFormat:
    format: ArchiveFormat
    evidence: str

    def to_json(self) -> dict[str, str]:
        return {"format": self.format.value, "evidence": self.evidence}


#: compression -> (magic at offset 0, the archive format it makes)
_COMPRESSED: dict[str, tuple[bytes, ArchiveFormat]] = {
    "gzip": (b"\x1f\x8b\x08", ArchiveFormat.TAR_GZIP),
    "xz": (b"\xfd7zXZ\x00", ArchiveFormat.TAR_XZ),
    "bzip2": (b"BZh", ArchiveFormat.TAR_BZIP2),
}
_ZSTD = b"\x28\xb5\x2f\xfd"
_ZIP_LOCAL = b"PK\x03\x04"
_ZIP_END = b"PK\x05\x06"
_ZIP64_END = b"PK\x06\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP_CENTRAL = b"PK\x01\x02"
_ZIP_DESCRIPTOR = b"PK\x07\x08"


def _decompressor(compression: str) -> Any:
    if compression == "gzip":
        return zlib.decompressobj(wbits=31)
    if compression == "xz":
        return lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    return bz2.BZ2Decompressor()


def compression_of(head: bytes) -> str | None:
    for name, (magic, _) in _COMPRESSED.items():
        if head.startswith(magic) and (name != "bzip2" or head[3:4] in b"123456789"):
            return name
    return None


def is_tar_header(block: bytes) -> bool:
    """True when ``block`` is a tar header tarfile would accept (its checksum holds)."""
    if len(block) < 512 or block[:512].count(0) == 512:
        return False
    try:
        tarfile.TarInfo.frombuf(block[:512], "utf-8", "surrogateescape")
    except tarfile.HeaderError:
        return False
    return True


def opens_as_zip(fh: IO[bytes]) -> int:
    """How many entries a zip reader finds in ``fh`` (0: it is not a zip), counting only entries
    whose local header is where the central directory says."""
    try:
        fh.seek(0)
        with zipfile.ZipFile(fh) as zf:
            found = 0
            for info in zf.infolist()[:64]:
                fh.seek(info.header_offset)
                if fh.read(4) == _ZIP_LOCAL:
                    found += 1
            return found
    except Exception:  # any failure to read it as a zip means it is not one
        return 0
    finally:
        fh.seek(0)


def sniff(head: bytes) -> tuple[ArchiveFormat, str, str | None]:
    """The format by the first bytes: (format, evidence, compression)."""
    compression = compression_of(head)
    if compression is not None:
        return _COMPRESSED[compression][1], f"{compression} magic at offset 0", compression
    if head.startswith(_ZSTD):
        raise BadArchive("zstd-compressed (magic 28 b5 2f fd at offset 0); zstd bundles are not "
                         "supported: recompress it as .tar.gz or .tar.xz")
    if head.startswith(_ZIP_LOCAL):
        return ArchiveFormat.ZIP, "zip local-header magic at offset 0", None
    if head.startswith(_ZIP_END):
        raise BadArchive("the zip archive is empty (only an end record)")
    if head[257:262] == b"ustar" and is_tar_header(head):
        return ArchiveFormat.TAR, "ustar header at offset 0 (magic at 257, checksum holds)", None
    if is_tar_header(head):
        raise BadArchive("a pre-POSIX (v7) tar without the ustar magic; recreate it with a "
                         "current tar or git archive")
    raise BadArchive(f"not an archive this tool reads: no gzip, xz, bzip2, zstd, zip or ustar tar "
                     f"magic at the start (first bytes {head[:8].hex(' ')})")


def refuse_second_reading(fmt: ArchiveFormat, head: bytes, fh: IO[bytes]) -> str:
    """Refuse a file that another reader would take as another format; the evidence otherwise."""
    if fmt is not ArchiveFormat.TAR and is_tar_header(head):
        raise BadArchive(f"read as {fmt.value} by its magic, but its first block is also a valid "
                         f"tar header: a polyglot")
    if fmt is not ArchiveFormat.ZIP:
        entries = opens_as_zip(fh)
        if entries:
            raise BadArchive(f"read as {fmt.value} by its magic, but it also opens as a zip "
                             f"archive ({entries} entr{'y' if entries == 1 else 'ies'} found from "
                             f"its end): a polyglot")
        return "does not open as a zip"
    return "not a tar header"


# ---------------------------------------------------------------- compressed streams


class Decompressed(io.RawIOBase):
    """The decompressed bytes of ``fh`` (or its raw bytes when ``compression`` is None).

    Concatenated streams of the same kind are read as one (gzip and bzip2 define it so); any
    other byte after the last stream is refused. At most ``limit`` bytes are delivered. The last
    :data:`WINDOW` delivered bytes are kept, so what a reader consumed past a point can be
    inspected afterwards; ``observer`` sees every delivered byte once, in order.
    """

    WINDOW = 1 << 20

    def __init__(self, fh: IO[bytes], compression: str | None, limit: int,
                 too_much: Callable[[], Exception],
                 observer: Callable[[bytes], None] | None = None) -> None:
        self.fh = fh
        self.observer = observer  # given every delivered byte once, in order
        self.compression = compression
        self.limit = limit
        self.too_much = too_much
        self.delivered = 0
        self.window = bytearray()
        self.streams = 0
        self.stream_end = 0  # compressed offset where the last stream ended
        self._dec: Any = None
        self._pending = b""  # compressed bytes not yet given to the decompressor
        self._fed = 0  # compressed bytes read from the file so far
        self._done = False
        self._replay = b""

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer at the end), delivered again by the next reads."""
        data = b""
        while len(data) < n and (chunk := self._take(n - len(data))):
            data += chunk
        self._replay = data
        return data

    def readable(self) -> bool:
        return True

    def _next_stream(self) -> None:
        assert self.compression is not None
        magic = _COMPRESSED[self.compression][0]
        if len(self._pending) < len(magic):
            more = self.fh.read(len(magic) - len(self._pending))
            self._fed += len(more)
            self._pending += more
        if not self._pending:
            self._done = True
            return
        if not self._pending.startswith(magic):
            rest = self.fh.seek(0, io.SEEK_END) - self.stream_end
            raise BadArchive(f"{rest} byte(s) after the end of the {self.compression} stream at "
                             f"offset {self.stream_end}: data appended after the archive")
        self._dec = _decompressor(self.compression)
        self.streams += 1

    def _produce(self, n: int) -> bytes:
        if self.compression is None:
            data = self.fh.read(n)
            self._done = not data
            return data
        while not self._done:
            if self._dec is None:
                self._next_stream()
                continue
            if self._dec.eof:
                # what follows the stream is unused_data (zlib may also leave a copy of it as
                # unconsumed_tail when output was limited: unused_data is the one to trust)
                self._pending = self._dec.unused_data
                self.stream_end = self._fed - len(self._pending)
                self._dec = None
                continue
            hungry = self.compression == "gzip" or self._dec.needs_input
            if hungry and not self._pending:
                self._pending = self.fh.read(1 << 16)
                self._fed += len(self._pending)
                if not self._pending:
                    raise BadArchive(f"the {self.compression} stream is truncated (it ends "
                                     f"before its end marker)")
            out = self._dec.decompress(self._pending, n)
            if self.compression == "gzip":  # zlib hands back what it did not consume
                self._pending = self._dec.unconsumed_tail
            else:
                self._pending = b""
            if out:
                return bytes(out)
        return b""

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        if self._replay:
            data, self._replay = self._replay[: len(buf)], self._replay[len(buf):]
        else:
            data = self._take(len(buf))
        buf[: len(data)] = data
        return len(data)

    def _take(self, n: int) -> bytes:
        try:
            data = self._produce(n)
        except (zlib.error, lzma.LZMAError, OSError, EOFError) as exc:
            raise BadArchive(f"corrupt {self.compression} stream: {exc}") from None
        self.delivered += len(data)
        if self.delivered > self.limit:
            raise self.too_much()
        if self.observer is not None and data:
            self.observer(data)
        self.window += data
        if len(self.window) > 2 * self.WINDOW:
            del self.window[: len(self.window) - self.WINDOW]
        return data

    def since(self, offset: int) -> bytes:
        """The delivered bytes from ``offset`` on (it must lie within the window)."""
        back = self.delivered - offset
        if back < 0 or back > len(self.window):
            raise BadArchive("the archive's end could not be located")
        return bytes(self.window[len(self.window) - back:]) if back else b""


def check_tar_tail(dec: Decompressed, end: int) -> str:
    """Everything after the tar's end (``end``: where its end-of-archive block begins) must be
    zero bytes up to the end of the data; the compressed side must end there too."""
    zeros = 0
    tail = dec.since(end)
    while True:
        if tail.count(0) != len(tail):
            at = end + zeros + next(i for i, b in enumerate(tail) if b)
            raise BadArchive(f"non-zero data after the tar end-of-archive block (at offset {at} "
                             f"of the tar): data hidden after the archive")
        zeros += len(tail)
        tail = dec.read(1 << 16) or b""
        if not tail:
            break
    what = (f"tar end-of-archive at offset {end}, then {zeros} zero bytes"
            if zeros else f"the tar data ends at offset {end} without end-of-archive blocks")
    if dec.compression is not None:
        streams = f"{dec.streams} {dec.compression} stream{'s' if dec.streams != 1 else ''}"
        return f"{streams}, ending at byte {dec.stream_end} = end of file; {what}; nothing after"
    return f"{what} = end of file; nothing after"


# ---------------------------------------------------------------- zip layout


def _u16(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<H", b, at)[0])


def _u32(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<I", b, at)[0])


def _u64(b: bytes, at: int) -> int:
    return int(struct.unpack_from("<Q", b, at)[0])


@dataclass(frozen=True)
class _Central:
    name: bytes
    flags: int
    compressed: int
    offset: int
    zip64: bool


def _zip64_extra(extra: bytes, want: list[str], values: dict[str, int]) -> None:
    i = 0
    while i + 4 <= len(extra):
        tag, size = _u16(extra, i), _u16(extra, i + 2)
        body = extra[i + 4: i + 4 + size]
        if tag == 1:
            j = 0
            for key in want:
                if j + 8 > len(body):
                    raise BadArchive("a zip64 extra field is too short")
                values[key] = _u64(body, j)
                j += 8
            return
        i += 4 + size
    if want:
        raise BadArchive("a zip entry needs a zip64 extra field and has none")


def check_zip_layout(fh: IO[bytes], size: int) -> str:
    """The zip's parts must tile the file: entries end to end from offset 0, then the central
    directory, then (zip64 records and) the end record, which ends the file."""
    end_at, rec = _end_record(fh, size)
    end = _zip64_end(fh, end_at) if rec.zip64 else rec
    if end.disk or end.cd_disk or end.on_disk != end.total:
        raise BadArchive("a multi-disk (split) zip archive")
    cd_offset, cd_size = end.cd_offset, end.cd_size
    if cd_offset + cd_size != end.cd_end:
        gap = end.cd_end - cd_offset - cd_size
        raise BadArchive(f"the zip central directory (offset {cd_offset}, {cd_size} bytes) does "
                         f"not end where the end record begins ({end.cd_end}; {gap} bytes apart): "
                         f"data prepended to or inside the zip")
    fh.seek(cd_offset)
    entries = _central_entries(fh.read(cd_size), cd_offset, end.total)
    _check_entries_tile(fh, entries, cd_offset)
    kind = "zip64 " if rec.zip64 else ""
    return (f"{len(entries)} entries end to end from offset 0; {kind}central directory at "
            f"{cd_offset}..{cd_offset + cd_size}; end record at {end_at}, ending the file")


@dataclass(frozen=True)
class _EndRecord:
    """What the (zip64) end of central directory record says."""

    disk: int
    cd_disk: int
    on_disk: int
    total: int
    cd_size: int
    cd_offset: int
    cd_end: int  # where the central directory must end: at the (zip64) end record
    zip64: bool  # the classic record defers to a zip64 one


def _end_record(fh: IO[bytes], size: int) -> tuple[int, _EndRecord]:
    """The offset and content of the end record that ends the file."""
    tail_len = min(size, 22 + 0xFFFF)
    fh.seek(size - tail_len)
    tail = fh.read(tail_len)
    end_at = -1
    pos = tail.rfind(_ZIP_END)
    while pos >= 0:
        if pos + 22 <= len(tail) and pos + 22 + _u16(tail, pos + 20) == len(tail):
            end_at = size - tail_len + pos
            break
        pos = tail.rfind(_ZIP_END, 0, pos)
    if end_at < 0:
        raise BadArchive("no zip end record ends the file: data appended after the zip "
                         "archive")
    rec = tail[end_at - (size - tail_len): end_at - (size - tail_len) + 22]
    disk, cd_disk, on_disk, total = _u16(rec, 4), _u16(rec, 6), _u16(rec, 8), _u16(rec, 10)
    cd_size, cd_offset = _u32(rec, 12), _u32(rec, 16)
    zip64 = 0xFFFF in (disk, cd_disk, on_disk, total) or 0xFFFFFFFF in (cd_size, cd_offset)
    return end_at, _EndRecord(disk, cd_disk, on_disk, total, cd_size, cd_offset, end_at, zip64)


def _zip64_end(fh: IO[bytes], end_at: int) -> _EndRecord:
    """The zip64 end record, which must lie right before its locator, right before ``end_at``."""
    if end_at < 20:
        raise BadArchive("a zip64 archive without its locator")
    fh.seek(end_at - 20)
    loc = fh.read(20)
    if not loc.startswith(_ZIP64_LOCATOR):
        raise BadArchive("a zip64 archive without its locator")
    rec64_at = _u64(loc, 8)
    fh.seek(rec64_at)
    rec64 = fh.read(56)
    if len(rec64) < 56 or not rec64.startswith(_ZIP64_END) or \
            rec64_at + 12 + _u64(rec64, 4) != end_at - 20:
        raise BadArchive("the zip64 end record is not right before its locator")
    return _EndRecord(_u32(rec64, 16), _u32(rec64, 20), _u64(rec64, 24), _u64(rec64, 32),
                      _u64(rec64, 40), _u64(rec64, 48), rec64_at, True)


def _central_entries(cd: bytes, cd_offset: int, total: int) -> list[_Central]:
    """The central directory's entries; exactly ``total`` of them must fill it."""
    entries: list[_Central] = []
    i = 0
    while i < len(cd):
        if not cd.startswith(_ZIP_CENTRAL, i) or i + 46 > len(cd):
            raise BadArchive(f"a malformed zip central directory entry at offset {cd_offset + i}")
        flags, comp = _u16(cd, i + 8), _u32(cd, i + 20)
        usize, n, e, c = _u32(cd, i + 24), _u16(cd, i + 28), _u16(cd, i + 30), _u16(cd, i + 32)
        off = _u32(cd, i + 42)
        name = cd[i + 46: i + 46 + n]
        extra = cd[i + 46 + n: i + 46 + n + e]
        values = {"usize": usize, "comp": comp, "off": off}
        want = [k for k in ("usize", "comp", "off") if values[k] == 0xFFFFFFFF]
        _zip64_extra(extra, want, values)
        entries.append(_Central(name, flags, values["comp"], values["off"], bool(want)))
        i += 46 + n + e + c
    if i != len(cd) or len(entries) != total:
        raise BadArchive(f"the zip central directory lists {len(entries)} entries, its end record "
                         f"says {total}")
    return entries


def _check_entries_tile(fh: IO[bytes], entries: list[_Central], cd_offset: int) -> None:
    """Each entry's local header and data right after the previous one's, from offset 0 to the
    central directory."""
    at = 0
    for entry in sorted(entries, key=lambda x: x.offset):
        if entry.offset != at:
            what = ("data prepended to the zip" if at == 0 else
                    "entries that overlap or leave a gap")
            raise BadArchive(f"zip entry {entry.name!r} starts at offset {entry.offset}, "
                             f"expected {at}: {what}")
        fh.seek(at)
        local = fh.read(30)
        if len(local) < 30 or not local.startswith(_ZIP_LOCAL):
            raise BadArchive(f"no zip local header at offset {at} for {entry.name!r}")
        n, e = _u16(local, 26), _u16(local, 28)
        if fh.read(n) != entry.name:
            raise BadArchive(f"the zip local header at offset {at} names another file than the "
                             f"central directory ({entry.name!r})")
        at += 30 + n + e + entry.compressed
        if entry.flags & 0x08:
            at = _after_descriptor(fh, at, entry)
    if at != cd_offset:
        raise BadArchive(f"{cd_offset - at} bytes between the last zip entry and the central "
                         f"directory: data hidden inside the zip")


def _after_descriptor(fh: IO[bytes], at: int, entry: _Central) -> int:
    """The offset after an entry's data descriptor (12 or 16 bytes, 20 or 24 for zip64)."""
    fh.seek(at)
    head = fh.read(4)
    body = 20 if entry.zip64 else 12
    return at + body + (4 if head == _ZIP_DESCRIPTOR else 0)
