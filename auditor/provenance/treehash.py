"""The git tree hash of a plain folder, computed in Python exactly as git computes it.

Git stores a file as a blob object (``b"blob <size>\\0" + content``) and a folder as a tree object:
entries ``b"<mode> <name>\\0" + <20-byte sha1>``, sorted by name bytes where a sub-tree sorts as if
its name ended in ``/``. Modes are ``100644`` (file), ``100755`` (owner-executable file),
``120000`` (symlink; the blob is the link target) and ``40000`` (tree). Empty folders do not exist
for git, and neither do ``.git`` entries: both are left out, as ``git add -A`` leaves them out.

Each file is read once, for its git blob sha1 and its SHA-256 together, which gives the bundle
manifest (:class:`~auditor.model.BundleFile`) at no extra cost. Big trees are hashed on a thread
pool (hashlib releases the GIL on large buffers).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from auditor.errors import InputError
from auditor.model import BundleFile

MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_SYMLINK = "120000"
MODE_TREE = "40000"
MODE_GITLINK = "160000"

#: the sha1 of the empty tree, which git knows without storing it
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_CHUNK = 1 << 20
_PARALLEL_FROM = 256  # below this many files a pool costs more than it saves


def blob_sha(data: bytes) -> str:
    """The git blob sha1 of ``data``."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


@dataclass(frozen=True)
class FolderHash:
    """A folder's tree hash, its manifest (posix path -> file) and the ``.git`` paths left out."""

    tree: str
    manifest: Mapping[str, BundleFile]
    excluded: tuple[str, ...]


