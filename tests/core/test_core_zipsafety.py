"""The shared zip member checks (auditor.zipsafety), on hostile zips written with the real zipfile
module, and the three readers that use them: the bundle, the official wheel and the OSV snapshot."""

from __future__ import annotations

import json
import stat
import struct
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from auditor.deps.vulns.fetch import check_archive
from auditor.errors import InputError
from auditor.provenance.unpack import unpack_bundle
from auditor.rebuild.wheel import unpack_wheel
from auditor.spec import BundleSpec
from auditor.zipsafety import (
    MemberKind,
    UnsafeZip,
    ZipLimits,
    check_members,
    member_kind,
    read_checked,
    unsafe_name,
)

RECORD = json.dumps({"id": "PYSEC-2026-1", "modified": "2026-11-01T00:00:00Z",
                     "affected": [{"package": {"name": "demo", "ecosystem": "PyPI"},
                                   "versions": ["1.0"]}]}).encode()
WIDE = ZipLimits(members=100, member_bytes=1 << 20, total_bytes=1 << 22)

Member = tuple[zipfile.ZipInfo | str, bytes]


def _info(name: str, mode: int, system: int = 3) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
    info.create_system = system
    info.external_attr = mode << 16
    return info


def write_zip(path: Path, members: list[Member]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns on a duplicate name
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members:
                zf.writestr(name, data)
    return path


def declare_size(path: Path, name: str, size: int) -> Path:
    """Rewrite the uncompressed size that the local and central headers of ``name`` declare."""
    raw = bytearray(path.read_bytes())
    encoded = name.encode()
    for sig, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        pos = raw.find(sig)
        while pos >= 0:
            n = struct.unpack_from("<H", raw, pos + (26 if sig == b"PK\x03\x04" else 28))[0]
            start = pos + (30 if sig == b"PK\x03\x04" else 46)
            if raw[start:start + n] == encoded:
                struct.pack_into("<I", raw, pos + at, size)
            pos = raw.find(sig, pos + 4)
    path.write_bytes(bytes(raw))
    return path


# ---------------------------------------------------------------- the rules themselves

HOSTILE: dict[str, tuple[list[Member], str]] = {
    "dotdot": ([("../evil.json", RECORD)], "unsafe member name"),
    "dotdot-inside": ([("a/../../evil.json", RECORD)], "unsafe member name"),
    "absolute": ([("/etc/evil.json", RECORD)], "unsafe member name"),
    "drive": ([("C:evil.json", RECORD)], "unsafe member name"),
    "backslash": ([("a\\..\\evil.json", RECORD)], "unsafe member name"),
    "duplicate": ([("a.json", RECORD), ("a.json", b"{}")], "appears more than once"),
    "symlink": ([(_info("a.json", stat.S_IFLNK | 0o777), b"/etc/passwd")], "is a link"),
    # a link's mode written by a zip that says it was made on MS-DOS: still a link
    "symlink-dos": ([(_info("a.json", stat.S_IFLNK | 0o777, system=0), b"x")], "is a link"),
    "fifo": ([(_info("a.json", stat.S_IFIFO | 0o644), b"")], "device, fifo or socket"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_check_members_refuses_hostile_members(tmp_path: Path, case: str) -> None:
    members, words = HOSTILE[case]
    with zipfile.ZipFile(write_zip(tmp_path / "h.zip", members)) as zf, \
            pytest.raises(UnsafeZip, match=words):
        check_members(zf, WIDE)


def test_a_huge_declared_size_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    path = declare_size(write_zip(tmp_path / "h.zip", [("a.json", RECORD)]), "a.json", 3 << 30)
    with zipfile.ZipFile(path) as zf:
        assert zf.getinfo("a.json").file_size == 3 << 30  # the lie is what zipfile reads
        with pytest.raises(UnsafeZip, match=r"is 3221225472 bytes, more than the limit"):
            check_members(zf, WIDE)


def test_member_count_and_total_limits(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "m.zip", [(f"{i}.json", b"x" * 600) for i in range(5)])
    with zipfile.ZipFile(path) as zf:
        with pytest.raises(UnsafeZip, match="5 members, more than max_files = 4"):
            check_members(zf, ZipLimits(4, 1000, 10_000, members_name="max_files ="))
        with pytest.raises(UnsafeZip, match="more than the limit 2000 bytes in all"):
            check_members(zf, ZipLimits(10, 1000, 2000))
        assert len(check_members(zf, ZipLimits(5, 600, 3000))) == 5  # limits are inclusive


def test_links_pass_only_when_the_reader_takes_them_and_folders_are_told_apart(
        tmp_path: Path) -> None:
    path = write_zip(tmp_path / "ok.zip", [
        ("pkg/", b""), ("pkg/a.py", b"print(1)\n"),
        (_info("pkg/link", stat.S_IFLNK | 0o777), b"a.py"),
        (_info("pkg/run.sh", stat.S_IFREG | 0o755), b"#!/bin/sh\n"),
        (_info("dosfile.txt", stat.S_IFREG | 0o644, system=0), b"x"),
    ])
    with zipfile.ZipFile(path) as zf:
        kinds = {i.filename: k for i, k in check_members(zf, WIDE, symlinks=True)}
        assert kinds == {"pkg/": MemberKind.FOLDER, "pkg/a.py": MemberKind.FILE,
                         "pkg/link": MemberKind.SYMLINK, "pkg/run.sh": MemberKind.FILE,
                         "dosfile.txt": MemberKind.FILE}
        assert member_kind(zf.getinfo("pkg/link")) is MemberKind.SYMLINK
        with pytest.raises(UnsafeZip, match="'pkg/link' is a link"):
            check_members(zf, WIDE)
        # names left to the caller: a '..' name passes here (the bundle checks it after strip)
    path = write_zip(tmp_path / "dots.zip", [("a/../b.py", b"x")])
    with zipfile.ZipFile(path) as zf:
        assert [i.filename for i, _ in check_members(zf, WIDE, names=False)] == ["a/../b.py"]


@pytest.mark.parametrize(("name", "why"), [
    ("", "is empty"), ("/", "is empty"), ("a\0b", "NUL"), ("/a", "absolute"), ("c:/a", "absolute"),
    ("a\\b", "backslash"), ("a//b", "'..' part"), ("./a", "'..' part"), ("a/..", "'..' part"),
])
def test_unsafe_names(name: str, why: str) -> None:
    reason = unsafe_name(name)
    assert reason is not None and why in reason


@pytest.mark.parametrize("name", ["a", "a/b.py", "pkg/", "x..y/z", "..a", "dir.../f"])
def test_safe_names(name: str) -> None:
    assert unsafe_name(name) is None


def test_read_checked_yields_the_bytes_and_a_short_declared_size_fails(tmp_path: Path) -> None:
    data = b"0123456789" * 1000
    path = write_zip(tmp_path / "r.zip", [("a.bin", data)])
    with zipfile.ZipFile(path) as zf:
        assert b"".join(read_checked(zf, zf.getinfo("a.bin"))) == data
    declare_size(path, "a.bin", 10)  # stored: the data is longer than the member says
    with zipfile.ZipFile(path) as zf, pytest.raises((UnsafeZip, zipfile.BadZipFile)):
        b"".join(read_checked(zf, zf.getinfo("a.bin")))


# ---------------------------------------------------------------- the three readers


def _osv(path: Path) -> None:
    check_archive(path, "PyPI")


def _wheel(path: Path) -> None:
    wheel = path.with_name("demo-1.0-py3-none-any.whl")
    path.rename(wheel)
    unpack_wheel(wheel, path.parent / "unpacked")


def _bundle(path: Path) -> None:
    unpack_bundle(BundleSpec(path=path, strip_components=0, max_bytes=1 << 30, max_files=10_000,
                             max_file_bytes=1 << 28), path.parent)


READERS: dict[str, Callable[[Path], None]] = {"osv": _osv, "wheel": _wheel, "bundle": _bundle}
# what the bundle refuses of the hostile cases above, and what it says: it writes links itself and
# checks their targets, and checks names after strip_components, as for tar and folder bundles (a
# backslash is a name character on Unix)
REFUSED_BY_BUNDLE = {"dotdot": "contains '..'", "dotdot-inside": "contains '..'",
                     "absolute": "absolute path", "drive": "absolute path",
                     "duplicate": "appears more than once", "symlink": "absolute path",
                     "fifo": "device, fifo or socket"}
CASES = [(r, c) for r in sorted(READERS) for c in sorted(HOSTILE)
         if r != "bundle" or c in REFUSED_BY_BUNDLE]


@pytest.mark.parametrize(("reader", "case"), CASES)
def test_every_reader_refuses_the_hostile_zips(tmp_path: Path, reader: str, case: str) -> None:
    members, words = HOSTILE[case]
    if reader == "bundle":
        words = REFUSED_BY_BUNDLE[case]
    path = write_zip(tmp_path / "h.zip", members)
    with pytest.raises(InputError, match=words):
        READERS[reader](path)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_reader_refuses_a_huge_declared_size(tmp_path: Path, reader: str) -> None:
    path = declare_size(write_zip(tmp_path / "h.zip", [("a.json", RECORD)]), "a.json", 4_000_000_000)
    with pytest.raises(InputError, match="is 4000000000 bytes, more than"):
        READERS[reader](path)


def test_the_bundle_keeps_a_relative_link_whatever_system_made_the_zip(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "b.zip", [
        ("a.py", b"x = 1\n"), (_info("b.py", stat.S_IFLNK | 0o777, system=0), b"a.py")])
    root = unpack_bundle(BundleSpec(path=path, strip_components=0, max_bytes=1 << 20,
                                    max_files=10, max_file_bytes=1 << 20), tmp_path).root
    assert (root / "b.py").is_symlink() and (root / "b.py").readlink() == Path("a.py")
