"""What deserves a reviewer's eye even when the hashes match.

Looked at only where the bundle differs from upstream (the series' doing, or the bundle's):
binaries by content (ELF, PE, Mach-O, zip/wheel, pickle, PyTorch, safetensors, GGUF, NumPy, or any
other non-text data), newly executable files, symlinks, submodule (gitlink) changes, Git LFS
pointers, ``.gitattributes`` filters and archive attributes; plus a ``.git`` inside the bundle and
the differences that ``git archive`` explained; and, for every bundle entry, mode bits git cannot
hold (setuid, setgid, sticky, world-writable), which a root extraction that keeps modes applies. Each anomaly names the series commit that
introduced the path, or None when only the bundle has that content.
"""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

from auditor.gitio import TreeEntry
from auditor.model import BundleFile, Severity
from auditor.provenance.bundlefiles import BundleFiles
from auditor.provenance.compare import Difference, display
from auditor.provenance.gitview import ProofGit
from auditor.provenance.treehash import MODE_EXEC, MODE_GITLINK, MODE_SYMLINK
from auditor.provenance.unpack import SpecialMode

_SNIFF_BYTES = 64 * 1024


class AnomalyKind(StrEnum):
    BINARY_ADDED = "binary-added"
    OPAQUE_ADDED = "opaque-file-added"
    EXECUTABLE = "executable-bit"
    SYMLINK = "symlink"
    GITLINK = "gitlink"
    ATTRIBUTES = "gitattributes"
    LFS_POINTER = "lfs-pointer"
    GIT_DIR = "git-dir-in-bundle"
    ARCHIVE_EFFECT = "archive-effect"
    SETUID = "setuid-bit"
    SETGID = "setgid-bit"
    STICKY = "sticky-bit"
    WORLD_WRITABLE = "world-writable"


SEVERITY: Mapping[AnomalyKind, Severity] = {
    AnomalyKind.BINARY_ADDED: Severity.HIGH,
    AnomalyKind.OPAQUE_ADDED: Severity.MEDIUM,
    AnomalyKind.EXECUTABLE: Severity.LOW,
    AnomalyKind.SYMLINK: Severity.LOW,
    AnomalyKind.GITLINK: Severity.MEDIUM,
    AnomalyKind.ATTRIBUTES: Severity.MEDIUM,
    AnomalyKind.LFS_POINTER: Severity.MEDIUM,
    AnomalyKind.GIT_DIR: Severity.MEDIUM,
    AnomalyKind.ARCHIVE_EFFECT: Severity.LOW,
    AnomalyKind.SETUID: Severity.HIGH,
    AnomalyKind.SETGID: Severity.HIGH,
    AnomalyKind.STICKY: Severity.LOW,
    AnomalyKind.WORLD_WRITABLE: Severity.MEDIUM,
}


@dataclass(frozen=True)
class Anomaly:
    kind: AnomalyKind
    path: str
    message: str
    commit: str | None
    content: str | None = None  # what the content sniffer saw (elf, wheel, pickle, ...)
    evidence: str = ""  # a stable token for the fingerprint (blob sha, link target, line)
    inherited: bool = False  # the change is an upstream commit's that the fork merged in

    @property
    def is_finding(self) -> bool:
        """Archive effects are explained differences, shown but not findings."""
        return self.kind is not AnomalyKind.ARCHIVE_EFFECT

    @property
    def severity(self) -> Severity:
        return SEVERITY[self.kind]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "path": display(self.path),
                               "message": self.message, "commit": self.commit,
                               "content": self.content, "severity": self.severity.value}
        if self.inherited:
            out["inherited"] = True
        return out


# ---------------------------------------------------------------- content


_EXECUTABLE_KINDS = {
    "elf": "an ELF executable or shared library",
    "pe": "a Windows PE executable",
    "mach-o": "a Mach-O binary or Java class file",
    "wheel": "a Python wheel",
    "zip": "a zip archive",
    "pickle": "a Python pickle (runs code when loaded)",
    "pytorch": "a PyTorch checkpoint (pickle inside a zip)",
    "safetensors": "safetensors model weights",
    "gguf": "GGUF model weights",
    "numpy": "a NumPy array file",
    "gzip": "a gzip stream",
    "xz": "an xz stream",
    "bzip2": "a bzip2 stream",
    "7z": "a 7z archive",
}


def sniff(path: Path) -> str | None:
    """What kind of binary a file is by its content, "binary" for other non-text, None for text."""
    with open(path, "rb") as fh:
        head = fh.read(_SNIFF_BYTES)
        size = os.fstat(fh.fileno()).st_size
        last = b""
        if size:
            fh.seek(size - 1)
            last = fh.read(1)
    return _kind(head, size, last, lambda: _zip_kind(path))


