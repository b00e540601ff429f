"""Writing a file atomically: a sibling temporary file, renamed into place.

A reader sees the old file or the new one, never half of one; a failed write leaves no temporary
file behind. The file has ``mode`` from the start (never briefly more open).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
