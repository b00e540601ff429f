"""Where the scanners stage their short-lived copies of the files they read.

The scanners copy the files they are given into a staging folder (semgrep one folder per rule
group, each with the files' own directories: ~1,100 folders for vLLM's 255 changed files) and
the folder is removed after the run. On a disk file system with online discard (this workplace's
ext4), removing a folder costs ~4 ms: 4-5 s of a cold audit's wall time went into ``rmdir``
alone (``benchmarks/RESULTS.md``). A RAM file system (``/dev/shm``, tmpfs) does the same in
milliseconds, so :func:`staging_dir` stages there when the machine has one with room, and in the
given folder otherwise. Only where the copies live changes, never what they hold or how they
are read: ``tests/scan/test_scan_ram_staging.py`` scans the same files both ways and requires the
same answers.

The RAM folder is private (``mkdtemp``: mode 0700, a random name) and removed when the step
ends, whether it succeeded or not.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: RAM file systems tried, in order
RAM_ROOTS = (Path("/dev/shm"),)
#: the most a staging folder may put in RAM (the scanners stage each file a few times)
MAX_RAM_BYTES = 1 << 30
#: what the RAM file system must keep free besides the staging (other programs use it too)
KEEP_FREE = 256 << 20


def ram_root(expected_bytes: int) -> Path | None:
    """A RAM file system with room for ``expected_bytes``, or None."""
    if expected_bytes > MAX_RAM_BYTES:
        return None
    for root in RAM_ROOTS:
        try:
            st = os.statvfs(root)
        except OSError:
            continue
        free = st.f_bavail * st.f_frsize
        if root.is_dir() and os.access(root, os.W_OK | os.X_OK) \
                and free >= expected_bytes + KEEP_FREE:
            return root
    return None


@contextlib.contextmanager
def staging_dir(fallback: Path, expected_bytes: int, *, ram: bool = True) -> Iterator[Path]:
    """A folder for staged copies of about ``expected_bytes``: a private one in RAM when
    ``ram`` and the machine has room (removed on leaving), else ``fallback`` (created; removed
    with the run's work folder, as before)."""
    root = ram_root(expected_bytes) if ram else None
    if root is None:
        fallback.mkdir(parents=True, exist_ok=True)
        yield fallback
        return
    folder = Path(tempfile.mkdtemp(prefix="auditor-staging-", dir=root))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
