"""Safe unpacking of a bundle (folder, tar, tar.gz/xz/bz2, zip) into a private folder.

The bundle is untrusted. It must be a folder or a regular file under a size cap (checked before it
is opened); a file's format is decided by its bytes, and a file another reader would take as another
format, or with data after its end, is refused (:mod:`auditor.provenance.bundleformat`). Every
entry is checked before a byte is written, and every write goes
through :class:`_Writer`, which only creates paths below its root:

- absolute names, ``..`` components, names that are not UTF-8, and entries that would be written
  through a symlink are refused;
- symlinks must be relative and stay inside the bundle (``..`` only as leading components);
  hard links must name a regular file extracted before them (their content is copied);
- devices, fifos and unknown entry types are refused;
- limits (``[bundle] max_bytes``, ``max_files``, ``max_file_bytes``) are counted on the bytes
  actually decompressed, never taken from headers, so archive bombs stop early (a zip's declared
  member count and sizes are checked against them too, before anything is written:
  :mod:`auditor.zipsafety`);
- a member is read only as every common extractor reads it (GNU tar, bsdtar, Python, unzip:
  :mod:`auditor.provenance.tarheaders`, :mod:`auditor.provenance.zipheaders`); an ambiguous one
  is an :class:`AmbiguousBundle`, a failed proof (exit 1) naming the member and the readings;
- paths deeper than :data:`MAX_DEPTH` folders or longer than :data:`MAX_PATH_BYTES` are refused;
- setuid, setgid, sticky and world-write bits are never given to the copy, but recorded
  (``modes``) for the verify stage to report;
- ``strip_components`` drops leading folders; a file with too few components is an error;
- ``.git`` entries are not extracted (the tree hash ignores them too) but reported;
- a folder bundle is copied, never used in place, without following symlinks.

Every other refusal is an :class:`~auditor.errors.InputError` naming the bundle and the entry
(exit 2).
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import shutil
import stat
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import IO

from auditor.errors import EXIT_POLICY, InputError
from auditor.inputs import check_input, open_input
from auditor.model import BundleFile
from auditor.provenance.bundleformat import (
    AmbiguousArchive,
    ArchiveFormat,
    BadArchive,
    BundleFormat,
    Decompressed,
    check_tar_tail,
    check_zip_layout,
    is_tar_header,
    refuse_second_reading,
    sniff,
)
from auditor.provenance.tarheaders import AmbiguousMember, TarHeaders
from auditor.provenance.zipheaders import MemberStream, check_member
from auditor.spec import BundleSpec
from auditor.zipsafety import MemberKind, UnsafeZip, ZipLimits, check_members, unix_mode

_CHUNK = 1 << 20
_MAX_LINK = 4096
#: limits on an entry's path (after strip_components): deeper or longer paths cannot be written
#: below a work folder within PATH_MAX (4096 bytes), and no source tree needs them
MAX_DEPTH = 256
MAX_PATH_BYTES = 3072
MAX_NAME_BYTES = 255
# Headers, padding and pax records are decompressed too; allow this much per entry on top.
_OVERHEAD_PER_ENTRY = 8192
#: the names ``Unpacked.compression`` has always used
_COMPRESSION_NAMES = {"gzip": "gzip", "xz": "xz", "bzip2": "bz2"}


class BundleKind(StrEnum):
    DIRECTORY = "directory"
    TAR = "tar"
    ZIP = "zip"


@dataclass(frozen=True)
class Unpacked:
    root: Path  # the private copy
    kind: BundleKind
    compression: str | None  # gzip, xz, bz2 or None
    files: int
    bytes: int
    git_entries: tuple[str, ...]  # `.git` paths found in the bundle and not extracted
    archive_commit: str | None  # the commit `git archive` recorded, when it did
    #: posix path -> (size, sha256, git blob sha1) of regular files, hashed as they were written
    #: (so the tree hash need not read them again); files missing here are hashed from disk
    digests: Mapping[str, tuple[int, str, str]] = field(default_factory=dict)
    #: the format, decided by the bundle's bytes, and the evidence for it
    format: BundleFormat | None = None
    #: posix path -> (file or folder, permission bits) of entries whose mode goes beyond
    #: rw and x: setuid, setgid, sticky or world-writable (the copy itself never has them)
    modes: Mapping[str, SpecialMode] = field(default_factory=dict)


class AmbiguousBundle(InputError):
    """The bundle holds a member that two common extractors read differently: a failed proof
    (exit 1; the verify stage reports it as its reason), since the deployed tree is not the one
    the hashes are computed over."""

    exit_code = EXIT_POLICY


@dataclass(frozen=True)
class SpecialMode:
    """A bundle entry's mode bits beyond rw and x, as the archive (or folder) gives them."""

    folder: bool
    bits: int  # the permission bits, 0o7777