def hash_file(path: Path, rel: str) -> BundleFile:
    """One regular file or symlink, read once: git mode, size, SHA-256 and blob sha1."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        target = os.fsencode(os.readlink(path))
        return BundleFile(path=rel, mode=MODE_SYMLINK, size=len(target),
                          sha256=hashlib.sha256(target).hexdigest(), blob=blob_sha(target))
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{rel}: not a regular file, folder or symlink")
    mode = MODE_EXEC if st.st_mode & stat.S_IXUSR else MODE_FILE
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        sha1 = hashlib.sha1(b"blob %d\0" % size)
        sha256 = hashlib.sha256()
        seen = 0
        while chunk := fh.read(_CHUNK):
            sha1.update(chunk)
            sha256.update(chunk)
            seen += len(chunk)
    if seen != size:  # the file changed while we read it: the header we hashed is wrong
        raise InputError(f"{rel}: changed while it was being hashed")
    return BundleFile(path=rel, mode=mode, size=size, sha256=sha256.hexdigest(),
                      blob=sha1.hexdigest())


def _walk(root: Path, exclude: frozenset[str]) -> tuple[list[tuple[str, Path]], list[str]]:
    """Every file and symlink under ``root`` (never following links), and excluded paths."""
    files: list[tuple[str, Path]] = []
    excluded: list[str] = []
    stack: list[tuple[str, Path]] = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as it:
            for entry in it:
                rel = prefix + entry.name
                if entry.name in exclude:
                    excluded.append(rel)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append((rel + "/", Path(entry.path)))
                elif entry.is_symlink() or entry.is_file(follow_symlinks=False):
                    files.append((rel, Path(entry.path)))
                else:
                    raise InputError(f"{rel}: a device, fifo or socket cannot be part of a bundle")
    return files, sorted(excluded)


def manifest_of(root: Path, *, exclude: Iterable[str] = (".git",), jobs: int | None = None,
                known: Mapping[str, tuple[int, str, str]] | None = None,
                ) -> tuple[dict[str, BundleFile], tuple[str, ...]]:
    """The manifest of every file under ``root`` and the excluded paths.

    ``known`` gives (size, sha256, blob sha1) of files hashed as they were written (by the bundle
    unpacker, into a private folder): such a file that is still a regular file of that size is
    not read again; every other file is.
    """
    files, excluded = _walk(root, frozenset(exclude))
    hashed: list[BundleFile] = []
    if known:
        rest = []
        for rel, p in files:
            f = _known_file(p, rel, known.get(rel))
            if f is None:
                rest.append((rel, p))
            else:
                hashed.append(f)
        files = rest
    workers = jobs or min(8, (os.cpu_count() or 1) * 2)
    if len(files) >= _PARALLEL_FROM and workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            hashed += pool.map(lambda item: hash_file(item[1], item[0]), files, chunksize=64)
    else:
        hashed += [hash_file(p, rel) for rel, p in files]
    return {f.path: f for f in hashed}, tuple(excluded)


def _known_file(path: Path, rel: str, known: tuple[int, str, str] | None) -> BundleFile | None:
    if known is None:
        return None
    size, sha256, blob = known
    st = os.lstat(path)
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        return None
    mode = MODE_EXEC if st.st_mode & stat.S_IXUSR else MODE_FILE
    return BundleFile(path=rel, mode=mode, size=size, sha256=sha256, blob=blob)


def tree_of_entries(entries: Iterable[tuple[str, str, str]]) -> str:
    """The tree sha1 of ``(posix path, mode, blob sha1)`` entries (paths nest into sub-trees)."""
    root: dict[bytes, object] = {}
    for path, mode, sha in entries:
        parts = os.fsencode(path).split(b"/")
        node = root
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"{path}: a parent folder is also a file")
            node = child
        if parts[-1] in node:
            raise ValueError(f"{path}: listed twice")
        node[parts[-1]] = (mode.encode(), bytes.fromhex(sha))
    return _tree(root) or EMPTY_TREE


def _tree(root: dict[bytes, object]) -> str | None:
    """Hash the tree objects bottom-up; None for a tree with no files (git does not store it).

    Iterative (a stack of folders, children before parents), so a path thousands of folders
    deep is hashed like any other."""
    done: dict[int, str | None] = {}  # id(node) -> its tree sha
    stack: list[tuple[dict[bytes, object], bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if not children_done:
            stack.append((node, True))
            stack.extend((v, False) for v in node.values() if isinstance(v, dict))
            continue
        rows: list[tuple[bytes, bytes]] = []  # (sort key, entry bytes)
        for name, value in node.items():
            if isinstance(value, dict):
                sub = done.pop(id(value))
                if sub is not None:
                    rows.append((name + b"/", b"40000 " + name + b"\0" + bytes.fromhex(sub)))
            else:
                assert isinstance(value, tuple)
                mode, raw = value
                rows.append((name, mode + b" " + name + b"\0" + raw))
        if not rows:
            done[id(node)] = None
            continue
        rows.sort(key=lambda r: r[0])
        body = b"".join(r[1] for r in rows)
        h = hashlib.sha1(b"tree %d\0" % len(body))
        h.update(body)
        done[id(node)] = h.hexdigest()
    return done[id(root)]


def hash_folder(root: Path, *, exclude: Iterable[str] = (".git",), jobs: int | None = None,
                known: Mapping[str, tuple[int, str, str]] | None = None) -> FolderHash:
    """The git tree hash of ``root`` as ``git add -A && git write-tree`` would give it
    (``known``: see :func:`manifest_of`)."""
    manifest, excluded = manifest_of(root, exclude=exclude, jobs=jobs, known=known)
    tree = tree_of_entries((f.path, f.mode, f.blob) for f in manifest.values())
    return FolderHash(tree=tree, manifest=manifest, excluded=excluded)


def manifest_digest(manifest: Mapping[str, BundleFile]) -> str:
    """SHA-256 over the manifest: ``<sha256> <mode> <path>\\0`` per file, sorted by path bytes."""
    h = hashlib.sha256()
    for path in sorted(manifest, key=os.fsencode):
        f = manifest[path]
        h.update(f"{f.sha256} {f.mode} ".encode() + os.fsencode(path) + b"\0")
    return h.hexdigest()