def sniff_data(data: bytes) -> str | None:
    """:func:`sniff` of content in memory."""
    return _kind(data[:_SNIFF_BYTES], len(data), data[-1:], lambda: _zip_kind(io.BytesIO(data)))


def _kind(head: bytes, size: int, last: bytes, zip_kind: Callable[[], str]) -> str | None:
    if not head:
        return None
    kind = (_executable_kind(head) or _data_kind(head, size, last, zip_kind)
            or _compressed_kind(head))
    if kind is not None:
        return kind
    if b"\0" in head[:8000]:
        return "binary"
    return None


_MACHO_MAGIC = (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
                b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")


def _executable_kind(head: bytes) -> str | None:
    if head.startswith(b"\x7fELF"):
        return "elf"
    if head.startswith(b"MZ") and b"PE\0\0" in head[:1024]:
        return "pe"
    if head[:4] in _MACHO_MAGIC:
        return "mach-o"
    return None


def _data_kind(head: bytes, size: int, last: bytes, zip_kind: Callable[[], str]) -> str | None:
    """Archives, model weights and serialised data."""
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return zip_kind()
    if head.startswith(b"GGUF"):
        return "gguf"
    if head.startswith(b"\x93NUMPY"):
        return "numpy"
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5 and last == b".":
        return "pickle"
    if len(head) >= 10:
        (n,) = struct.unpack("<Q", head[:8])
        if 2 <= n <= size - 8 and head[8:9] == b"{" and head[8:10] in (b"{\"", b"{}"):
            return "safetensors"
    return None


def _compressed_kind(head: bytes) -> str | None:
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"\xfd7zXZ\x00"):
        return "xz"
    if head.startswith(b"BZh") and len(head) > 3 and head[3:4].isdigit():
        return "bzip2"
    if head.startswith(b"7z\xbc\xaf\x27\x1c"):
        return "7z"
    return None


def _zip_kind(path: Path | IO[bytes]) -> str:
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (zipfile.BadZipFile, OSError):
        return "zip"
    if any(re.fullmatch(r"[^/]+\.dist-info/WHEEL", n) for n in names):
        return "wheel"
    if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
        return "pytorch"
    return "zip"


