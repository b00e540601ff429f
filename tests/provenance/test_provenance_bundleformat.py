"""The bundle's format is decided by its bytes; polyglots and data after the archive are refused.

Every bundle here is a real file: `git archive` output, or archives built with tarfile, zipfile,
gzip and zlib, then combined the way an attacker would (a zip appended to a tar.gz, a payload
prepended to a zip, a gzip header that is also a tar header, bytes after the end blocks).
"""

from __future__ import annotations

import gzip
import io
import lzma
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from support import GitRepo, simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import InputError
from auditor.provenance.unpack import unpack_bundle
from auditor.spec import BundleSpec


def spec(path: Path, strip: int = 1) -> BundleSpec:
    return BundleSpec(path=path, strip_components=strip, max_bytes=1 << 30, max_files=10_000,
                      max_file_bytes=1 << 28)


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small repository exported by git archive in every format the tool reads."""
    tmp = tmp_path_factory.mktemp("archives")
    repo = GitRepo(tmp / "repo")
    repo.commit("one", files={"pkg/a.py": "A = 1\n", "pkg/b.py": "B = 2\n" * 300,
                              "README": "readme\n"})
    out = {name: repo.archive(tmp / name, prefix="p/")
           for name in ("b.tar", "b.tar.gz", "b.zip")}
    raw = out["b.tar"].read_bytes()
    (tmp / "b.tar.xz").write_bytes(lzma.compress(raw))
    out["b.tar.xz"] = tmp / "b.tar.xz"
    return out


def refused(tmp_path: Path, path: Path, match: str) -> str:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    with pytest.raises(InputError, match=match) as info:
        unpack_bundle(spec(path), work)
    assert list(work.iterdir()) == []  # nothing left behind
    assert str(path) in info.value.message
    return info.value.message


@pytest.mark.parametrize(("name", "fmt", "words"), [
    ("b.tar", "tar", ["ustar header at offset 0", "tar end-of-archive", "does not open as a zip"]),
    ("b.tar.gz", "tar+gzip", ["gzip magic at offset 0", "1 gzip stream", "= end of file"]),
    ("b.tar.xz", "tar+xz", ["xz magic at offset 0", "1 xz stream"]),
    ("b.zip", "zip", ["zip local-header magic at offset 0", "end to end from offset 0",
                      "ending the file", "not a tar header"]),
])
def test_git_archive_formats_are_named_with_evidence(tmp_path, archives, name, fmt, words):
    u = unpack_bundle(spec(archives[name]), tmp_path)
    assert u.format is not None and u.format.format.value == fmt
    for word in words:
        assert word in u.format.evidence
    assert sorted(p.name for p in u.root.rglob("*")) == ["README", "a.py", "b.py", "pkg"]
    assert u.archive_commit is not None  # git archive's commit id, in pax header or zip comment


def test_a_tar_gz_with_a_zip_appended_is_refused(tmp_path, archives):
    """The issue's critical case: tar and pip see the gzip'd tar, zipfile sees the zip."""
    poly = tmp_path / "poly.tar.gz"
    poly.write_bytes(archives["b.tar.gz"].read_bytes() + archives["b.zip"].read_bytes())
    assert zipfile.is_zipfile(poly)  # the old unpacker took this as a zip
    refused(tmp_path, poly, "also opens as a zip")


def test_a_plain_tar_with_a_zip_appended_is_refused(tmp_path, archives):
    poly = tmp_path / "poly.tar"
    poly.write_bytes(archives["b.tar"].read_bytes() + archives["b.zip"].read_bytes())
    refused(tmp_path, poly, "also opens as a zip")


def test_a_zip_with_a_prepended_tar_is_refused(tmp_path, archives):
    """Offset 0 is a tar now; zipfile still finds the zip from the end: two readings."""
    poly = tmp_path / "poly.zip"
    poly.write_bytes(archives["b.tar"].read_bytes() + archives["b.zip"].read_bytes())
    refused(tmp_path, poly, "also opens as a zip")


def test_a_zip_with_a_prepended_payload_is_refused(tmp_path, archives):
    payload = tmp_path / "payload.zip"
    with zipfile.ZipFile(payload, "w") as zf:
        zf.writestr("p/evil.py", "import os\n")
    poly = tmp_path / "poly.zip"
    # a zip local header first (so the magic says zip), then the real archive
    poly.write_bytes(payload.read_bytes()[:-22 - 0] + archives["b.zip"].read_bytes())
    assert zipfile.is_zipfile(poly)
    refused(tmp_path, poly, "data prepended|central directory")


def test_random_bytes_before_a_zip_are_not_an_archive(tmp_path, archives):
    poly = tmp_path / "poly.zip"
    poly.write_bytes(b"#!/bin/sh\necho hi\nexit 0\n" + archives["b.zip"].read_bytes())
    refused(tmp_path, poly, "not an archive this tool reads")


def test_data_after_the_zip_end_record_is_refused(tmp_path, archives):
    poly = tmp_path / "tail.zip"
    poly.write_bytes(archives["b.zip"].read_bytes() + b"more data")
    assert zipfile.is_zipfile(poly)
    refused(tmp_path, poly, "no zip end record ends the file")


def test_a_gap_between_zip_entries_is_refused(tmp_path):
    path = tmp_path / "gap.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("p/a.py", "A = 1\n")
        assert zf.fp is not None
        zf.fp.write(b"HIDDEN PAYLOAD " * 20)  # between the entries, unseen by the zip reader
        zf.start_dir = zf.fp.tell()
        zf.writestr("p/b.py", "B = 2\n")
    with zipfile.ZipFile(path) as zf:
        assert zf.read("p/b.py") == b"B = 2\n"  # a valid zip for zipfile
    refused(tmp_path, path, "gap")


def test_non_zero_bytes_after_the_tar_end_blocks_are_refused(tmp_path, archives):
    for name, data in [("hidden.tar", archives["b.tar"].read_bytes() + b"hidden"),
                       ("hidden.tar.gz", gzip.compress(archives["b.tar"].read_bytes()
                                                       + b"\0" * 512 + b"x"))]:
        path = tmp_path / name
        path.write_bytes(data)
        refused(tmp_path, path, "non-zero data after the tar end-of-archive")


def test_a_second_tar_after_the_first_is_refused(tmp_path, archives):
    """GNU tar -i would read both; the proof would cover only the first."""
    path = tmp_path / "two.tar.gz"
    path.write_bytes(archives["b.tar.gz"].read_bytes() * 2)
    refused(tmp_path, path, "non-zero data after the tar end-of-archive")


def test_bytes_after_the_compressed_stream_are_refused(tmp_path, archives):
    for tail in (b"\0\0\0\0", b"garbage"):
        path = tmp_path / "tail.tar.gz"
        path.write_bytes(archives["b.tar.gz"].read_bytes() + tail)
        refused(tmp_path, path, f"{len(tail)} byte\\(s\\) after the end of the gzip stream")


def test_a_tar_split_over_two_gzip_members_is_one_archive(tmp_path, archives):
    raw = archives["b.tar"].read_bytes()
    path = tmp_path / "two-members.tar.gz"
    path.write_bytes(gzip.compress(raw[:3000]) + gzip.compress(raw[3000:]))
    u = unpack_bundle(spec(path), tmp_path)
    assert u.files == 3 and u.format is not None
    assert "2 gzip streams" in u.format.evidence


def test_a_gzip_whose_header_is_also_a_tar_header_is_refused(tmp_path, archives):
    """gzip's FEXTRA field lets the first 512 bytes be anything: here, a valid tar header, so
    a tar reader told the file is uncompressed and gzip read different archives."""
    hidden = io.BytesIO()
    with tarfile.open(fileobj=hidden, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("p/hidden.py")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))
    block = bytearray(hidden.getvalue()[:512])
    block[0:12] = b"\x1f\x8b\x08\x04" + b"\0" * 4 + b"\0\x03" + (500).to_bytes(2, "little")
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    body = archives["b.tar"].read_bytes()
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = bytes(block) + deflate.compress(body) + deflate.flush()
    data += zlib.crc32(body).to_bytes(4, "little") + len(body).to_bytes(4, "little")
    poly = tmp_path / "poly.tar.gz"
    poly.write_bytes(data)
    assert gzip.decompress(data) == body  # a valid gzip ...
    with tarfile.open(poly, "r:") as tar:  # ... and a plain tar, read without decompressing
        assert tar.firstmember is not None and tar.firstmember.name.startswith("\x1f")
    refused(tmp_path, poly, "also a valid tar header")


def test_zstd_and_unknown_magic_are_refused_by_name(tmp_path):
    z = tmp_path / "b.tar.zst"
    z.write_bytes(b"\x28\xb5\x2f\xfd" + b"\0" * 600)
    refused(tmp_path, z, "zstd")
    v7 = tmp_path / "v7.tar"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        info = tarfile.TarInfo("p/x")
        tar.addfile(info, io.BytesIO(b""))
    block = bytearray(buf.getvalue())
    block[257:265] = b"\0" * 8  # no ustar magic: an old v7 header
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block[:512])
    v7.write_bytes(bytes(block))
    refused(tmp_path, v7, "v7")


def test_a_gzip_that_does_not_hold_a_tar_is_refused(tmp_path):
    path = tmp_path / "notar.tar.gz"
    path.write_bytes(gzip.compress(b"just text\n" * 100))
    refused(tmp_path, path, "not a ustar tar archive")


def test_a_truncated_stream_is_refused(tmp_path, archives):
    data = archives["b.tar.gz"].read_bytes()
    path = tmp_path / "cut.tar.gz"
    path.write_bytes(data[: len(data) // 2])
    refused(tmp_path, path, "truncated|corrupt")


# ---------------------------------------------------------------- through the command line


def test_verify_records_the_format_and_refuses_the_polyglot(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    good = repo.archive(tmp_path / "good.tar.gz", "series", prefix="b/")
    sp = dict(case["spec"], bundle={"path": str(good), "strip_components": 1})
    path = write_spec(tmp_path / "audit.toml", sp)
    res = CliRunner().invoke(app, ["verify", str(path), "--json"])
    assert res.exit_code == 0, res.stderr
    import json

    data = json.loads(res.stdout)
    assert data["bundle_format"]["format"] == "tar+gzip"
    assert "gzip magic at offset 0" in data["bundle_format"]["evidence"]

    other = repo.archive(tmp_path / "other.zip", "v1.0.0", prefix="b/")
    poly = tmp_path / "poly.tar.gz"
    poly.write_bytes(good.read_bytes() + other.read_bytes())
    sp["bundle"] = {"path": str(poly), "strip_components": 1}
    path = write_spec(tmp_path / "audit.toml", sp)
    res = CliRunner().invoke(app, ["verify", str(path), "--json"])
    assert res.exit_code == 2
    text = " ".join(res.stderr.split())
    assert str(poly) in text and "polyglot" in text and "Traceback" not in text
