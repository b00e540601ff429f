"""Files hashed while the bundle is unpacked give exactly the manifest a fresh read gives."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from auditor.provenance.treehash import hash_folder
from auditor.provenance.unpack import unpack_bundle
from auditor.spec import BundleSpec


def spec(path: Path) -> BundleSpec:
    return BundleSpec(path=path, strip_components=1, max_bytes=1 << 30, max_files=1000,
                      max_file_bytes=1 << 28)


def add(tar: tarfile.TarFile, name: str, data: bytes = b"", mode: int = 0o644,
        kind: bytes = tarfile.REGTYPE, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.mode, info.type, info.linkname = mode, kind, link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def test_tar_digests_match_a_fresh_hash(tmp_path: Path) -> None:
    bundle = tmp_path / "b.tar.gz"
    with tarfile.open(bundle, "w:gz") as tar:
        add(tar, "top/a.py", b"print('a')\n")
        add(tar, "top/bin/run.sh", b"#!/bin/sh\necho hi\n", mode=0o755)
        add(tar, "top/empty.txt", b"")
        add(tar, "top/big.bin", bytes(range(256)) * 9000)  # more than one write chunk
        add(tar, "top/link", kind=tarfile.SYMTYPE, link="a.py")
        add(tar, "top/hard.py", kind=tarfile.LNKTYPE, link="top/a.py")
    work = tmp_path / "w"
    work.mkdir()
    u = unpack_bundle(spec(bundle), work)
    assert set(u.digests) == {"a.py", "bin/run.sh", "empty.txt", "big.bin", "hard.py"}
    fast = hash_folder(u.root, known=u.digests)
    fresh = hash_folder(u.root)
    assert fast == fresh


def test_a_file_changed_after_unpacking_is_read_again(tmp_path: Path) -> None:
    bundle = tmp_path / "b.zip"
    with zipfile.ZipFile(bundle, "w") as zf:
        zf.writestr("top/a.py", "one\n")
        zf.writestr("top/b.py", "two\n")
    work = tmp_path / "w"
    work.mkdir()
    u = unpack_bundle(spec(bundle), work)
    assert set(u.digests) == {"a.py", "b.py"}
    (u.root / "a.py").write_text("changed, longer\n")
    assert hash_folder(u.root, known=u.digests) == hash_folder(u.root)
