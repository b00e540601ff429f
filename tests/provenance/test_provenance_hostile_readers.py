"""A bundle member is accepted only when every common extractor reads it the same (issue 30 item 3).

Each hostile archive is built here byte by byte; the real GNU tar, bsdtar and Info-ZIP unzip are run
on it to show that their reading differs from Python's, and auditor must refuse it as a failed
proof (exit 1) naming the member. Normal archives (git archive, tar czf, bsdtar, zip -r) still prove.
"""

from __future__ import annotations

import json
import shutil
import stat
import struct
import subprocess
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from support import GitRepo, simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import EXIT_POLICY
from auditor.provenance.treehash import hash_folder, tree_of_entries
from auditor.provenance.unpack import AmbiguousBundle, hash_bundle, unpack_bundle
from auditor.spec import BundleSpec

# ---------------------------------------------------------------- tar bytes, written by hand


def header(name: bytes = b"", *, mode: int = 0o644, size: int = 0, typ: bytes = b"0",
           link: bytes = b"", magic: bytes = b"ustar\x0000", prefix: bytes = b"",
           size_field: bytes | None = None, mode_field: bytes | None = None) -> bytes:
    b = bytearray(512)
    b[0:len(name)] = name
    b[100:108] = mode_field if mode_field is not None else b"%07o\0" % mode
    b[108:116] = b"0000000\0"
    b[116:124] = b"0000000\0"
    b[124:136] = size_field if size_field is not None else b"%011o\0" % size
    b[136:148] = b"00000000000\0"
    b[156:157] = typ
    b[157:157 + len(link)] = link
    b[257:265] = magic
    b[345:345 + len(prefix)] = prefix
    b[148:156] = b" " * 8
    b[148:156] = b"%06o\0 " % sum(b)
    return bytes(b)