#: the bits that make a mode special: what a root extraction that keeps modes would apply
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWOTH


class _Refused(Exception):
    """An entry the writer refuses; turned into an InputError naming the bundle."""


class _Writer:
    """Creates files, folders and symlinks strictly below ``root``, counting against limits."""

    def __init__(self, root: Path, spec: BundleSpec) -> None:
        self.root = root
        self.spec = spec
        self.files = 0
        self.bytes = 0
        self.git_entries: list[str] = []
        self.regular: set[str] = set()
        self.digests: dict[str, tuple[int, str, str]] = {}
        #: folders (relative paths) already found or made as real directories: a folder stays one,
        #: since nothing can be written over a directory and the writer deletes nothing
        self.dirs: set[str] = {""}
        self.modes: dict[str, SpecialMode] = {}

    # -- names
    def target(self, name: str, *, is_dir: bool) -> str | None:
        """The checked relative posix path for an entry name, or None when it is skipped."""
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise _Refused(f"entry name {_show(name)} is not valid UTF-8") from None
        if "\0" in name:
            raise _Refused(f"entry name {_show(name)} contains a NUL byte")
        if name.startswith("/") or (len(name) > 1 and name[1] == ":" and name[0].isalpha()):
            raise _Refused(f"entry {_show(name)} is an absolute path")
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise _Refused(f"entry {_show(name)} contains '..'")
        strip = self.spec.strip_components
        if len(parts) <= strip:
            if is_dir:
                return None
            raise _Refused(f"entry {_show(name)} has {len(parts)} path component(s), so "
                           f"strip_components = {strip} would remove the file itself: "
                           f"strip_components is wrong for this bundle")
        parts = parts[strip:]
        _check_path(name, parts)
        if ".git" in parts:
            top = "/".join(parts[: parts.index(".git") + 1])
            if top not in self.git_entries:
                self.git_entries.append(top)
            return None
        return "/".join(parts)

    def _count_entry(self) -> None:
        self.files += 1
        if self.files > self.spec.max_files:
            raise _Refused(f"more than max_files = {self.spec.max_files} entries")

    def _parent(self, rel: str) -> Path:
        """Create the parent folders of ``rel``; refuse to pass through a symlink or a file."""
        head, _, leaf = rel.rpartition("/")
        if head in self.dirs:  # checked before; the writer never removes or replaces anything
            return self.root / rel
        folder = self.root
        done = ""
        for part in head.split("/") if head else ():
            folder = folder / part
            done = f"{done}/{part}" if done else part
            if done not in self.dirs:
                self._ensure_dir(folder, done, lambda link: _through(rel, link))
        return folder / leaf

    def _ensure_dir(self, path: Path, rel: str, refusal: Callable[[bool], str]) -> None:
        """Make ``path`` a folder (new, or already a real folder), never one reached by a link."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            os.mkdir(path, 0o755)
        else:
            if not stat.S_ISDIR(st.st_mode):
                raise _Refused(refusal(stat.S_ISLNK(st.st_mode)))
        self.dirs.add(rel)

    def mode(self, rel: str, mode: int, *, folder: bool = False) -> None:
        """Record an entry's mode when it holds setuid, setgid, sticky or world-write bits."""
        if mode & SPECIAL_BITS:
            self.modes[rel] = SpecialMode(folder=folder, bits=mode & 0o7777)

    # -- entries
    def folder(self, rel: str) -> None:
        self._ensure_dir(self._parent(rel), rel,
                         lambda _link: _both(rel))

    def file(self, rel: str, stream: IO[bytes], executable: bool, size: int | None = None) -> None:
        """Write one regular file; ``size`` (as the archive declares it) lets the file be hashed
        for git as it is written: the digests are kept only when exactly ``size`` bytes came."""
        self._count_entry()
        path = self._parent(rel)
        mode = 0o755 if executable else 0o644
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        except FileExistsError:
            raise _Refused(f"entry {_show(rel)} appears more than once") from None
        with os.fdopen(fd, "wb") as out:
            written, sha256, sha1 = self._stream(rel, stream, size, out.write)
            os.fchmod(out.fileno(), mode)
        self.regular.add(rel)
        if size is not None and written == size:
            self.digests[rel] = (written, sha256, sha1)

    def _stream(self, rel: str, stream: IO[bytes], size: int | None,
                sink: Callable[[bytes], object] | None = None) -> tuple[int, str, str]:
        """Read one entry to its end within the size limits, giving each chunk to ``sink``:
        the bytes read, their sha256 and their git blob sha1 (when ``size`` is declared; the
        sha1 is only right when exactly ``size`` bytes came)."""
        written = 0
        sha256 = hashlib.sha256()
        sha1 = hashlib.sha1(b"blob %d\0" % (size or 0))
        while chunk := stream.read(_CHUNK):
            written += len(chunk)
            self.bytes += len(chunk)
            if written > self.spec.max_file_bytes:
                raise _Refused(f"entry {_show(rel)} is larger than max_file_bytes = "
                               f"{self.spec.max_file_bytes}")
            if self.bytes > self.spec.max_bytes:
                raise _Refused(f"more than max_bytes = {self.spec.max_bytes} bytes unpacked")
            if sink is not None:
                sink(chunk)
            sha256.update(chunk)
            sha1.update(chunk)
        return written, sha256.hexdigest(), sha1.hexdigest()

    def symlink(self, rel: str, target: str) -> None:
        self._count_entry()
        check_link_target(rel, target)
        path = self._parent(rel)
        try:
            os.symlink(target, path)
        except FileExistsError:
            raise _Refused(f"entry {_show(rel)} appears more than once") from None

    def hardlink(self, rel: str, target_rel: str | None) -> None:
        if target_rel is None or target_rel not in self.regular:
            raise _Refused(f"hard link {_show(rel)} does not point at a regular file extracted "
                           f"before it")
        source = self.root / target_rel
        st = os.lstat(source)
        with open(source, "rb") as fh:
            self.file(rel, fh, bool(st.st_mode & stat.S_IXUSR), st.st_size)


