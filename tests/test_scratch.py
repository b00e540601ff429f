"""Staging folders in RAM where there is room, else in the given folder (auditor.scratch)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from auditor import scratch

needs_ram_fs = pytest.mark.skipif(scratch.ram_root(1) is None,
                                  reason="this machine has no writable /dev/shm with room")


@needs_ram_fs
def test_a_small_staging_goes_to_ram_private_and_is_removed_after(tmp_path: Path) -> None:
    with scratch.staging_dir(tmp_path / "scan-x", 1000) as d:
        assert d.parent in scratch.RAM_ROOTS
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
        (d / "a" / "b").mkdir(parents=True)
        (d / "a" / "b" / "f.py").write_text("x = 1\n")
    assert not d.exists()
    assert not (tmp_path / "scan-x").exists()  # the fallback was not made


@needs_ram_fs
def test_the_ram_folder_is_removed_when_the_step_fails(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), scratch.staging_dir(tmp_path / "s", 10) as d:
        (d / "f").write_text("x")
        raise RuntimeError("a scanner crashed")
    assert not d.exists()


def test_no_ram_too_big_or_no_room_uses_the_given_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    with scratch.staging_dir(tmp_path / "plain", 10, ram=False) as d:
        assert d == tmp_path / "plain" and d.is_dir()
    assert d.is_dir()  # removed with the run's work folder, not here
    with scratch.staging_dir(tmp_path / "big", scratch.MAX_RAM_BYTES + 1) as d:
        assert d == tmp_path / "big"
    # a RAM root that is not there, or not writable: the given folder
    missing = tmp_path / "no-such-shm"
    monkeypatch.setattr(scratch, "RAM_ROOTS", (missing,))
    assert scratch.ram_root(10) is None
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    monkeypatch.setattr(scratch, "RAM_ROOTS", (ro,))
    try:
        if os.geteuid() != 0:  # root writes anywhere: the check is the kernel's, not ours
            assert scratch.ram_root(10) is None
    finally:
        ro.chmod(0o700)