def blocks(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


def pax(records: list[tuple[bytes, bytes]], typ: bytes = b"x") -> bytes:
    body = b""
    for key, value in records:
        rec = b" " + key + b"=" + value + b"\n"
        n = len(rec) + 1
        while len(str(n)) + len(rec) != n:
            n = len(str(n)) + len(rec)
        body += str(n).encode() + rec
    return header(b"././@PaxHeader", size=len(body), typ=typ) + blocks(body)


def gnu_long(value: bytes, typ: bytes = b"L") -> bytes:
    return header(b"././@LongLink", size=len(value) + 1, typ=typ,
                  magic=b"ustar  \0") + blocks(value + b"\0")


def hi(name: bytes, **kw: object) -> bytes:
    return header(name, size=3, **kw) + blocks(b"hi\n")  # type: ignore[arg-type]


END = b"\0" * 1024

#: name -> (archive bytes, words the refusal must hold)
TAR_CASES: dict[str, tuple[bytes, list[str]]] = {
    "sparse-name-before-path": (
        pax([(b"GNU.sparse.name", b"evil.txt"), (b"path", b"good.txt")]) + hi(b"x.txt"),
        ["GNU.sparse.name", "evil.txt"]),
    "gnu-long-name-then-pax-path": (
        gnu_long(b"fromL.txt") + pax([(b"path", b"frompax.txt")]) + hi(b"x.txt"),
        ["fromL.txt", "frompax.txt", "GNU long name and a pax path"]),
    "gnu-long-link-then-pax-linkpath": (
        gnu_long(b"fromK", b"K") + pax([(b"linkpath", b"frompax")])
        + header(b"x", typ=b"2", link=b"hdr"),
        ["fromK", "frompax", "long link"]),
    "old-gnu-magic-with-prefix": (
        hi(b"x.txt", magic=b"ustar  \0", prefix=b"pre"), ["pre/x.txt", "x.txt", "old-GNU"]),
    "v7-header-with-prefix": (
        hi(b"a.txt") + hi(b"x.txt", magic=b"\0" * 8, prefix=b"pre"), ["pre/x.txt", "x.txt"]),
    "file-named-with-slash": (header(b"d/", typ=b"0"), ["'d/'", "folder"]),
    "pax-path-with-slash": (pax([(b"path", b"f/")]) + hi(b"x.txt"), ["'f/'", "folder"]),
    "symlink-with-data": (
        header(b"l", typ=b"2", link=b"t", size=512) + blocks(b"A" * 512) + hi(b"y.txt"),
        ["'l'", "symlink with a size of 512"]),
    "size-written-0o": (header(b"x.txt", size_field=b"0o00000003\0\0") + blocks(b"hi\n"),
                        ["size field", "not plain octal"]),
    "mode-written-base64": (header(b"x.sh", mode_field=b"+0000755", size=3) + blocks(b"hi\n"),
                            ["mode field", "not plain octal"]),
    "pax-size-with-underscore": (pax([(b"size", b"0_3")]) + hi(b"x.txt"), ["pax size", "0_3"]),
    "global-header-sets-path": (pax([(b"path", b"gpath.txt")], b"g") + hi(b"x.txt"),
                                ["global header", "gpath.txt"]),
    "two-pax-headers": (pax([(b"path", b"p1.txt")]) + pax([(b"path", b"p2.txt")]) + hi(b"x.txt"),
                        ["second pax extended header"]),
    "long-name-continued-in-padding": (
        header(b"././@LongLink", size=5, typ=b"L", magic=b"ustar  \0")
        + blocks(b"abcde" + b"XYZ.txt") + hi(b"x.txt"), ["padding"]),
}


def spec(path: Path, strip: int = 0) -> BundleSpec:
    return BundleSpec(path=path, strip_components=strip, max_bytes=1 << 30, max_files=10_000,
                      max_file_bytes=1 << 28)


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed: the readings cannot be compared")
    return found


def tar_listing(binary: str, path: Path) -> list[str]:
    """What a tar binary reads: 'perms size name[ -> target]' per member, or ERROR lines."""
    res = subprocess.run([binary, "-tvf", str(path)], capture_output=True, text=True, check=False)
    out = []
    for line in res.stdout.splitlines():
        if binary.endswith("bsdtar"):
            perms, _n, _u, _g, size, _m, _d, _y, rest = line.split(maxsplit=8)
        else:
            perms, _owner, size, _date, _time, rest = line.split(maxsplit=5)
        out.append(f"{perms} {size} {rest}")
    return out + (["ERROR"] if res.returncode else [])


def python_listing(path: Path) -> list[str]:
    out = []
    try:
        with tarfile.open(path) as tar:
            for m in tar:
                kind = (stat.S_IFDIR if m.isdir() else stat.S_IFLNK if m.issym()
                        else stat.S_IFREG)
                name = m.name + ("/" if m.isdir() else "")
                link = f" -> {m.linkname}" if m.issym() else ""
                out.append(f"{stat.filemode(kind | (m.mode & 0o7777))} {m.size} {name}{link}")
    except (tarfile.TarError, ValueError) as exc:
        out.append(f"ERROR {exc}")
    return out


def refused_both_ways(tmp_path: Path, path: Path, words: list[str]) -> str:
    """hash_bundle and unpack_bundle both refuse it as a failed proof (exit 1) and say why."""
    with pytest.raises(AmbiguousBundle) as streamed:
        hash_bundle(spec(path))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    with pytest.raises(AmbiguousBundle) as unpacked:
        unpack_bundle(spec(path), work)
    assert list(work.iterdir()) == []
    for exc in (streamed.value, unpacked.value):
        assert exc.exit_code == EXIT_POLICY
        assert str(path) in exc.message
        for word in words:
            assert word in exc.message, exc.message
    return streamed.value.message


@pytest.mark.parametrize("case", sorted(TAR_CASES))
def test_a_tar_member_the_extractors_read_differently_fails_the_proof(tmp_path, case):
    data, words = TAR_CASES[case]
    path = tmp_path / f"{case}.tar"
    path.write_bytes(data + END)
    readings = {"python": python_listing(path), "gnu": tar_listing(tool("tar"), path),
                "bsdtar": tar_listing(tool("bsdtar"), path)}
    assert len({tuple(r) for r in readings.values()}) > 1, readings  # they really differ
    refused_both_ways(tmp_path, path, words)


def test_the_long_name_readings_are_the_ones_the_message_names(tmp_path):
    data, _ = TAR_CASES["gnu-long-name-then-pax-path"]
    path = tmp_path / "b.tar"
    path.write_bytes(data + END)
    assert python_listing(path)[0].endswith(" fromL.txt")
    assert tar_listing(tool("tar"), path)[0].endswith(" frompax.txt")
    message = refused_both_ways(tmp_path, path, [])
    assert "Python's tarfile reads 'fromL.txt', GNU tar reads 'frompax.txt'" in message


def test_a_compressed_ambiguous_tar_is_refused_too(tmp_path):
    import gzip

    data, _ = TAR_CASES["old-gnu-magic-with-prefix"]
    path = tmp_path / "b.tar.gz"
    path.write_bytes(gzip.compress(data + END))
    refused_both_ways(tmp_path, path, ["pre/x.txt"])


@pytest.mark.parametrize(("data", "word"), [
    (pax([(b"path", b"frompax.txt")]) + gnu_long(b"fromL.txt") + hi(b"x.txt"), "long name"),
    (pax([(b"path", b"p1.txt"), (b"path", b"p2.txt")]) + hi(b"x.txt"), "given twice"),
    (gnu_long(b"a.txt") + gnu_long(b"b.txt") + hi(b"x.txt"), "second GNU long name"),
    (pax([(b"path", b"a.txt")]) + END, "followed by the end"),
])
def test_constructs_todays_readers_happen_to_agree_on_are_refused_too(tmp_path, data, word):
    """Fail closed: an order-dependent construct is refused even where the three agree today."""
    path = tmp_path / "b.tar"
    path.write_bytes(data + END)
    with pytest.raises(AmbiguousBundle, match=word):
        hash_bundle(spec(path))


@pytest.mark.parametrize(("records", "word"), [
    ([(b"SCHILY.xattr.security.capability", b"\x01\x00\x00\x02")], "security.capability"),
    ([(b"SCHILY.fflags", b"schg")], "SCHILY.fflags"),
    ([(b"GNU.sparse.major", b"1"), (b"GNU.sparse.minor", b"0")], "GNU.sparse.major"),
    ([(b"LIBARCHIVE.symlinktype", b"dir")], "LIBARCHIVE.symlinktype"),
])
def test_pax_keywords_not_every_reader_applies_are_refused(tmp_path, records, word):
    path = tmp_path / "b.tar"
    path.write_bytes(pax(records) + hi(b"x.txt") + END)
    refused_both_ways(tmp_path, path, [word])


# ---------------------------------------------------------------- zip bytes, written by hand


def zip_bytes(members: list[dict[str, object]]) -> bytes:
    out, cd = b"", b""
    for m in members:
        name: bytes = m["name"]  # type: ignore[assignment]
        data: bytes = m.get("data", b"hi\n")  # type: ignore[assignment]
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        raw = comp.compress(data) + comp.flush()
        usize: int = m.get("usize", len(data))  # type: ignore[assignment]
        crc = zlib.crc32(data[:usize])
        flags: int = m.get("flags", 0)  # type: ignore[assignment]
        extra: bytes = m.get("extra", b"")  # type: ignore[assignment]
        lextra: bytes = m.get("local_extra", extra)  # type: ignore[assignment]
        system: int = m.get("system", 3)  # type: ignore[assignment]
        attr: int = m.get("attr", 0o100644 << 16)  # type: ignore[assignment]
        lcrc: int = m.get("local_crc", crc)  # type: ignore[assignment]
        local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, flags, 8, 0, 0, lcrc, len(raw), usize,
                            len(name), len(lextra)) + name + lextra
        cd += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (system << 8) | 20, 20, flags, 8, 0,
                          0, crc, len(raw), usize, len(name), len(extra), 0, 0, 0, attr,
                          len(out)) + name + extra
        out += local + raw
    return out + cd + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                                  len(cd), len(out), 0)


