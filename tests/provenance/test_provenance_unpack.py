"""Safe bundle unpacking: what is refused, what is kept, and that nothing lands outside."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from auditor.errors import InputError
from auditor.provenance.unpack import BundleKind, unpack_bundle
from auditor.spec import BundleSpec


def spec(path: Path, strip: int = 0, **limits: int) -> BundleSpec:
    return BundleSpec(path=path, strip_components=strip,
                      max_bytes=limits.get("max_bytes", 1 << 30),
                      max_files=limits.get("max_files", 10_000),
                      max_file_bytes=limits.get("max_file_bytes", 1 << 28))


def entry(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", mode: int = 0o644
          ) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def make_tar(path: Path, entries: list[tuple[tarfile.TarInfo, bytes]], mode: str = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for info, data in entries:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def everything_under(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("compression", ["w", "w:gz", "w:xz", "w:bz2"])
def test_tar_variants_keep_files_modes_and_links(tmp_path, compression):
    src = make_tar(tmp_path / "b.tar", [
        (entry("top/", tarfile.DIRTYPE), b""),
        (entry("top/run.sh", mode=0o755), b"#!/bin/sh\n"),
        (entry("top/pkg/mod.py"), b"x = 1\n"),
        (entry("top/pkg/alias.py", tarfile.SYMTYPE, link="mod.py"), b""),
        (entry("top/up", tarfile.SYMTYPE, link="pkg"), b""),
        (entry("top/pkg/hard.py", tarfile.LNKTYPE, link="top/pkg/mod.py"), b""),
    ], compression)
    work = tmp_path / "work"
    work.mkdir()
    u = unpack_bundle(spec(src, strip=1), work)
    assert u.kind is BundleKind.TAR and u.files == 5
    assert (u.root / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (u.root / "pkg/mod.py").stat().st_mode & 0o777 == 0o644
    assert os.readlink(u.root / "pkg/alias.py") == "mod.py"
    assert (u.root / "pkg/hard.py").read_bytes() == b"x = 1\n"
    assert not (u.root / "pkg/hard.py").samefile(u.root / "pkg/mod.py")  # copied, not linked
    assert u.root.parent == work


@pytest.mark.parametrize(("entries", "why"), [
    ([(entry("a/../../../escaped"), b"x")], "'..'"),
    ([(entry("/abs-escaped"), b"x")], "absolute path"),
    ([(entry("l", tarfile.SYMTYPE, link="../escaped"), b"")], "outside the bundle"),
    ([(entry("d/l", tarfile.SYMTYPE, link="../../escaped"), b"")], "outside the bundle"),
    ([(entry("l", tarfile.SYMTYPE, link="/etc"), b"")], "absolute path"),
    # `d -> .` is inside, but `d/..` climbs out of a symlinked folder: refused lexically
    ([(entry("d", tarfile.SYMTYPE, link="."), b""),
      (entry("e", tarfile.SYMTYPE, link="d/../escaped"), b"")], "'..' after a name"),
    # writing through a symlink (even one pointing inside) is refused
    ([(entry("sub/", tarfile.DIRTYPE), b""), (entry("s", tarfile.SYMTYPE, link="sub"), b""),
      (entry("s/file"), b"x")], "through a symlink"),
    ([(entry("h", tarfile.LNKTYPE, link="../outside"), b"")], "'..'"),
    ([(entry("h", tarfile.LNKTYPE, link="never-extracted"), b"")], "regular file extracted"),
    ([(entry("dev", tarfile.CHRTYPE), b"")], "device"),
    ([(entry("fifo", tarfile.FIFOTYPE), b"")], "device or fifo"),
    ([(entry("dup"), b"1"), (entry("dup"), b"2")], "more than once"),
    ([(entry("a"), b"x"), (entry("b"), b"x"), (entry("c"), b"x")], "max_files"),
    ([(entry("big"), b"x" * 2000)], "max_file_bytes"),
])
def test_unsafe_tar_entries_are_refused_and_nothing_is_left(tmp_path, entries, why):
    src = make_tar(tmp_path / "evil.tar", entries)
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    with pytest.raises(InputError, match="refused") as err:
        unpack_bundle(spec(src, max_files=2, max_file_bytes=1000), work)
    assert why in str(err.value)
    assert everything_under(tmp_path / "work") == {"deep"}  # the partial copy is gone too
    assert not (tmp_path / "escaped").exists() and not Path("/abs-escaped").exists()


def test_gzip_bomb_stops_at_max_bytes(tmp_path):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = 50 * 1024 * 1024
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    path = tmp_path / "bomb.tar.gz"
    path.write_bytes(gzip.compress(raw.getvalue(), compresslevel=9))
    assert path.stat().st_size < 200_000
    with pytest.raises(InputError, match="max_file_bytes|max_bytes"):
        unpack_bundle(spec(path, max_bytes=1 << 20, max_file_bytes=1 << 20), tmp_path)


def test_zip_keeps_exec_bits_and_symlinks(tmp_path):
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, attr, data in [("p/run.sh", 0o100755, b"#!/bin/sh\n"),
                                 ("p/a.txt", 0o100644, b"a\n"),
                                 ("p/ln", 0o120777, b"a.txt")]:
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, attr << 16
            zf.writestr(info, data)
    u = unpack_bundle(spec(path, strip=1), tmp_path)
    assert u.kind is BundleKind.ZIP
    assert (u.root / "run.sh").stat().st_mode & 0o100
    assert not (u.root / "a.txt").stat().st_mode & 0o100
    assert os.readlink(u.root / "ln") == "a.txt"


def test_zip_device_entry_is_refused(tmp_path):
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as zf:
        info = zipfile.ZipInfo("fifo")
        info.create_system, info.external_attr = 3, 0o010644 << 16
        zf.writestr(info, b"")
    with pytest.raises(InputError, match="device, fifo"):
        unpack_bundle(spec(path), tmp_path)


def test_folder_bundle_is_copied_without_following_links(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg/m.py").write_text("m\n")
    (src / "pkg/alias").symlink_to("m.py")
    (src / ".git").mkdir()
    (src / ".git/config").write_text("[core]\n")
    u = unpack_bundle(spec(src), tmp_path / "")
    assert u.kind is BundleKind.DIRECTORY and u.root != src
    assert everything_under(u.root) == {"pkg", "pkg/m.py", "pkg/alias"}
    assert u.git_entries == (".git",)
    assert os.readlink(u.root / "pkg/alias") == "m.py"


def test_folder_bundle_with_escaping_link_or_fifo_is_refused(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "ok.txt").write_text("ok\n")
    (src / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(InputError, match="absolute path"):
        unpack_bundle(spec(src), tmp_path)
    (src / "passwd").unlink()
    os.mkfifo(src / "fifo")
    with pytest.raises(InputError, match="device, fifo"):
        unpack_bundle(spec(src), tmp_path)


def test_strip_components_too_large_and_not_an_archive(tmp_path):
    src = make_tar(tmp_path / "b.tar", [(entry("top/file"), b"x")])
    with pytest.raises(InputError, match="strip_components is wrong"):
        unpack_bundle(spec(src, strip=2), tmp_path)
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"this is not an archive at all" * 40)
    with pytest.raises(InputError, match="not an archive"):
        unpack_bundle(spec(junk), tmp_path)


def test_non_utf8_name_is_refused(tmp_path):
    src = make_tar(tmp_path / "b.tar", [(entry(os.fsdecode(b"bad\xff")), b"x")])
    with pytest.raises(InputError, match="not valid UTF-8"):
        unpack_bundle(spec(src), tmp_path)
