"""Files: written atomically (a sibling temporary file, renamed into place), hashed, and kept as
JSON entries of a cache (:class:`JsonStore`).

A reader sees the old file or the new one, never half of one; a failed write leaves no temporary
file behind. The file has ``mode`` from the start (never briefly more open).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes, *, mode: int = 0o644, fsync: bool = False) -> None:
    """Replace ``path`` with ``data``; ``fsync`` also flushes the file and its folder to disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def atomic_write_text(path: Path, text: str, *, mode: int = 0o644, fsync: bool = False) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8 (newlines written as given)."""
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode, fsync=fsync)


def sha256_file(path: Path, *, follow_symlinks: bool = True) -> str:
    """The sha256 of a file's bytes, read in 1 MiB chunks; without ``follow_symlinks`` a symlink
    is refused (OSError) rather than followed."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | (0 if follow_symlinks else os.O_NOFOLLOW))
    with os.fdopen(fd, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


class JsonStore:
    """A cache's entries: one JSON object per key (a hex digest) in ``<root>/<key[:2]>/<key>.json``,
    each naming its own key. An entry that cannot be read, is not an object or names another key
    is a miss; one that cannot be written only costs speed (:meth:`put` says False)."""

    def __init__(self, root: Path, *, mode: int = 0o600) -> None:
        self.root = root
        self.mode = mode

    def file(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.file(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put(self, key: str, entry: Mapping[str, Any]) -> bool:
        try:
            atomic_write_text(self.file(key), json.dumps({**entry, "key": key},
                                                         separators=(",", ":")), mode=self.mode)
        except OSError:
            return False
        return True


def relative_path(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """``path`` relative to ``root`` (the spec's folder; "../x" when outside it), "/"-separated:
    how outputs name a local file, never by an absolute path of the review machine."""
    return Path(os.path.relpath(Path(path).resolve(), Path(root).resolve())).as_posix()