def _check_path(name: str, parts: list[str]) -> None:
    """Refuse a path too deep or too long to write (and to walk) safely, by name."""
    name = name if len(name) <= 120 else name[:120] + "..."
    if len(parts) > MAX_DEPTH:
        raise _Refused(f"entry {_show(name)} is {len(parts) - 1} folders deep, "
                       f"more than the limit of {MAX_DEPTH}")
    size = len("/".join(parts).encode("utf-8", "surrogateescape"))
    if size > MAX_PATH_BYTES:
        raise _Refused(f"entry {_show(name)} has a path of {size} bytes, more "
                       f"than the limit of {MAX_PATH_BYTES}")
    for part in parts:
        if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
            raise _Refused(f"entry {_show(name)} has a name part longer than "
                           f"{MAX_NAME_BYTES} bytes")


def _through(rel: str, link: bool) -> str:
    return f"entry {_show(rel)} would be written through {'a symlink' if link else 'a file'}"


def _both(rel: str) -> str:
    return f"entry {_show(rel)} is both a folder and a file or link"


class _NeedsDisk(Exception):
    """A file whose size the archive did not state truly: it is hashed from an unpacked copy."""


class _Hasher(_Writer):
    """The writer's checks, in the same order and with the same refusals, on a model of the folder
    instead of the disk: nothing is written; each file is hashed as it streams past.

    The model knows what the disk would hold at each path (folder, file or symlink), so every
    refusal the writer would make (a name used twice, a folder where a file or link is, a path
    through a file or link, a hard link to anything but an earlier regular file, the limits) is
    made here too. A file whose byte count differs from the archive's header cannot be hashed for
    git in one pass: :class:`_NeedsDisk` sends the caller to :func:`unpack_bundle`.
    """

    def __init__(self, spec: BundleSpec) -> None:
        super().__init__(Path(os.devnull), spec)
        self.kinds: dict[str, str] = {"": "dir"}
        self.links: dict[str, str] = {}
        self.executable: set[str] = set()

    def _vparent(self, rel: str) -> None:
        head = rel.rpartition("/")[0]
        if head in self.dirs:
            return
        done = ""
        for part in head.split("/") if head else ():
            done = f"{done}/{part}" if done else part
            if done not in self.dirs:
                self._vdir(done, lambda link: _through(rel, link))

    def _vdir(self, rel: str, refusal: Callable[[bool], str]) -> None:
        kind = self.kinds.setdefault(rel, "dir")
        if kind != "dir":
            raise _Refused(refusal(kind == "link"))
        self.dirs.add(rel)

    def _claim(self, rel: str, kind: str) -> None:
        if rel in self.kinds:
            raise _Refused(f"entry {_show(rel)} appears more than once")
        self.kinds[rel] = kind

    def folder(self, rel: str) -> None:
        self._vparent(rel)
        self._vdir(rel, lambda _link: _both(rel))

    def file(self, rel: str, stream: IO[bytes], executable: bool, size: int | None = None) -> None:
        self._count_entry()
        self._vparent(rel)
        self._claim(rel, "file")
        if size is None:
            raise _NeedsDisk(rel)
        written, sha256, sha1 = self._stream(rel, stream, size)
        if written != size:
            raise _NeedsDisk(rel)
        self.regular.add(rel)
        if executable:
            self.executable.add(rel)
        self.digests[rel] = (written, sha256, sha1)

    def symlink(self, rel: str, target: str) -> None:
        self._count_entry()
        check_link_target(rel, target)
        self._vparent(rel)
        self._claim(rel, "link")
        self.links[rel] = target

    def hardlink(self, rel: str, target_rel: str | None) -> None:
        if target_rel is None or target_rel not in self.regular:
            raise _Refused(f"hard link {_show(rel)} does not point at a regular file extracted "
                           f"before it")
        size, sha256, sha1 = self.digests[target_rel]
        executable = target_rel in self.executable
        self._count_entry()
        self._vparent(rel)
        self._claim(rel, "file")
        # the writer copies the content in chunks, counting as it goes: the same limits, in order
        written = 0
        while written < size:
            step = min(_CHUNK, size - written)
            written += step
            self.bytes += step
            if written > self.spec.max_file_bytes:
                raise _Refused(f"entry {_show(rel)} is larger than max_file_bytes = "
                               f"{self.spec.max_file_bytes}")
            if self.bytes > self.spec.max_bytes:
                raise _Refused(f"more than max_bytes = {self.spec.max_bytes} bytes unpacked")
        self.regular.add(rel)
        if executable:
            self.executable.add(rel)
        self.digests[rel] = (size, sha256, sha1)

    def manifest(self) -> dict[str, BundleFile]:
        out: dict[str, BundleFile] = {}
        for rel in self.regular:
            size, sha256, sha1 = self.digests[rel]
            out[rel] = BundleFile(path=rel, mode="100755" if rel in self.executable else "100644",
                                  size=size, sha256=sha256, blob=sha1)
        for rel, target in self.links.items():
            data = os.fsencode(target)
            blob = hashlib.sha1(b"blob %d\0" % len(data))
            blob.update(data)
            out[rel] = BundleFile(path=rel, mode="120000", size=len(data),
                                  sha256=hashlib.sha256(data).hexdigest(), blob=blob.hexdigest())
        return out


