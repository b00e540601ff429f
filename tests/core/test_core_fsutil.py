"""atomic_write_text/bytes: the whole new content or the old one, the mode asked, no leftovers."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from auditor.fsutil import atomic_write_bytes, atomic_write_text


def test_replaces_with_mode_and_creates_folders(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "out.txt"
    atomic_write_text(target, "one\r\ntwo\n")
    assert target.read_bytes() == b"one\r\ntwo\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    atomic_write_bytes(target, b"\x00new", mode=0o600, fsync=True)
    assert target.read_bytes() == b"\x00new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.txt"]


def test_a_failed_write_leaves_the_old_state_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    (target / "inside").mkdir(parents=True)  # a folder is in the way: the rename fails
    with pytest.raises(OSError):
        atomic_write_text(target, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert (target / "inside").is_dir()
