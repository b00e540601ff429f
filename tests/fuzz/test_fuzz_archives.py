"""Fuzzing the unpacker: whatever the bundle's bytes, it unpacks or is refused (InputError), and
nothing is ever written outside its own folder."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from fuzz_support import FUZZ, TRIED, archives
from hypothesis import given
from hypothesis import strategies as st

from auditor.errors import InputError
from auditor.provenance.unpack import unpack_bundle
from auditor.spec import BundleSpec


def check_unpacked_tree(root: Path) -> None:
    """Only folders, regular files and symlinks that stay inside ``root``."""
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(folder) / name
            st_ = os.lstat(p)
            if stat.S_ISLNK(st_.st_mode):
                target = os.path.normpath(os.path.join(folder, os.readlink(p)))
                assert target == str(root) or target.startswith(str(root) + os.sep), (p, target)
            else:
                assert stat.S_ISDIR(st_.st_mode) or stat.S_ISREG(st_.st_mode), p


def unpack_property(data: bytes, strip: int) -> None:
    TRIED["archives"] += 1
    with tempfile.TemporaryDirectory(prefix="fuzz-unpack-") as d:
        top = Path(d)
        (top / "work").mkdir()
        (top / "outside").mkdir()
        bundle = top / "bundle.bin"
        bundle.write_bytes(data)
        spec = BundleSpec(path=bundle, strip_components=strip, max_bytes=1 << 20,
                          max_files=100, max_file_bytes=1 << 19)
        try:
            u = unpack_bundle(spec, top / "work")
        except InputError as exc:
            assert str(bundle) in exc.message
            assert os.listdir(top / "work") == []  # a refusal leaves nothing
        else:
            assert u.root.parent == top / "work" and u.format is not None
            check_unpacked_tree(u.root)
        assert sorted(os.listdir(top)) == ["bundle.bin", "outside", "work"]
        assert os.listdir(top / "outside") == []


@FUZZ
@given(archives(), st.integers(0, 2))
def test_unpack_never_crashes_nor_writes_outside(data: bytes, strip: int) -> None:
    unpack_property(data, strip)