def check_link_target(rel: str, target: str) -> None:
    """A symlink must be relative and stay inside the bundle; ``..`` only as leading parts.

    Leading ``..`` parts climb through real folders (the writer never creates a folder through a
    link), so a lexical check is exact; a ``..`` after a name could climb out of a symlinked folder.
    """
    if not target or "\0" in target or len(target) > _MAX_LINK:
        raise _Refused(f"symlink {_show(rel)} has an invalid target")
    if target.startswith("/"):
        raise _Refused(f"symlink {_show(rel)} points at the absolute path {_show(target)}")
    parts = [p for p in target.split("/") if p not in ("", ".")]
    ups = 0
    while ups < len(parts) and parts[ups] == "..":
        ups += 1
    if ".." in parts[ups:]:
        raise _Refused(f"symlink {_show(rel)} -> {_show(target)} has '..' after a name")
    depth = len(rel.split("/")) - 1
    if ups > depth:
        raise _Refused(f"symlink {_show(rel)} -> {_show(target)} points outside the bundle")


def _show(name: str) -> str:
    return repr(name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace"))


# ---------------------------------------------------------------- formats


def _unpack_tar(fh: IO[bytes], compression: str | None, w: _Writer) -> tuple[str | None, str]:
    """Unpack a (compressed) tar; returns the archive commit and the evidence of its end.

    Every member tarfile yields must be read the same by the header-level reader
    (:mod:`auditor.provenance.tarheaders`), which is fed the same bytes and refuses what GNU tar
    or bsdtar would read otherwise."""
    limit = w.spec.max_bytes + _OVERHEAD_PER_ENTRY * min(w.spec.max_files, 1 << 20) + (1 << 20)
    headers = TarHeaders()
    dec = Decompressed(fh, compression, limit, lambda: _Refused(
        f"decompresses to more than max_bytes allows ({limit} bytes with archive headers)"),
        observer=headers.feed)
    first = dec.head(512)
    if first[257:262] != b"ustar" or not is_tar_header(first):
        raise BadArchive(f"the {compression} data is not a ustar tar archive")
    try:
        tar = tarfile.open(fileobj=dec, mode="r|", errorlevel=2)
    except (tarfile.TarError, ValueError, EOFError) as exc:  # tarfile raises ValueError too
        if headers.problem is not None:
            raise headers.problem[1] from None
        raise BadArchive(f"not a readable tar archive ({exc})") from None
    with tar:
        for member in _members(tar, headers):
            _same_reading(headers, member)
            _tar_member(tar, member, w)
        comment = tar.pax_headers.get("comment")
        end = tar.offset
    if headers.problem is not None:
        raise headers.problem[1]
    tail = check_tar_tail(dec, end)
    if headers.problem is not None:
        raise headers.problem[1]
    if headers.end != end or headers.members:
        left = ", ".join(_show(m.name) for m in list(headers.members.values())[:3])
        raise AmbiguousMember(f"Python's tarfile ends the archive at offset {end}, the header "
                              f"reader at {headers.end}" + (f" (after {left})" if left else ""))
    return (comment if comment and len(comment) == 40 else None), tail


def _same_reading(headers: TarHeaders, m: tarfile.TarInfo) -> None:
    """tarfile's reading of ``m`` must be the header reader's (the one every extractor shares)."""
    if headers.problem is not None and headers.problem[0] < m.offset_data:
        raise headers.problem[1]
    seen = headers.members.pop(m.offset_data, None)
    typ = b"0" if m.type == tarfile.AREGTYPE else m.type
    ours = (m.name, m.linkname, typ, m.size, m.mode)
    if seen is None or (seen.name, seen.linkname, seen.type, seen.size, seen.mode) != ours:
        other = ("no member there" if seen is None else
                 f"{_show(seen.name)} -> {_show(seen.linkname)}, type {seen.type!r}, "
                 f"{seen.size} bytes, mode {seen.mode:o}")
        raise AmbiguousMember(
            f"bundle member {_show(m.name)} is ambiguous: Python's tarfile reads "
            f"{_show(m.name)} -> {_show(m.linkname)}, type {m.type!r}, {m.size} bytes, mode "
            f"{m.mode:o}; the tar header reader (as GNU tar and bsdtar read it) reads {other}")


def _members(tar: tarfile.TarFile, headers: TarHeaders) -> Iterator[tarfile.TarInfo]:
    try:
        while (member := tar.next()) is not None:
            yield member
    except (tarfile.TarError, EOFError, OSError, lzma.LZMAError, ValueError) as exc:
        if headers.problem is not None:
            raise headers.problem[1] from None
        raise _Refused(f"corrupt archive: {exc}") from None


def _tar_member(tar: tarfile.TarFile, m: tarfile.TarInfo, w: _Writer) -> None:
    if m.isdir():
        rel = w.target(m.name, is_dir=True)
        if rel is not None:
            w.folder(rel)
            w.mode(rel, m.mode, folder=True)
        return
    if m.ischr() or m.isblk() or m.isfifo():
        raise _Refused(f"entry {_show(m.name)} is a device or fifo")
    if not (m.isreg() or m.issym() or m.islnk()):
        raise _Refused(f"entry {_show(m.name)} has an unsupported type {m.type!r}")
    rel = w.target(m.name, is_dir=False)
    if rel is None:
        return
    if m.issym():
        w.symlink(rel, m.linkname)
    elif m.islnk():
        w.hardlink(rel, w.target(m.linkname, is_dir=False))
        w.mode(rel, m.mode)
    else:
        if m.size > w.spec.max_file_bytes:
            raise _Refused(f"entry {_show(m.name)} is larger than max_file_bytes = "
                           f"{w.spec.max_file_bytes}")
        fh = tar.extractfile(m)
        assert fh is not None
        w.file(rel, fh, bool(m.mode & stat.S_IXUSR), m.size)
        w.mode(rel, m.mode)


def _unpack_zip(fh: IO[bytes], w: _Writer) -> str | None:
    try:
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise BadArchive(f"not a readable zip archive ({exc})") from None
    limits = ZipLimits(members=w.spec.max_files, member_bytes=w.spec.max_file_bytes,
                       total_bytes=w.spec.max_bytes, members_name="max_files =",
                       member_bytes_name="max_file_bytes =", total_bytes_name="max_bytes =")
    with zf:
        try:
            # names are the writer's to check (after strip_components), as for a tar
            members = check_members(zf, limits, symlinks=True, names=False)
        except UnsafeZip as exc:
            raise _Refused(str(exc)) from None
        for info, kind in members:
            _zip_member(fh, info, kind, w)
        comment = zf.comment.decode("ascii", "replace").strip()
    return comment if len(comment) == 40 else None


def _zip_member(fh: IO[bytes], info: zipfile.ZipInfo, kind: MemberKind, w: _Writer) -> None:
    """One member, read as unzip and zipfile both read it (:mod:`auditor.provenance.zipheaders`:
    the data is decompressed here, and must end exactly as its headers declare)."""
    local = check_member(fh, info, kind is MemberKind.FOLDER)
    if kind is MemberKind.FOLDER:
        rel = w.target(info.filename, is_dir=True)
        if rel is not None:
            w.folder(rel)
            w.mode(rel, unix_mode(info), folder=True)
        return
    rel = w.target(info.filename, is_dir=False)
    if rel is None:
        return
    stream = io.BufferedReader(MemberStream(fh, info, local), _CHUNK)
    try:
        if kind is MemberKind.SYMLINK:
            target = stream.read(_MAX_LINK + 1)
            if stream.read(1):
                raise _Refused(f"symlink {_show(rel)} has an invalid target")
            try:
                w.symlink(rel, target.decode("utf-8"))
            except UnicodeDecodeError:
                raise _Refused(f"symlink {_show(rel)} target is not UTF-8") from None
        else:
            w.file(rel, stream, bool(unix_mode(info) & stat.S_IXUSR), info.file_size)
            w.mode(rel, unix_mode(info))
    except (OSError, EOFError) as exc:
        raise _Refused(f"entry {_show(info.filename)} cannot be read: {exc}") from None


def _copy_folder(src: Path, w: _Writer) -> None:
    stack: list[tuple[str, Path]] = [("", src)]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            name = prefix + entry.name
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                rel = w.target(name, is_dir=True)
                if rel is not None:
                    w.folder(rel)
                    w.mode(rel, st.st_mode, folder=True)
                elif ".git" in name.split("/"):
                    continue  # recorded by target(); its content is never copied
                stack.append((name + "/", Path(entry.path)))
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                raise _Refused(f"entry {_show(name)} is a device, fifo or socket")
            rel = w.target(name, is_dir=False)
            if rel is None:
                continue
            if stat.S_ISLNK(st.st_mode):
                w.symlink(rel, os.readlink(entry.path))
            else:
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as fh:
                    w.file(rel, fh, bool(st.st_mode & stat.S_IXUSR), st.st_size)
                w.mode(rel, st.st_mode)  # a symlink's own mode means nothing


# ---------------------------------------------------------------- entry point


def unpack_bundle(spec: BundleSpec, workdir: Path) -> Unpacked:
    """Unpack (or copy) the bundle into a new private folder under ``workdir``.

    The bundle is checked (a folder, or a regular file under its size cap) before it is opened;
    a file's format is decided by its bytes (:mod:`auditor.provenance.bundleformat`).
    """
    src = spec.path
    cap = spec.max_bytes + _OVERHEAD_PER_ENTRY * min(spec.max_files, 1 << 20) + (1 << 20)
    st = check_input(src, "bundle", cap, folder_ok=True)
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        raise InputError(f"bundle {src} is empty: a zero-byte file")
    root = Path(tempfile.mkdtemp(prefix="bundle-", dir=workdir))
    w = _Writer(root, spec)
    compression: str | None = None
    archive_commit: str | None = None
    try:
        if stat.S_ISDIR(st.st_mode):
            kind = BundleKind.DIRECTORY
            fmt = BundleFormat(ArchiveFormat.DIRECTORY, "a folder: copied entry by entry, "
                               "symlinks not followed")
            _copy_folder(src, w)
        else:
            with open_input(src, "bundle", cap) as fh:
                kind, compression, archive_commit, fmt = _unpack_file(fh, w)
    except AmbiguousArchive as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise AmbiguousBundle(f"bundle {src}: {exc}; the proof fails") from None
    except (_Refused, BadArchive) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise InputError(f"bundle {src}: {exc}; refused") from None
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        raise InputError(f"bundle {src} cannot be read: {exc}") from None
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    if w.files == 0:
        shutil.rmtree(root, ignore_errors=True)
        extra = " other than .git" if w.git_entries else ""
        raise InputError(f"bundle {src} is empty: it holds no files{extra}",
                         hint="check [bundle] path and strip_components")
    return Unpacked(root=root, kind=kind, compression=compression, files=w.files, bytes=w.bytes,
                    git_entries=tuple(w.git_entries), archive_commit=archive_commit,
                    digests=dict(w.digests), format=fmt, modes=dict(w.modes))


@dataclass(frozen=True)
class BundleScan:
    """A file bundle read once without unpacking: what :class:`Unpacked` says, and the manifest
    the tree hash of the unpacked copy would give (:func:`hash_bundle`)."""

    kind: BundleKind
    compression: str | None
    files: int
    bytes: int
    git_entries: tuple[str, ...]
    archive_commit: str | None
    format: BundleFormat
    manifest: Mapping[str, BundleFile]
    modes: Mapping[str, SpecialMode] = field(default_factory=dict)


def hash_bundle(spec: BundleSpec) -> BundleScan | None:
    """Read a file bundle once, with every check and refusal of :func:`unpack_bundle`, and hash
    its files as they stream past, writing nothing. None for a folder bundle, or when a file's
    size is not the one its header states (the caller then unpacks the bundle and hashes the copy).
    """
    src = spec.path
    cap = spec.max_bytes + _OVERHEAD_PER_ENTRY * min(spec.max_files, 1 << 20) + (1 << 20)
    st = check_input(src, "bundle", cap, folder_ok=True)
    if stat.S_ISDIR(st.st_mode):
        return None
    if st.st_size == 0:
        raise InputError(f"bundle {src} is empty: a zero-byte file")
    h = _Hasher(spec)
    try:
        with open_input(src, "bundle", cap) as fh:
            kind, compression, archive_commit, fmt = _unpack_file(fh, h)
    except _NeedsDisk:
        return None
    except AmbiguousArchive as exc:
        raise AmbiguousBundle(f"bundle {src}: {exc}; the proof fails") from None
    except (_Refused, BadArchive) as exc:
        raise InputError(f"bundle {src}: {exc}; refused") from None
    except (OSError, EOFError, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError) as exc:
        raise InputError(f"bundle {src} cannot be read: {exc}") from None
    if h.files == 0:
        extra = " other than .git" if h.git_entries else ""
        raise InputError(f"bundle {src} is empty: it holds no files{extra}",
                         hint="check [bundle] path and strip_components")
    return BundleScan(kind=kind, compression=compression, files=h.files, bytes=h.bytes,
                      git_entries=tuple(h.git_entries), archive_commit=archive_commit,
                      format=fmt, manifest=h.manifest(), modes=dict(h.modes))


def _unpack_file(fh: IO[bytes], w: _Writer
                 ) -> tuple[BundleKind, str | None, str | None, BundleFormat]:
    """Decide the format by the file's bytes, refuse a second reading, then unpack."""
    head = fh.read(512)
    fmt, why, compression = sniff(head)
    other = refuse_second_reading(fmt, head, fh)
    if fmt is ArchiveFormat.ZIP:
        fh.seek(0, os.SEEK_END)
        layout = check_zip_layout(fh, fh.tell())
        fh.seek(0)
        commit = _unpack_zip(fh, w)
        return BundleKind.ZIP, None, commit, BundleFormat(fmt, f"{why}; {layout}; {other}")
    fh.seek(0)
    commit, tail = _unpack_tar(fh, compression, w)
    return (BundleKind.TAR, _COMPRESSION_NAMES.get(compression or ""), commit,
            BundleFormat(fmt, f"{why}; {tail}; {other}"))