def unicode_path(name: bytes, uname: bytes) -> bytes:
    body = b"\x01" + struct.pack("<I", zlib.crc32(name)) + uname
    return struct.pack("<HH", 0x7075, len(body)) + body


ZIP_CASES: dict[str, tuple[list[dict[str, object]], list[str]]] = {
    "unicode-path-extra": ([{"name": b"good.txt", "extra": unicode_path(b"good.txt",
                                                                        b"evil.txt")}],
                           ["good.txt", "evil.txt", "0x7075"]),
    "deflate-longer-than-declared": ([{"name": b"a.txt", "data": b"hi\nEVIL PAYLOAD\n",
                                       "usize": 3}], ["'a.txt'", "more than the 3 bytes"]),
    "name-not-ascii-without-utf8-flag": ([{"name": "café.txt".encode()}], ["cp437"]),
    "folder-mode-without-slash": ([{"name": b"d", "data": b"", "attr": (0o40755 << 16) | 0x10}],
                                  ["'d'", "mode says folder"]),
    "dos-host-with-setuid-mode": ([{"name": b"run", "system": 0,
                                    "attr": (0o104644 << 16) | 0x20}], ["system 0", "4644"]),
}


def unzip_reading(path: Path, dest: Path) -> list[str]:
    """What unzip writes: 'perms size name' per file it extracted (-K: as root keeps modes)."""
    dest.mkdir()
    subprocess.run([tool("unzip"), "-q", "-o", "-K", str(path), "-d", str(dest)], capture_output=True,
                   check=False)
    return sorted(f"{stat.filemode(p.lstat().st_mode)} {p.lstat().st_size} "
                  f"{p.relative_to(dest)}" for p in dest.rglob("*"))