def is_lfs_pointer(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(48).startswith(_LFS)


_LFS = b"version https://git-lfs.github.com/spec/"
#: files up to this size are looked at in memory (read from git by their proven blob); larger ones
#: on the unpacked copy, so a huge added file is never held in memory
IN_MEMORY_MAX = 8 << 20
_BATCH = 64  # files read from git at a time


@dataclass(frozen=True)
class _Content:
    """What the anomaly checks need of one file: its binary kind, LFS pointer, text, link."""

    kind: str | None = None
    lfs: bool = False
    text: str = ""
    link: str = ""

    @classmethod
    def of_data(cls, data: bytes, f: BundleFile) -> _Content:
        if f.mode == MODE_SYMLINK:
            return cls(link=os.fsdecode(data))
        kind = sniff_data(data)
        text = data.decode("utf-8", "replace") if _is_attributes(f.path) and kind is None else ""
        return cls(kind=kind, lfs=data[:48].startswith(_LFS), text=text)

    @classmethod
    def of_path(cls, p: Path, f: BundleFile) -> _Content:
        if f.mode == MODE_SYMLINK:
            return cls(link=os.readlink(p))
        kind = sniff(p)
        text = (p.read_text(encoding="utf-8", errors="replace")
                if _is_attributes(f.path) and kind is None else "")
        return cls(kind=kind, lfs=is_lfs_pointer(p), text=text)


def _is_attributes(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == ".gitattributes"


def _contents(files: BundleFiles, wanted: list[BundleFile]) -> Iterator[tuple[BundleFile, _Content]]:
    """Each wanted file's content facts: small ones read in batches, large ones on the copy."""
    small = [f for f in wanted if f.size <= IN_MEMORY_MAX]
    for i in range(0, len(small), _BATCH):
        batch = small[i:i + _BATCH]
        got = files.read_entries([f.path for f in batch])
        for f in batch:
            yield f, _Content.of_data(got[f.path], f)
    large = [f for f in wanted if f.size > IN_MEMORY_MAX]
    if large:
        root = files.root()
        for f in large:
            yield f, _Content.of_path(root / f.path, f)


_ATTR_LINE = re.compile(r"(?:^|\s)(filter=\S+|export-subst|export-ignore|ident|diff=\S+|"
                        r"merge=\S+|working-tree-encoding=\S+)")


# ---------------------------------------------------------------- attribution


class Attributor:
    """Which series commit introduced a path (``git log upstream..head -- path``)."""

    def __init__(self, git: ProofGit, upstream: str, head: str,
                 series: Mapping[str, TreeEntry]) -> None:
        self.git = git
        self.range = f"{upstream}..{head}"
        self.series = series

    def commit_for(self, path: str, blob: str | None, mode: str | None = None, *,
                   added: bool = True) -> str | None:
        """The commit that added ``path`` (else, or when not ``added``, the last one that changed
        it), when the series has this content (and mode)."""
        entry = self.series.get(path)
        if (entry is None or (blob is not None and entry.sha != blob)
                or (mode is not None and entry.mode != mode)):
            return None  # only the bundle has this content
        attempts: list[tuple[str, ...]] = [("--diff-filter=A",)] if added else []
        attempts.append(("-1",))
        for extra in attempts:
            out = self.git.out("log", *extra, "--format=%H", self.range, "--", path)
            if out:
                return out.split()[0]
        return None

    def mode_setter(self, path: str, blob: str | None, mode: str) -> str | None:
        """The last series commit that gave ``path`` its ``mode`` (added it so, or changed its
        mode to it), when the series has this content and mode; else the last one that changed
        it. A later commit that only edits the file did not set its executable bit."""
        last = self.commit_for(path, blob, mode, added=False)
        if last is None:
            return None
        log = self.git.out("log", "--format=commit %H", "--raw", "--no-abbrev", "--no-renames",
                           self.range, "--", f":(literal){path}")
        current: str | None = None
        for line in log.splitlines():  # newest first
            if line.startswith("commit "):
                current = line[7:].strip()
            elif line.startswith(":") and current is not None:
                src, dst = line[1:].split(" ", 2)[:2]
                if dst == mode and src != mode:
                    return current
        return last


# ---------------------------------------------------------------- the scan


def find_anomalies(*, git: ProofGit, upstream_commit: str, head_commit: str,
                   upstream: Mapping[str, TreeEntry], series: Mapping[str, TreeEntry],
                   manifest: Mapping[str, BundleFile], files: BundleFiles,
                   git_entries: Iterable[str], differences: Iterable[Difference],
                   modes: Mapping[str, SpecialMode] | None = None,
                   own: Collection[str] | None = None) -> list[Anomaly]:
    """Anomalies among the bundle paths that differ from upstream, plus tree-level ones;
    ``modes``: the bundle entries with special mode bits (all of them are the bundle's own:
    git stores none); ``own``: the fork's own commits (listed or hidden; not upstream's, not
    upstream cherry-picks). In a merge-based fork ``upstream..head`` also holds upstream's
    commits that the fork merged in (another release line, upstream's main): an anomaly one of
    them made is upstream's (inherited), never credited to that commit as the fork's."""
    out = _anomalies(git, upstream_commit, head_commit, upstream, series, manifest, files,
                     git_entries, differences, modes)
    if own is None:
        return out
    fork = set(own)
    return [replace(a, commit=None, inherited=True)
            if a.commit is not None and a.commit not in fork else a for a in out]


def _anomalies(git: ProofGit, upstream_commit: str, head_commit: str,
               upstream: Mapping[str, TreeEntry], series: Mapping[str, TreeEntry],
               manifest: Mapping[str, BundleFile], files: BundleFiles,
               git_entries: Iterable[str], differences: Iterable[Difference],
               modes: Mapping[str, SpecialMode] | None) -> list[Anomaly]:
    who = Attributor(git, upstream_commit, head_commit, series)
    out: list[Anomaly] = []
    changed = []
    for path in sorted(manifest, key=os.fsencode):
        f = manifest[path]
        base = upstream.get(path)
        if base is not None and base.sha == f.blob and base.mode == f.mode:
            continue
        changed.append(f)
    seen = dict(_contents(files, changed))
    for f in changed:
        out.extend(_file_anomalies(who, f, upstream.get(f.path), seen[f]))
    for path, e in sorted(series.items()):
        base = upstream.get(path)
        if e.mode == MODE_GITLINK and (base is None or base.sha != e.sha):
            was = f" (was {base.sha[:12]})" if base is not None else ""
            out.append(Anomaly(AnomalyKind.GITLINK, path,
                               f"submodule {display(path)} points at commit {e.sha[:12]}{was}; "
                               f"its content is not part of the proof",
                               who.commit_for(path, e.sha), evidence=e.sha))
    for path, base in sorted(upstream.items()):
        if base.mode == MODE_GITLINK and path not in series:
            out.append(Anomaly(AnomalyKind.GITLINK, path,
                               f"the series removes submodule {display(path)}",
                               None, evidence=base.sha))
    for path in git_entries:
        out.append(Anomaly(AnomalyKind.GIT_DIR, path,
                           f"the bundle contains a git directory {display(path)}; it was not "
                           f"unpacked or hashed (it could carry hooks or hidden history)",
                           None, evidence=path))
    for path in sorted(modes or {}, key=os.fsencode):
        out.extend(mode_anomalies(path, (modes or {})[path]))
    for d in differences:
        if d.explained is not None:
            out.append(Anomaly(AnomalyKind.ARCHIVE_EFFECT, d.path,
                               f"{d.explained.value}: {d.note}"
                               + (f" (expanded to {', '.join(map(repr, d.expansions))})"
                                  if d.expansions else ""),
                               None, evidence=d.explained.value + "".join(d.expansions)))
    return out


def _file_anomalies(who: Attributor, f: BundleFile, base: TreeEntry | None,
                    seen: _Content) -> list[Anomaly]:
    out: list[Anomaly] = []
    path = f.path
    new = base is None
    if f.mode == MODE_SYMLINK:
        if base is None or base.mode != MODE_SYMLINK or base.sha != f.blob:
            target = seen.link
            out.append(Anomaly(AnomalyKind.SYMLINK, path,
                               f"symlink {display(path)} -> {display(target)}"
                               + (" added" if new else " changed"),
                               who.commit_for(path, f.blob, f.mode), evidence=target))
        return out
    commit: str | None = None
    commit_known = False

    def attribution() -> str | None:
        nonlocal commit, commit_known
        if not commit_known:
            commit, commit_known = who.commit_for(path, f.blob, f.mode), True
        return commit

    if f.mode == MODE_EXEC and (base is None or base.mode != MODE_EXEC):
        what = "new executable file" if new else "executable bit newly set on"
        out.append(Anomaly(AnomalyKind.EXECUTABLE, path, f"{what} {display(path)}",
                           who.mode_setter(path, f.blob, f.mode), evidence=f.mode))
    kind = seen.kind
    verb = "adds" if new else "changes"
    if kind == "binary":
        out.append(Anomaly(AnomalyKind.OPAQUE_ADDED, path,
                           f"the bundle {verb} non-text data {display(path)} ({f.size} bytes)",
                           attribution(), content=kind, evidence=f.blob))
    elif kind is not None:
        out.append(Anomaly(AnomalyKind.BINARY_ADDED, path,
                           f"the bundle {verb} {_EXECUTABLE_KINDS[kind]}: {display(path)} "
                           f"({f.size} bytes)", attribution(), content=kind, evidence=f.blob))
    elif seen.lfs:
        out.append(Anomaly(AnomalyKind.LFS_POINTER, path,
                           f"{display(path)} is a Git LFS pointer: the real content is not in "
                           f"the bundle and is not proven", attribution(), evidence=f.blob))
    if _is_attributes(path) and kind is None:
        text = seen.text
        hits = sorted({m.group(1) for line in text.splitlines()
                       if not line.lstrip().startswith("#")
                       for m in _ATTR_LINE.finditer(line)})
        if hits:
            out.append(Anomaly(AnomalyKind.ATTRIBUTES, path,
                               f"{display(path)} sets {', '.join(hits)} (changes what checkouts "
                               f"or archives contain)", attribution(),
                               evidence=",".join(hits)))
    return out


_MODE_BITS = (
    (0o4000, AnomalyKind.SETUID, "the setuid bit: it runs as its owner (root, when extracted "
                                 "by root with modes kept)"),
    (0o2000, AnomalyKind.SETGID, "the setgid bit: {what}"),
    (0o1000, AnomalyKind.STICKY, "the sticky bit"),
    (0o0002, AnomalyKind.WORLD_WRITABLE, "write permission for every user: anyone on the "
                                         "server can {change}"),
)


def mode_anomalies(path: str, mode: SpecialMode) -> list[Anomaly]:
    """One anomaly per special bit of a bundle entry's mode; git stores no such bit, so only the
    bundle has it, and the proof (blobs and 644/755) does not show it."""
    out = []
    noun = "folder" if mode.folder else "file"
    for bit, kind, text in _MODE_BITS:
        if not mode.bits & bit:
            continue
        what = ("files created in it take its group" if mode.folder
                else "it runs with its group's rights")
        change = "add or replace files in it" if mode.folder else "change it"
        out.append(Anomaly(kind, path,
                           f"bundle {noun} {display(path)} has mode {mode.bits:04o}, with "
                           + text.format(what=what, change=change)
                           + " (GNU tar as root, bsdtar -p and unzip -K apply it)",
                           None, evidence=f"{noun}:{mode.bits:04o}"))
    return out
