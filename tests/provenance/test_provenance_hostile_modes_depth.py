"""Modes beyond the x bit are findings (issue 30 item 16); a path thousands of folders deep is a
clear refusal, never a RecursionError (item 19).

The bundles are real: tar and zip archives written with tarfile/zipfile and GNU tar, folders made
on disk with the modes set, a 4,000-folder-deep tree made with directory descriptors.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
from support import GitRepo, simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.errors import EXIT_USAGE, InputError
from auditor.provenance.anomalies import AnomalyKind, mode_anomalies
from auditor.provenance.treehash import hash_folder, tree_of_entries
from auditor.provenance.unpack import SpecialMode, hash_bundle, unpack_bundle
from auditor.spec import BundleSpec


def spec(path: Path, strip: int = 0) -> BundleSpec:
    return BundleSpec(path=path, strip_components=strip, max_bytes=1 << 30, max_files=10_000,
                      max_file_bytes=1 << 28)


def add(tar: tarfile.TarFile, name: str, mode: int, data: bytes | None = b"x\n") -> None:
    info = tarfile.TarInfo(name)
    info.mode = mode
    if data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


MODES = {"b/bin/su": (0o4755, False), "b/bin/grp": (0o2755, False), "b/tmp": (0o1777, True),
         "b/share": (0o0777, True), "b/conf.txt": (0o0666, False), "b/shared": (0o2775, True)}


def special_tar(path: Path) -> Path:
    with tarfile.open(path, "w") as tar:
        add(tar, "b/", 0o755, None)
        add(tar, "b/bin/", 0o755, None)
        add(tar, "b/plain.txt", 0o644)
        add(tar, "b/run.sh", 0o755)
        for name, (mode, folder) in MODES.items():
            add(tar, name + ("/" if folder else ""), mode, None if folder else b"x\n")
        add(tar, "b/tmp/keep", 0o644)
    return path


def expected(strip: int = 0) -> dict[str, int]:
    return {"/".join(k.split("/")[strip:]): m for k, (m, _) in MODES.items()}


def test_tar_special_modes_are_recorded_streamed_and_unpacked(tmp_path):
    path = special_tar(tmp_path / "b.tar")
    scan = hash_bundle(spec(path))
    assert scan is not None
    assert {k: v.bits for k, v in scan.modes.items()} == expected()
    assert scan.modes["b/tmp"].folder and not scan.modes["b/bin/su"].folder
    work = tmp_path / "w"
    work.mkdir()
    unpacked = unpack_bundle(spec(path), work)
    assert {k: v.bits for k, v in unpacked.modes.items()} == expected()
    # the private copy never carries the bits
    assert not os.lstat(unpacked.root / "b/bin/su").st_mode & 0o7000
    assert "b/plain.txt" not in unpacked.modes and "b/run.sh" not in unpacked.modes


def test_zip_special_modes_are_recorded(tmp_path):
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name, (mode, folder) in MODES.items():
            info = zipfile.ZipInfo(name + ("/" if folder else ""))
            info.create_system = 3
            info.external_attr = ((stat.S_IFDIR if folder else stat.S_IFREG) | mode) << 16
            zf.writestr(info, b"" if folder else b"x\n")
        zf.writestr("b/plain.txt", b"plain\n")
    scan = hash_bundle(spec(path, 1))
    assert scan is not None
    assert {k: v.bits for k, v in scan.modes.items()} == expected(1)


def test_folder_bundle_special_modes_are_recorded(tmp_path):
    src = tmp_path / "src"
    (src / "bin").mkdir(parents=True)
    for name, (mode, folder) in MODES.items():
        p = src / name.removeprefix("b/")
        if folder:
            p.mkdir()
        else:
            p.write_text("x\n")
        os.chmod(p, mode)
    (src / "plain.txt").write_text("plain\n")
    (src / "link").symlink_to("plain.txt")  # a symlink's 0777 is no finding
    work = tmp_path / "w"
    work.mkdir()
    unpacked = unpack_bundle(spec(src), work)
    assert {k: v.bits for k, v in unpacked.modes.items()} == expected(1)


def test_each_special_bit_is_its_own_anomaly_kind():
    kinds = {a.kind for a in mode_anomalies("x", SpecialMode(folder=False, bits=0o6757))}
    assert kinds == {AnomalyKind.SETUID, AnomalyKind.SETGID, AnomalyKind.WORLD_WRITABLE}
    sticky = mode_anomalies("tmp", SpecialMode(folder=True, bits=0o1777))
    assert {a.kind for a in sticky} == {AnomalyKind.STICKY, AnomalyKind.WORLD_WRITABLE}
    assert all(a.is_finding and a.commit is None for a in sticky)


def test_verify_reports_special_modes_as_findings(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    good = repo.archive(tmp_path / "good.tar", "series", prefix="b/")
    out = tmp_path / "modes.tar"
    with tarfile.open(good) as src, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as dst:
        for m in src:
            if m.name == "b/engine/server.py":
                m.mode = 0o4755  # setuid, and so executable
            if m.name == "b/engine":
                m.mode = 0o777
            dst.addfile(m, src.extractfile(m) if m.isreg() else None)
    sp = dict(case["spec"], bundle={"path": str(out), "strip_components": 1})
    res = CliRunner().invoke(app, ["verify", str(write_spec(tmp_path / "audit.toml", sp)),
                                   "--json"])
    data = json.loads(res.stdout)
    rules = {(f["rule"], f["path"]) for f in data["findings"]}
    assert ("provenance.setuid-bit", "engine/server.py") in rules
    assert ("provenance.world-writable", "engine") in rules
    assert res.exit_code == 1  # the proof holds, but a finding needs review


# ---------------------------------------------------------------- depth


DEEP = 4000


def deep_tar(path: Path, depth: int, fmt: int = tarfile.PAX_FORMAT) -> Path:
    with tarfile.open(path, "w", format=fmt) as tar:
        add(tar, "b/" + "a/" * depth + "f.txt", 0o644)
        add(tar, "b/top.txt", 0o644)
    return path


@pytest.mark.parametrize("fmt", [tarfile.PAX_FORMAT, tarfile.GNU_FORMAT])
def test_a_tar_path_4000_folders_deep_is_exit_2_not_a_recursion_error(tmp_path, fmt):
    path = deep_tar(tmp_path / "deep.tar", DEEP, fmt)
    with pytest.raises(InputError, match="folders deep") as streamed:
        hash_bundle(spec(path, 1))
    assert streamed.value.exit_code == EXIT_USAGE
    work = tmp_path / "w"
    work.mkdir()
    with pytest.raises(InputError, match="folders deep"):
        unpack_bundle(spec(path, 1), work)
    assert list(work.iterdir()) == []


def make_deep_folder(root: Path, depth: int) -> None:
    """A folder ``depth`` levels deep, made with directory descriptors (past PATH_MAX)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("a", dir_fd=fd)
            new = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        leaf = os.open("f.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.close(leaf)
    finally:
        os.close(fd)


def remove_deep_folder(root: Path) -> None:
    """Remove it bottom-up without recursion (shutil.rmtree recurses)."""
    subprocess.run(["rm", "-rf", "--", str(root)], check=True)


def test_a_folder_bundle_4000_folders_deep_is_exit_2(tmp_path):
    src = tmp_path / "src"
    make_deep_folder(src, DEEP)
    try:
        work = tmp_path / "w"
        work.mkdir()
        with pytest.raises(InputError, match="folders deep") as info:
            unpack_bundle(spec(src), work)
        assert info.value.exit_code == EXIT_USAGE
        assert list(work.iterdir()) == []
    finally:
        remove_deep_folder(src)


def test_verify_of_a_4000_deep_bundle_is_exit_2_with_a_message(tmp_path):
    case = simple_case(tmp_path)
    path = deep_tar(tmp_path / "deep.tar", DEEP)
    sp = dict(case["spec"], bundle={"path": str(path), "strip_components": 1})
    res = CliRunner().invoke(app, ["verify", str(write_spec(tmp_path / "audit.toml", sp))])
    assert res.exit_code == 2, res.output
    text = " ".join(res.stderr.split())
    assert "folders deep" in text and "Traceback" not in text and "Recursion" not in text


def test_a_deep_but_allowed_path_proves_against_git(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit("deep", files={"x/" * 200 + "f.txt": "deep\n", "top.txt": "top\n"})
    path = repo.archive(tmp_path / "b.tar", prefix="b/")
    scan = hash_bundle(spec(path, 1))
    assert scan is not None
    tree = tree_of_entries((f.path, f.mode, f.blob) for f in scan.manifest.values())
    assert tree == repo.git("rev-parse", "HEAD^{tree}").strip()
    work = tmp_path / "w"
    work.mkdir()
    assert hash_folder(unpack_bundle(spec(path, 1), work).root).tree == tree


def test_tree_hashing_is_iterative():
    """tree_of_entries on a 4,000-deep path: a hash, not a RecursionError."""
    deep = "a/" * DEEP + "f.txt"
    blob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert len(tree_of_entries([(deep, "100644", blob)])) == 40