def python_zip_reading(path: Path) -> list[str]:
    out = []
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            mode = info.external_attr >> 16 if info.create_system == 3 else 0
            kind = stat.S_IFDIR if (info.is_dir() or stat.S_ISDIR(mode)) else stat.S_IFREG
            perms = stat.filemode(kind | ((mode & 0o7777) or 0o644))
            out.append(f"{perms} {len(zf.read(info)) if kind == stat.S_IFREG else 0} "
                       f"{info.filename.rstrip('/')}")
    return sorted(out)


@pytest.mark.parametrize("case", sorted(ZIP_CASES))
def test_a_zip_member_unzip_reads_differently_fails_the_proof(tmp_path, case):
    members, words = ZIP_CASES[case]
    path = tmp_path / f"{case}.zip"
    path.write_bytes(zip_bytes(members))
    python, unzip = python_zip_reading(path), unzip_reading(path, tmp_path / "unzipped")
    assert python != unzip, (python, unzip)  # the readings really differ
    refused_both_ways(tmp_path, path, words)


@pytest.mark.parametrize(("member", "word"), [
    ({"name": b"a.txt", "local_crc": 1}, "CRC"),
    ({"name": b"good.txt", "local_extra": unicode_path(b"good.txt", b"evil.txt")}, "evil.txt"),
    ({"name": b"dir\\a.txt"}, "backslash"),
    ({"name": b"a.txt", "extra": struct.pack("<HH", 0x756E, 4) + b"\0\0\0\0"}, "0x756e"),
    ({"name": b"a.txt", "data": b"hello world\n" * 10, "usize": 119}, "more than the 119"),
])
def test_zip_members_outside_what_both_readers_share_are_refused(tmp_path, member, word):
    path = tmp_path / "b.zip"
    path.write_bytes(zip_bytes([member]))
    refused_both_ways(tmp_path, path, [word])


# ---------------------------------------------------------------- normal archives still prove


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, Path]:
    tmp = tmp_path_factory.mktemp("tree")
    deep = "pkg/" + "d" * 120 + "/sub/" + "f" * 150 + ".txt"
    repo = GitRepo(tmp / "repo")
    repo.commit("one", files={"pkg/a.py": "A = 1\n", deep: "deep\n", "README": "readme\n"})
    src = tmp / "src"
    src.mkdir()
    subprocess.run(["git", "-C", str(repo.path), "archive", "--format=tar", "-o",
                    str(tmp / "x.tar"), "HEAD"], check=True)
    subprocess.run(["tar", "-xf", str(tmp / "x.tar"), "-C", str(src)], check=True)
    (src / "pkg" / "run.sh").write_text("#!/bin/sh\n")
    (src / "pkg" / "run.sh").chmod(0o755)
    (src / "pkg" / "link").symlink_to("a.py")
    return repo, src


