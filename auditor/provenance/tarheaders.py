"""A tar reader at the header level: each member's name, link target, type, size and mode, read
only where every common extractor (GNU tar, bsdtar, Python's tarfile) reads them the same.

The proof reads a tar bundle with Python's tarfile; the deployer runs GNU tar or bsdtar. Those
read some headers differently, and would write another tree than the one proven:

- a pax ``GNU.sparse.name`` beside ``path`` (tar takes the sparse name, tarfile the later record),
  and every other ``GNU.sparse.*`` record or sparse member (holes are expanded differently);
- a GNU long name (``L``) together with a pax ``path``, a GNU long link (``K``) together with a
  pax ``linkpath`` (GNU tar takes the pax value, bsdtar the first one read, tarfile the last one);
  two extended headers for one member (tarfile keeps the first, GNU tar the last);
- a prefix field in a header without the POSIX magic ``ustar\\0`` ``00`` (old-GNU, v7): tarfile
  joins it to the name, GNU tar and bsdtar do not;
- bytes in the padding of a long name or pax header (tarfile reads the padded blocks, the others
  the stated size), pax records that do not tile the header exactly, a pax ``hdrcharset``;
- a pax global header that sets anything but a comment (tarfile applies it to every member,
  bsdtar ignores it), and pax keywords the readers do not all know (the proof sees none of them);
- numeric fields that are not plain octal (``0o17``, ``+755``, ``1_0``: tarfile reads a number
  where GNU tar reads base-64 or refuses), negative base-256 sizes, non-decimal pax sizes;
- a link, folder or special member with a non-zero size (tar skips that data, tarfile reads it as
  the next header) and a file whose name ends in ``/`` (tar makes a folder, tarfile a file).

:class:`TarHeaders` is fed the archive's bytes as they stream past (the same bytes tarfile reads)
and records each member as read here; the unpacker checks that tarfile's reading of every member
is this one. A refusal is an :class:`AmbiguousMember` naming the member and both readings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from auditor.provenance.bundleformat import AmbiguousArchive

BLOCK = 512
_META_MAX = 1 << 20  # a long name or pax header larger than this is refused
_POSIX_MAGIC = b"ustar\x0000"
_GNU_MAGIC = b"ustar  \x00"
_REGULAR = (b"0", b"\x00", b"7")
_NO_DATA = (b"1", b"2", b"3", b"4", b"5", b"6")  # links, devices, folders, fifos
#: pax keywords every reader knows and that do not change the extracted tree's names or content
_HARMLESS = frozenset({"mtime", "atime", "ctime", "uid", "gid", "uname", "gname", "comment",
                       "hdrcharset",
                       "SCHILY.dev", "SCHILY.ino", "SCHILY.nlink", "LIBARCHIVE.creationtime"})
_XATTR_PREFIXES = ("SCHILY.xattr.", "LIBARCHIVE.xattr.")
#: extended attributes that grant privileges or change access when GNU tar --xattrs restores them
_XATTR_REFUSED = ("security.", "trusted.", "system.")
_GLOBAL_OK = frozenset({"comment", "mtime"})
_OCTAL = re.compile(rb" *[0-7]+[ \x00]*")
_PAX_LENGTH = re.compile(rb"[1-9][0-9]*")
_KEYWORD = re.compile(r"[!-<>-~]+")  # printable ASCII without '=' or space


class AmbiguousMember(AmbiguousArchive):
    """A member that two extractors read differently; the message names both readings."""


@dataclass(frozen=True)
class Member:
    """A member as every reader reads it (names as tarfile gives them: folders without '/')."""

    offset: int  # where its first header (long name, pax header or its own) begins
    offset_data: int
    name: str
    linkname: str
    type: bytes
    size: int
    mode: int


def _show(raw: bytes | str) -> str:
    text = raw.decode("utf-8", "backslashreplace") if isinstance(raw, bytes) else raw
    return repr(text[:200])


def _nts(raw: bytes) -> bytes:
    return raw.split(b"\x00", 1)[0]


def _number(field: bytes, what: str, where: str, *, allow_empty: bool = False) -> int:
    """A numeric header field, only in forms every reader reads as the same number."""
    if field[:1] == b"\x80":
        return int.from_bytes(field[1:], "big")
    if field[:1] == b"\xff":
        raise AmbiguousMember(f"{where}: its {what} field is a negative base-256 number")
    text = _nts(field)
    if allow_empty and not text.strip():
        return 0
    if not _OCTAL.fullmatch(text):
        raise AmbiguousMember(
            f"{where} is ambiguous: its {what} field {_show(field)} is not plain octal: "
            f"Python's tarfile reads {_python_int(text)}, GNU tar and bsdtar read another value "
            f"or refuse the header")
    return int(text.strip(b" \x00"), 8)


def _python_int(text: bytes) -> str:
    try:
        return str(int(text.strip() or b"0", 8))
    except ValueError:
        return "nothing (it ends the archive there)"


class TarHeaders:
    """Fed the tar's bytes in order (:meth:`feed`); reads each header chain as it completes.

    The first problem is kept (:attr:`problem`, with the offset of the header chain it is in) and
    parsing stops there: the unpacker raises it when tarfile reaches that member, so refusals of
    earlier members come first, in archive order.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0  # tar offset of _buf[0]
        self._skip = 0  # data bytes still to pass over
        self.members: dict[int, Member] = {}  # offset_data -> member
        self.problem: tuple[int, AmbiguousMember] | None = None
        self.end: int | None = None  # offset of the end-of-archive block
        self._chain_start: int | None = None
        self._long: dict[bytes, bytes] = {}  # b"L"/b"K" -> value
        self._pax: list[tuple[str, str]] | None = None
        self._long_first = False  # a long name/link came before the pax header

    def feed(self, data: bytes) -> None:
        if self.problem is not None or self.end is not None:
            return
        view = memoryview(data)
        if self._skip:
            step = min(self._skip, len(view))
            self._skip -= step
            self._pos += step
            view = view[step:]
        self._buf += view
        try:
            self._parse()
        except AmbiguousMember as exc:
            start = self._chain_start if self._chain_start is not None else self._pos
            self.problem = (start, exc)
            self._buf.clear()

    def _parse(self) -> None:
        while self.end is None:
            if self._skip:
                step = min(self._skip, len(self._buf))
                del self._buf[:step]
                self._skip -= step
                self._pos += step
                if self._skip:
                    return
            if len(self._buf) < BLOCK:
                return
            head = bytes(self._buf[:BLOCK])
            if head.count(0) == BLOCK:
                if self._chain_start is not None:
                    raise AmbiguousMember(f"an extended header at offset {self._chain_start} "
                                          f"is followed by the end of the archive, not a member")
                self.end = self._pos
                return
            typ = head[156:157]
            if typ in (b"x", b"g", b"L", b"K", b"X"):
                size = _number(head[124:136], "size", f"the extended header at offset "
                               f"{self._pos}")
                if size > _META_MAX:
                    raise AmbiguousMember(f"an extended header at offset {self._pos} holds "
                                          f"{size} bytes, more than {_META_MAX}")
                total = BLOCK + -(-size // BLOCK) * BLOCK
                if len(self._buf) < total:
                    return
                body = bytes(self._buf[BLOCK:total])
                self._meta(head, typ, body, size)
                del self._buf[:total]
                self._pos += total
                continue
            self._member(head)
            del self._buf[:BLOCK]
            self._pos += BLOCK

    # -- extended headers

    def _meta(self, head: bytes, typ: bytes, body: bytes, size: int) -> None:
        where = f"the extended header at offset {self._pos}"
        _checksum(head, where)
        if body[size:].count(0) != len(body) - size:
            raise AmbiguousMember(
                f"{where} has data in its padding: Python's tarfile reads the padded blocks, "
                f"GNU tar and bsdtar only the {size} bytes its size states")
        data = body[:size]
        if typ == b"X":
            raise AmbiguousMember(f"{where} is a Solaris extended header ('X'), which the "
                                  f"readers do not all apply alike")
        if typ == b"g":
            self._global(data, where)
            return
        if self._chain_start is None:
            self._chain_start = self._pos
        if typ in (b"L", b"K"):
            self._gnu_long(typ, data, where)
        else:
            self._extended(data, where)

    def _global(self, data: bytes, where: str) -> None:
        if self._chain_start is not None:
            raise AmbiguousMember(f"{where}: a pax global header inside another member's "
                                  f"extended headers")
        for key, value in _pax_records(data, where):
            if key not in _GLOBAL_OK:
                raise AmbiguousMember(
                    f"{where}: a pax global header sets {key}={_show(value)}: Python's "
                    f"tarfile applies it to every later member, bsdtar ignores it")

    def _gnu_long(self, typ: bytes, data: bytes, where: str) -> None:
        what = "long name" if typ == b"L" else "long link"
        if typ in self._long:
            raise AmbiguousMember(f"{where}: a second GNU {what} for one member (tarfile "
                                  f"keeps the first, GNU tar the last)")
        value = data.rstrip(b"\x00")
        if not value or b"\x00" in value:
            raise AmbiguousMember(f"{where}: a GNU {what} {_show(data)} with a NUL byte "
                                  f"inside (tarfile reads up to it, bsdtar past it)")
        self._long[typ] = value
        if self._pax is None:
            self._long_first = True

    def _extended(self, data: bytes, where: str) -> None:
        if self._pax is not None:
            raise AmbiguousMember(f"{where}: a second pax extended header for one member "
                                  f"(Python's tarfile keeps the first one's records, GNU tar "
                                  f"and bsdtar the second's)")
        records = _pax_records(data, where)
        seen: set[str] = set()
        for key, value in records:
            if key in seen and key in ("path", "linkpath", "size"):
                raise AmbiguousMember(f"{where}: pax keyword {key} given twice")
            seen.add(key)
            _check_keyword(key, value, where)
        self._pax = records

    # -- members

    def _member(self, head: bytes) -> None:
        start = self._chain_start if self._chain_start is not None else self._pos
        where = f"member {_show(_nts(head[0:100]))} (header at offset {self._pos})"
        _checksum(head, where)
        typ = head[156:157]
        mode = _number(head[100:108], "mode", where)
        size = _number(head[124:136], "size", where)
        pax = dict(self._pax or [])
        text, link_text = self._names(head, pax, where)
        if "size" in pax:
            size = int(pax["size"])
        typ, text = _kind(typ, text, size)
        data_at = self._pos + BLOCK
        self.members[data_at] = Member(offset=start, offset_data=data_at, name=text,
                                       linkname=link_text, type=typ, size=size, mode=mode)
        self._chain_start = None
        self._long = {}
        self._pax = None
        self._long_first = False
        # tarfile passes over the data of regular and unknown members only
        if typ not in _NO_DATA:
            self._skip = -(-size // BLOCK) * BLOCK

    def _names(self, head: bytes, pax: dict[str, str], where: str) -> tuple[str, str]:
        """The member's name and link target, once every reader reads them alike."""
        name = _header_name(head, where)
        long_name, long_link = self._long.get(b"L"), self._long.get(b"K")
        if long_name is not None:
            if "path" in pax:
                first = _show(long_name) if self._long_first else _show(pax["path"])
                raise AmbiguousMember(
                    f"bundle member {_show(long_name)} is ambiguous: Python's tarfile reads "
                    f"{first}, GNU tar reads {_show(pax['path'])}, bsdtar {first} (a GNU long "
                    f"name and a pax path for one member)")
            name = long_name
        link = _nts(head[157:257])
        if long_link is not None:
            if "linkpath" in pax:
                first = _show(long_link) if self._long_first else _show(pax["linkpath"])
                raise AmbiguousMember(
                    f"bundle member {_show(name)} is ambiguous: its link target is {first} to "
                    f"Python's tarfile and bsdtar, {_show(pax['linkpath'])} to GNU tar (a GNU "
                    f"long link and a pax linkpath for one member)")
            link = long_link
        text = pax["path"] if "path" in pax else _decode(name)
        link_text = pax["linkpath"] if "linkpath" in pax else _decode(link)
        return text, link_text


def _header_name(head: bytes, where: str) -> bytes:
    """The name in the header itself: the prefix field joins it only under the POSIX magic."""
    name_raw = _nts(head[0:100])
    magic = head[257:265]
    prefix = _nts(head[345:500])
    if magic == _POSIX_MAGIC:
        return prefix + b"/" + name_raw if prefix else name_raw
    if magic != _GNU_MAGIC and magic[:5] == b"ustar":
        raise AmbiguousMember(f"{where}: unknown tar magic {magic!r}")
    if prefix:
        kind = "an old-GNU" if magic == _GNU_MAGIC else "a non-ustar"
        raise AmbiguousMember(
            f"bundle member {_show(name_raw)} is ambiguous: Python's tarfile reads "
            f"{_show(prefix + b'/' + name_raw)}, GNU tar and bsdtar read "
            f"{_show(name_raw)} ({kind} header with bytes in the ustar prefix field)")
    return name_raw


def _kind(typ: bytes, text: str, size: int) -> tuple[bytes, str]:
    """The member's type and name as tarfile gives them, once every reader reads the type alike."""
    if typ == b"S":
        raise AmbiguousMember(f"bundle member {_show(text)} is a GNU sparse file: the "
                              f"readers expand its holes differently")
    if typ in _NO_DATA and size:
        raise AmbiguousMember(
            f"bundle member {_show(text)} is ambiguous: a {_TYPE_NAMES[typ]} with a size of "
            f"{size}: GNU tar and bsdtar pass over {size} bytes of data after it, Python's "
            f"tarfile reads them as the next header")
    is_dir = typ == b"5" or (typ == b"\x00" and text.endswith("/"))
    if text.endswith("/") and not is_dir:
        raise AmbiguousMember(
            f"bundle member {_show(text)} is ambiguous: Python's tarfile reads a file "
            f"{_show(text.rstrip('/'))}, GNU tar and bsdtar a folder {_show(text)}")
    if is_dir:
        return b"5", text.rstrip("/")
    return (b"0" if typ == b"\x00" else typ), text


_TYPE_NAMES = {b"1": "hard link", b"2": "symlink", b"3": "character device",
               b"4": "block device", b"5": "folder", b"6": "fifo"}


def _decode(raw: bytes) -> str:
    """As tarfile decodes a header name (the writer refuses one that is not UTF-8, by name)."""
    return raw.decode("utf-8", "surrogateescape")


def _checksum(head: bytes, where: str) -> None:
    stored = _number(head[148:156], "checksum", where)
    blanked = head[:148] + b" " * 8 + head[156:]
    unsigned = sum(blanked)
    signed = sum(b - 256 if b > 127 else b for b in blanked)
    if stored not in (unsigned, signed):
        raise AmbiguousMember(f"{where}: bad header checksum")


def _pax_records(data: bytes, where: str) -> list[tuple[str, str]]:
    """The records of a pax header, which must tile its data exactly."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos, pos + 21)
        length_raw = data[pos:space] if space > pos else b""
        if not _PAX_LENGTH.fullmatch(length_raw):
            raise AmbiguousMember(f"{where}: a malformed pax record at byte {pos}")
        end = pos + int(length_raw)
        if end > len(data) or data[end - 1:end] != b"\n":
            raise AmbiguousMember(f"{where}: a pax record at byte {pos} does not end with a "
                                  f"newline where its length says")
        body = data[space + 1:end - 1]
        key_raw, eq, value_raw = body.partition(b"=")
        try:
            key = key_raw.decode("ascii")
        except UnicodeDecodeError:
            raise AmbiguousMember(f"{where}: a pax keyword that is not ASCII") from None
        # as tarfile decodes it (the writer refuses a name that is not UTF-8, by name)
        value = value_raw.decode("utf-8", "surrogateescape")
        if not eq or not _KEYWORD.fullmatch(key):
            raise AmbiguousMember(f"{where}: a malformed pax record {_show(body)}")
        out.append((key, value))
        pos = end
    charsets = [v for k, v in out if k == "hdrcharset"]
    if data.count(b"hdrcharset=") != len(charsets) or len(charsets) > 1 or \
            any(v not in ("BINARY", "ISO-IR 10646 2000 UTF-8") for v in charsets):
        raise AmbiguousMember(f"{where}: a pax hdrcharset that is not one record of a known "
                              f"value (Python's tarfile finds it anywhere in the header, even "
                              f"inside another record's value)")
    return out


def _check_keyword(key: str, value: str, where: str) -> None:
    if key in ("path", "linkpath"):
        if not value or "\x00" in value:
            raise AmbiguousMember(f"{where}: an empty pax {key} or one with a NUL byte")
        return
    if key == "size":
        if not re.fullmatch(r"[0-9]{1,20}", value):
            raise AmbiguousMember(
                f"{where} is ambiguous: pax size {_show(value)} is not a plain decimal number "
                f"(Python's tarfile reads it with int(), GNU tar refuses it)")
        return
    if key.startswith("GNU.sparse."):
        what = ("GNU tar and bsdtar take it as the member's name, Python's tarfile whichever of "
                "it and a path record comes last" if key == "GNU.sparse.name" else "a sparse file, whose holes the "
                "readers expand differently")
        raise AmbiguousMember(f"{where} is ambiguous: pax {key}={_show(value)}: {what}")
    if key.startswith(_XATTR_PREFIXES):
        attr = key.split(".xattr.", 1)[1]
        if attr.startswith(_XATTR_REFUSED):
            raise AmbiguousMember(
                f"{where}: extended attribute {attr}: GNU tar --xattrs and bsdtar -p restore "
                f"it (capabilities, ACLs), and the proof does not see it")
        return
    if key not in _HARMLESS:
        raise AmbiguousMember(f"{where}: pax keyword {key} that the readers do not all know "
                              f"(what it changes is not proven)")
