"""Checks of an untrusted zip's members, made before any member is read or extracted.

Three readers take zips from outside: the bundle (:mod:`auditor.provenance.unpack`), the official
wheel (:mod:`auditor.rebuild.wheel`) and a downloaded OSV snapshot (:mod:`auditor.deps.vulns.fetch`).
They refuse the same hostile shapes by the same rules, kept here:

- more members than the reader's limit, a member whose declared size is over the per-member limit,
  or declared sizes that add up to more than the total limit;
- a device, fifo or socket; a symbolic link unless the reader writes links itself and checks their
  targets (the bundle does);
- where the reader names files by the member names as they are (the wheel, the snapshot): a name
  that is empty, absolute (``/x``, ``C:x``), holds a backslash (unzip reads it as a folder
  separator), a NUL byte, or an empty, ``.`` or ``..`` part; and two members of one name (readers
  disagree on which one wins). The bundle maps names through ``strip_components`` and checks them
  there, for tar and folder bundles alike;
- while reading (:func:`read_checked`), a member that yields more bytes than it declares.

A member's type is read from the Unix mode in the high 16 bits of its external attributes whenever
they hold one, whatever system the zip says made it: Info-ZIP's unzip honours that mode for several
systems besides Unix, so a link or a device must not pass as a plain file because of that field.
A refusal is an :class:`UnsafeZip` whose message names the member; the caller names the archive.
"""

from __future__ import annotations

import re
import stat
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum

CHUNK = 1 << 20


class UnsafeZip(Exception):
    """A member (or the member list) is refused; the message says which and why."""


class MemberKind(StrEnum):
    FOLDER = "folder"
    FILE = "file"
    SYMLINK = "symlink"
    SPECIAL = "special"  # device, fifo or socket


@dataclass(frozen=True)
class ZipLimits:
    """The reader's limits, and what its messages call each, written before the number
    ("the limit", or a spec key such as "max_files =")."""

    members: int
    member_bytes: int
    total_bytes: int
    members_name: str = "the limit"
    member_bytes_name: str = "the limit"
    total_bytes_name: str = "the limit"


def show(name: str) -> str:
    """A member name for a message: quoted, escapes visible, at most 120 characters."""
    return repr(name[:120])


def unix_mode(info: zipfile.ZipInfo) -> int:
    """The member's Unix mode (type and permission bits) when the zip was made on Unix, else 0."""
    return info.external_attr >> 16 if info.create_system == 3 else 0


def member_kind(info: zipfile.ZipInfo) -> MemberKind:
    """What the member is: a folder (its name ends in ``/``, or its mode says so), a symlink or
    a device/fifo/socket (by the mode's file type on any system), else a file."""
    ftype = stat.S_IFMT(info.external_attr >> 16)
    unix = info.create_system == 3
    if info.is_dir() or (unix and ftype == stat.S_IFDIR):
        return MemberKind.FOLDER
    if ftype == stat.S_IFLNK:
        return MemberKind.SYMLINK
    if ftype not in (0, stat.S_IFREG, stat.S_IFDIR):
        return MemberKind.SPECIAL
    return MemberKind.FILE


def unsafe_name(name: str) -> str | None:
    """Why a member name cannot be used as a relative path as it is, or None."""
    path = name[:-1] if name.endswith("/") else name
    if not path:
        return "is empty"
    if "\0" in path:
        return "contains a NUL byte"
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        return "is an absolute path"
    if "\\" in path:
        return "contains a backslash"
    if any(p in ("", ".", "..") for p in path.split("/")):
        return "has an empty, '.' or '..' part"
    return None


def check_members(zf: zipfile.ZipFile, limits: ZipLimits, *, symlinks: bool = False,
                  names: bool = True) -> list[tuple[zipfile.ZipInfo, MemberKind]]:
    """Every member with its kind, once each is checked (see the module's list); ``symlinks``:
    links are allowed (the caller checks their targets); ``names``: names and duplicates are
    checked here (the caller uses the names as they are)."""
    infos = zf.infolist()
    if len(infos) > limits.members:
        raise UnsafeZip(f"{len(infos)} members, more than {limits.members_name} "
                        f"{limits.members}")
    out: list[tuple[zipfile.ZipInfo, MemberKind]] = []
    seen: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        if names:
            why = unsafe_name(name)
            if why is not None:
                raise UnsafeZip(f"unsafe member name {show(name)} (an unsafe path: it {why})")
            if name in seen:
                raise UnsafeZip(f"member {show(name)} appears more than once")
            seen.add(name)
        kind = member_kind(info)
        if kind is MemberKind.SPECIAL:
            raise UnsafeZip(f"member {show(name)} is a device, fifo or socket")
        if kind is MemberKind.SYMLINK and not symlinks:
            raise UnsafeZip(f"member {show(name)} is a link")
        if info.file_size > limits.member_bytes:
            raise UnsafeZip(f"member {show(name)} is {info.file_size} bytes, more than "
                            f"{limits.member_bytes_name} {limits.member_bytes}")
        total += info.file_size
        if total > limits.total_bytes:
            raise UnsafeZip(f"the members declare more than {limits.total_bytes_name} "
                            f"{limits.total_bytes} bytes in all")
        out.append((info, kind))
    return out


def read_checked(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's bytes in chunks; UnsafeZip as soon as it yields more than it declares."""
    size = 0
    with zf.open(info) as src:
        while chunk := src.read(CHUNK):
            size += len(chunk)
            if size > info.file_size:
                raise UnsafeZip(f"member {show(info.filename)} is larger than declared")
            yield chunk
