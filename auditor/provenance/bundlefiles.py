"""Where the later stages read the bundle's files from: the proven git objects or the unpacked copy.

The verify stage proves, file by file, which git blob each bundle file is (the manifest's blob
sha1 is computed from the bundle's own bytes). A file whose blob the repositories hold can be read
from git (:class:`GitFiles`), so scan, deps and blame need no unpacked copy when the proof came
from the cache. A blob git does not have (the bundle differs from the series there) is read from
the unpacked copy, made on first use by :class:`LazyUnpack`, which checks that the copy has the
proven tree. :class:`DirFiles` reads the copy verify unpacked (a proof computed in this run).

Every read gives the file's bytes or a reason it could not be read; a blob read from git is checked
against the manifest's sha1, so a reader never hands out bytes other than the proven ones.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from auditor.errors import InputError
from auditor.gitio import Git
from auditor.model import BundleFile, Workspace
from auditor.provenance.treehash import MODE_SYMLINK, blob_sha, hash_folder
from auditor.provenance.unpack import unpack_bundle
from auditor.spec import BundleSpec

_READ_WORKERS = 4


@dataclass(frozen=True)
class FileReads:
    """Contents by posix path, and for the paths that could not be read, why."""

    contents: Mapping[str, bytes] = field(default_factory=dict)
    errors: Mapping[str, str] = field(default_factory=dict)


class BundleFiles(ABC):
    """The bundle's regular files, read by path (symlinks and unknown paths are errors)."""

    @abstractmethod
    def read(self, paths: Iterable[str]) -> FileReads:
        """The bytes of each path, or why it could not be read."""

    @abstractmethod
    def root(self) -> Path:
        """The unpacked copy (made on first use when the proof came from the cache)."""

    @abstractmethod
    def read_entries(self, paths: Iterable[str]) -> dict[str, bytes]:
        """The bytes of regular files and the targets of symlinks (as git hashes them);
        an OSError when one cannot be read."""

    def read_one(self, path: str) -> bytes:
        """One file's bytes; an OSError when it cannot be read."""
        got = self.read([path])
        data = got.contents.get(path)
        if data is None:
            raise OSError(got.errors.get(path, "cannot be read"))
        return data


def read_dir(root: Path, paths: Iterable[str], jobs: int = _READ_WORKERS) -> FileReads:
    """Regular files below ``root`` (a symlink or a missing file is an error, never followed)."""

    def one(path: str) -> tuple[str, bytes | str]:
        p = root / path
        try:
            fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError as exc:
            if os.path.islink(p) or exc.errno == errno.ELOOP:
                return path, "not a regular file in the bundle copy"
            return path, f"cannot be read: {exc.strerror or exc}"
        try:
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    return path, "not a regular file in the bundle copy"
                return path, fh.read()
        except OSError as exc:
            return path, f"cannot be read: {exc.strerror or exc}"

    wanted = list(dict.fromkeys(paths))
    if len(wanted) > 8 and jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            got = list(pool.map(one, wanted))
    else:
        got = [one(p) for p in wanted]
    return FileReads(contents={p: v for p, v in got if isinstance(v, bytes)},
                     errors={p: v for p, v in got if isinstance(v, str)})


def read_dir_entries(root: Path, paths: Iterable[str]) -> dict[str, bytes]:
    """Regular files' bytes and symlinks' targets below ``root`` (OSError when one is neither)."""
    out: dict[str, bytes] = {}
    for path in paths:
        p = root / path
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out[path] = os.fsencode(os.readlink(p))
        elif stat.S_ISREG(st.st_mode):
            out[path] = p.read_bytes()
        else:
            raise OSError(f"{path}: not a regular file or symlink in the bundle copy")
    return out


class DirFiles(BundleFiles):
    """The copy the verify stage unpacked in this run."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def read(self, paths: Iterable[str]) -> FileReads:
        return read_dir(self._root, paths)

    def read_entries(self, paths: Iterable[str]) -> dict[str, bytes]:
        return read_dir_entries(self._root, paths)

    def root(self) -> Path:
        return self._root


class LazyUnpack:
    """Unpacks the bundle on first use and checks that the copy has the proven tree."""

    def __init__(self, spec: BundleSpec, workdir: Path, tree: str, jobs: int = 2) -> None:
        self.spec = spec
        self.workdir = workdir
        self.tree = tree
        self.jobs = jobs
        self._lock = threading.Lock()
        self._root: Path | None = None

    def __call__(self) -> Path:
        with self._lock:
            if self._root is None:
                unpacked = unpack_bundle(self.spec, self.workdir)
                hashed = hash_folder(unpacked.root, jobs=self.jobs, known=unpacked.digests)
                if hashed.tree != self.tree:
                    raise InputError(
                        f"bundle {self.spec.path} changed during the audit: it now has tree "
                        f"{hashed.tree[:12]}, not the proven {self.tree[:12]}",
                        hint="run the audit again on a bundle that does not change")
                self._root = unpacked.root
            return self._root


class GitFiles(BundleFiles):
    """Bundle files read from git by their proven blob sha1, the rest from a lazy copy."""

    def __init__(self, git: Git, manifest: Mapping[str, BundleFile],
                 unpack: Callable[[], Path]) -> None:
        self.git = git
        self.manifest = manifest
        self._unpack = unpack

    def root(self) -> Path:
        return self._unpack()

    def read(self, paths: Iterable[str]) -> FileReads:
        wanted = list(dict.fromkeys(paths))
        errors: dict[str, str] = {}
        blobs: dict[str, str] = {}
        for p in wanted:
            f = self.manifest.get(p)
            if f is None or f.mode == MODE_SYMLINK:
                errors[p] = "not a regular file in the bundle"
            else:
                blobs[p] = f.blob
        found = self.git.read_blobs(blobs.values(), missing_ok=True) if blobs else {}
        contents: dict[str, bytes] = {}
        absent: list[str] = []
        for p, sha in blobs.items():
            data = found.get(sha)
            if data is None:
                absent.append(p)  # only the bundle has this content
            elif blob_sha(data) != sha:
                errors[p] = f"git object {sha[:12]} does not hold the proven content"
            else:
                contents[p] = data
        if absent:
            rest = read_dir(self._unpack(), absent)
            contents.update(rest.contents)
            errors.update(rest.errors)
        return FileReads(contents=contents, errors=errors)


    def read_entries(self, paths: Iterable[str]) -> dict[str, bytes]:
        wanted = list(dict.fromkeys(paths))
        unknown = [p for p in wanted if p not in self.manifest]
        if unknown:
            raise OSError(f"{unknown[0]}: not in the bundle")
        shas = {p: self.manifest[p].blob for p in wanted}
        found = self.git.read_blobs(shas.values(), missing_ok=True) if shas else {}
        out: dict[str, bytes] = {}
        absent = []
        for p, sha in shas.items():
            data = found.get(sha)
            if data is None:
                absent.append(p)
            elif blob_sha(data) != sha:
                raise OSError(f"{p}: git object {sha[:12]} does not hold the proven content")
            else:
                out[p] = data
        if absent:
            out.update(read_dir_entries(self._unpack(), absent))
        return out


def bundle_files(ws: Workspace) -> BundleFiles:
    """The workspace's reader: verify's (``ws.files``), else the unpacked copy at bundle_root."""
    files = ws.files
    return files if isinstance(files, BundleFiles) else DirFiles(ws.bundle_root)


def bundle_root(ws: Workspace) -> Path:
    """The unpacked copy, for a stage that needs a folder (the build); made on first use."""
    return bundle_files(ws).root()
