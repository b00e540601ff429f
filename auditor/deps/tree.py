"""Read-only views of the two trees compared: upstream through git, the bundle from its copy.

Nothing is checked out and no symbolic link is followed: the upstream tree is read with
``git ls-tree -r`` and ``git cat-file --batch``; the bundle from the verified private copy, listing
only regular files (the workspace manifest, or a walk that does not follow links).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path, PurePosixPath

from auditor.gitio import Git
from auditor.model import BundleFile
from auditor.provenance.bundlefiles import BundleFiles

MAX_FILE_BYTES = 4 * 1024 * 1024  # a dependency file larger than this is not read


class Tree(ABC):
    """A set of posix paths with their contents."""

    label: str

    @abstractmethod
    def paths(self) -> tuple[str, ...]:
        """Every regular file, sorted."""

    @abstractmethod
    def read_many(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        """Contents by path; None for a file that is missing or too large to read."""

    def read_text(self, path: str) -> str | None:
        data = self.read_many([path]).get(path)
        return None if data is None else data.decode("utf-8", "replace")


class GitTree(Tree):
    """A commit's tree in a repository (bare or not)."""

    def __init__(self, git: Git, commit: str, label: str = "upstream") -> None:
        self.git = git
        self.commit = commit
        self.label = label
        self._blobs: dict[str, tuple[str, int]] = {
            path: (e.sha, e.size or 0) for path, e in git.ls_tree(commit, sizes=True).items()
            if e.type == "blob" and e.mode != "120000"}

    def paths(self) -> tuple[str, ...]:
        return tuple(sorted(self._blobs))

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        wanted = [p for p in paths if p in self._blobs]
        out: dict[str, bytes | None] = {p: None for p in paths}
        small = [p for p in wanted if self._blobs[p][1] <= MAX_FILE_BYTES]
        if not small:
            return out
        blobs = self.git.read_blobs(self._blobs[p][0] for p in small)
        out.update((p, blobs[self._blobs[p][0]]) for p in small)
        return out


class DirTree(Tree):
    """The bundle's private copy; regular files only (links are not followed)."""

    def __init__(self, root: Path, manifest: Mapping[str, BundleFile] | None = None,
                 label: str = "bundle") -> None:
        self.root = root
        self.label = label
        if manifest:
            self._paths = tuple(sorted(p for p, f in manifest.items() if f.mode != "120000"))
        else:
            found = []
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                dirnames[:] = [d for d in dirnames if d != ".git"]
                for name in filenames:
                    full = Path(dirpath) / name
                    if full.is_symlink() or not full.is_file():
                        continue
                    found.append(full.relative_to(root).as_posix())
            self._paths = tuple(sorted(found))

    def paths(self) -> tuple[str, ...]:
        return self._paths

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for p in paths:
            full = self.root / p
            try:
                if full.is_symlink() or not full.is_file() or full.stat().st_size > MAX_FILE_BYTES:
                    out[p] = None
                else:
                    out[p] = full.read_bytes()
            except OSError:
                out[p] = None
        return out


class BundleTree(Tree):
    """The bundle's regular files as the verify stage proved them (its manifest), read from where
    verify says: the proven git objects, or the unpacked copy (:mod:`auditor.provenance.bundlefiles`)."""

    def __init__(self, files: BundleFiles, manifest: Mapping[str, BundleFile],
                 label: str = "bundle") -> None:
        self.files = files
        self.manifest = manifest
        self.label = label
        self._paths = tuple(sorted(p for p, f in manifest.items() if f.mode != "120000"))

    def paths(self) -> tuple[str, ...]:
        return self._paths

    def read_many(self, paths: Iterable[str]) -> dict[str, bytes | None]:
        paths = list(paths)
        small = [p for p in paths if p in self.manifest and self.manifest[p].mode != "120000"
                 and self.manifest[p].size <= MAX_FILE_BYTES]
        got = self.files.read(small).contents if small else {}
        return {p: got.get(p) for p in paths}


def select(paths: Iterable[str], wanted: Callable[[PurePosixPath], bool]) -> list[str]:
    return [p for p in paths if not p.startswith(".git/") and wanted(PurePosixPath(p))]