@pytest.mark.parametrize("maker", ["git-tar", "git-tgz", "git-zip", "gnu-tar", "gnu-posix",
                                   "gnu-oldgnu", "bsdtar", "bsdtar-pax", "zip-r", "python-pax",
                                   "python-gnu"])
def test_normal_archives_of_every_common_writer_still_prove(tmp_path, tree, maker):
    repo, src = tree
    out = tmp_path / "b"
    if maker.startswith("git-"):
        ext = {"git-tar": "tar", "git-tgz": "tar.gz", "git-zip": "zip"}[maker]
        path = repo.archive(tmp_path / f"b.{ext}", prefix="")
        expected = repo.git("rev-parse", "HEAD^{tree}").strip()
    else:
        expected = hash_folder(src).tree
        path = tmp_path / ("b.zip" if maker == "zip-r" else "b.tar")
        if maker.startswith("gnu"):
            fmt = {"gnu-tar": "gnu", "gnu-posix": "posix", "gnu-oldgnu": "oldgnu"}[maker]
            cmd = [tool("tar"), f"--format={fmt}", "-cf", str(path), "-C", str(src), "."]
        elif maker.startswith("bsdtar"):
            fmt_args = ["--format", "pax"] if maker == "bsdtar-pax" else []
            cmd = [tool("bsdtar"), *fmt_args, "-cf", str(path), "-C", str(src), "."]
        elif maker == "zip-r":
            cmd = ["sh", "-c", f"cd '{src}' && '{tool('zip')}' -qry '{path}' ."]
        else:
            fmt = tarfile.PAX_FORMAT if maker == "python-pax" else tarfile.GNU_FORMAT
            with tarfile.open(path, "w", format=fmt) as tar:
                tar.add(src, ".")
            cmd = []
        if cmd:
            subprocess.run(cmd, check=True)
    scan = hash_bundle(spec(path))
    assert scan is not None
    assert tree_of_entries((f.path, f.mode, f.blob) for f in scan.manifest.values()) == expected
    out.mkdir()
    unpacked = unpack_bundle(spec(path), out)
    assert hash_folder(unpacked.root).tree == expected


def test_verify_fails_the_proof_of_an_ambiguous_bundle_with_exit_1(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    good = repo.archive(tmp_path / "good.tar", "series", prefix="b/")
    raw = good.read_bytes()
    # the same archive with one member more, named differently for Python and for GNU tar
    end = len(raw)
    while raw[end - 512:end] == b"\0" * 512:
        end -= 512
    hostile = tmp_path / "hostile.tar"
    hostile.write_bytes(raw[:end] + gnu_long(b"b/engine/extra.py")
                        + pax([(b"path", b"b/engine/__init__.py")]) + hi(b"x") + END)
    sp = dict(case["spec"], bundle={"path": str(hostile), "strip_components": 1})
    path = write_spec(tmp_path / "audit.toml", sp)
    res = CliRunner().invoke(app, ["verify", str(path), "--json"])
    assert res.exit_code == 1, res.stderr
    data = json.loads(res.stdout)
    assert data["status"] == "failed"
    reason = " ".join(data["reasons"])
    assert "b/engine/extra.py" in reason and "ambiguous" in reason
    assert "Traceback" not in res.stderr


def test_audit_of_an_ambiguous_bundle_is_a_fail_verdict_with_the_reason(tmp_path):
    case = simple_case(tmp_path)
    data, _ = TAR_CASES["old-gnu-magic-with-prefix"]
    hostile = tmp_path / "hostile.tar"
    hostile.write_bytes(data + END)
    sp = dict(case["spec"], bundle={"path": str(hostile), "strip_components": 0})
    out = tmp_path / "audit-out"
    res = CliRunner().invoke(app, ["audit", str(write_spec(tmp_path / "audit.toml", sp)),
                                   "--out", str(out)])
    assert res.exit_code == 1, res.output
    audit = json.loads((out / "audit.json").read_text())
    assert audit["verdict"] == "FAIL"
    assert audit["stages"]["verify"]["status"] == "failed"
    assert "pre/x.txt" in " ".join(audit["stages"]["verify"]["reasons"])
    assert "pre/x.txt" in (out / "report.md").read_text()
