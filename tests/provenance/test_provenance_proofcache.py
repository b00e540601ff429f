"""The proof cache: a hit gives the computed proof; every input it depends on changes the key.

Real git repositories and real tarballs (written here); the verify stage runs as the pipeline runs
it. A hit is seen from the outside: its workspace reads files from git (GitFiles) and has no
unpacked copy until a stage asks for one.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support import GitRepo, simple_case, write_spec

from auditor.errors import InputError
from auditor.model import StageResult, Workspace
from auditor.provenance.bundlefiles import GitFiles, bundle_files, read_dir
from auditor.provenance.stage import VerifyStage
from auditor.spec import load_spec
from auditor.stage import Context, Options


def write_bundle(repo: GitRepo, rev: str, dest: Path, *, prefix: str = "bundle/",
                 level: int = 6, extra: dict[str, bytes] | None = None) -> Path:
    """A .tar.gz of ``rev`` under ``prefix`` (as `git archive` makes it), plus ``extra`` files."""
    raw = subprocess.run(["git", "-C", str(repo.path), "archive", "--format=tar",
                          f"--prefix={prefix}", rev], check=True, capture_output=True).stdout
    if extra:
        buf = io.BytesIO()
        with tarfile.open(fileobj=io.BytesIO(raw)) as src, \
                tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
            for m in src.getmembers():
                out.addfile(m, src.extractfile(m) if m.isfile() else None)
            for name, data in extra.items():
                info = tarfile.TarInfo(prefix + name)
                info.size, info.mtime, info.mode = len(data), 1_700_000_000, 0o644
                out.addfile(info, io.BytesIO(data))
        raw = buf.getvalue()
    dest.write_bytes(gzip.compress(raw, compresslevel=level, mtime=0))
    return dest


@pytest.fixture
def case(tmp_path: Path) -> dict[str, Any]:
    c = simple_case(tmp_path)
    bundle = write_bundle(c["repo"], "series", tmp_path / "bundle.tar.gz")
    c["spec"]["bundle"] = {"path": str(bundle), "strip_components": 1}
    c["tarball"] = bundle
    c["tmp"] = tmp_path
    c["cache"] = tmp_path / "cache"
    return c


class Run:
    def __init__(self, result: StageResult, ws: Workspace | None, ctx: Context, log: str) -> None:
        self.result, self.ws, self.ctx, self.log = result, ws, ctx, log

    @property
    def hit(self) -> bool:
        return "is cached" in self.log


def verify(case: dict[str, Any], name: str = "run", **spec_changes: Any) -> Run:
    tmp: Path = case["tmp"] / name
    tmp.mkdir(parents=True, exist_ok=True)
    spec = {k: dict(v) for k, v in case["spec"].items()}
    for section, values in spec_changes.items():
        spec[section].update(values)
    path = write_spec(tmp / "audit.toml", spec)
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    log = io.StringIO()
    ctx = Context(spec=load_spec(path), options=Options(cache=case["cache"], jobs=2),
                  workdir=work, out_dir=tmp / "out", console=Console(file=log, width=400))
    result = VerifyStage().run(ctx)
    return Run(result, ctx.workspace, ctx, log.getvalue())


def entries(case: dict[str, Any]) -> list[Path]:
    return sorted((case["cache"] / "proof").rglob("*.json"))


def same_workspace(a: Workspace, b: Workspace) -> None:
    for name in ("upstream_commit", "upstream_tree", "head_commit", "head_tree", "expected_tree",
                 "commits", "bundle_tree", "proof_ok", "upstream_repo", "patches_repo"):
        assert getattr(a, name) == getattr(b, name), name
    assert dict(a.manifest) == dict(b.manifest)


def test_a_hit_gives_the_computed_proof(case):
    first = verify(case, "first")
    assert not first.hit and isinstance(first.ws.files, GitFiles)
    assert first.result.to_json()["ok"] is True
    assert len(entries(case)) == 1
    second = verify(case, "second")
    assert second.hit
    assert second.result.to_json() == first.result.to_json()
    same_workspace(second.ws, first.ws)
    # no copy was made: the files come from git; the folder only when a stage asks
    assert not any((case["tmp"] / "second" / "work").iterdir())
    root = bundle_files(second.ws).root()
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) \
        == sorted(first.ws.manifest)


def test_files_from_the_proven_tree_equal_the_unpacked_copy(case):
    first = verify(case, "first")
    second = verify(case, "second")
    paths = sorted(first.ws.manifest) + ["no/such/file.py"]
    from_git = bundle_files(second.ws).read(paths)
    from_copy = bundle_files(first.ws).read(paths)
    assert dict(from_git.contents) == dict(from_copy.contents)
    assert set(from_git.contents) == set(first.ws.manifest)
    assert set(from_git.errors) == set(from_copy.errors) == {"no/such/file.py"}
    # read from git only: the copy was never made
    assert not any((case["tmp"] / "second" / "work").iterdir())


def test_a_file_only_the_bundle_has_is_read_from_a_copy_made_on_demand(case):
    write_bundle(case["repo"], "series", case["tarball"],
                 extra={"engine/hidden.py": b"import socket\n"})
    first = verify(case, "first")
    assert first.result.to_json()["ok"] is False  # an added file: the proof fails, and is cached
    second = verify(case, "second")
    assert second.hit and second.result.to_json() == first.result.to_json()
    got = bundle_files(second.ws).read(["engine/hidden.py", "engine/server.py"])
    assert got.contents["engine/hidden.py"] == b"import socket\n"
    assert got.contents["engine/server.py"] == bundle_files(first.ws).read_one("engine/server.py")


def test_a_bundle_changed_after_the_proof_is_refused_when_unpacked(case):
    verify(case, "first")
    second = verify(case, "second")
    assert second.hit
    write_bundle(case["repo"], "series", case["tarball"], extra={"x.py": b"x = 1\n"})
    with pytest.raises(InputError, match="changed during the audit"):
        bundle_files(second.ws).root()


def _replace_ref(case: dict[str, Any]) -> None:
    repo: GitRepo = case["repo"]
    other = repo.git("commit-tree", "-p", case["commits"][0], "-m", "impostor",
                     repo.head(f"{case['commits'][1]}^{{tree}}"))
    repo.git("replace", case["commits"][1], other)


def _graft(case: dict[str, Any]) -> None:
    repo: GitRepo = case["repo"]
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "grafts").write_text(
        f"{case['commits'][1]} {repo.head('v1.0.0')}\n")


def _shallow(case: dict[str, Any]) -> None:
    (case["repo"].path / ".git" / "shallow").write_text(f"{case['commits'][0]}\n")


def _move_upstream_tag(case: dict[str, Any]) -> None:
    case["repo"].tag("v1.0.0", case["commits"][0])


def _rewrite_bundle_bytes(case: dict[str, Any]) -> None:
    # the same files, compressed differently: the bundle's bytes are an input of their own
    write_bundle(case["repo"], "series", case["tarball"], level=1)


def _move_series_head(case: dict[str, Any]) -> None:
    repo: GitRepo = case["repo"]
    other = repo.git("commit-tree", "-p", case["commits"][0], "-m", "same tree, another commit",
                     repo.head(f"{case['commits'][1]}^{{tree}}"))
    repo.git("update-ref", "refs/heads/series", other)


@pytest.mark.parametrize("change", [_replace_ref, _graft, _shallow, _move_upstream_tag,
                                    _rewrite_bundle_bytes, _move_series_head])
def test_each_git_or_bundle_input_changes_the_key(case, change):
    case["spec"]["patches"]["commits"] = [c[:12] for c in case["commits"]]
    first = verify(case, "first")
    assert verify(case, "again").hit
    change(case)
    after = verify(case, "after")
    assert not after.hit
    assert len(entries(case)) == 2
    # what it computed is what a hit on the new key gives
    again = verify(case, "after-again")
    assert again.hit and again.result.to_json() == after.result.to_json()
    assert first.result.to_json()["bundle_tree"]  # (the first proof is still cached, unused)


@pytest.mark.parametrize("changes", [
    {"bundle": {"strip_components": 0}},
    {"patches": {"commits": "first-only"}},
    {"upstream": {"commit": "pin"}},
])
def test_each_spec_key_changes_the_key(case, changes):
    verify(case, "first")
    assert verify(case, "again").hit
    if "patches" in changes:
        changes = {"patches": {"commits": case["commits"][:1]}}
    if "upstream" in changes:
        changes = {"upstream": {"commit": case["repo"].head("v1.0.0")}}
    after = verify(case, "after", **changes)
    assert not after.hit
    assert verify(case, "after-again", **changes).hit


def test_strip_components_is_part_of_the_key(case):
    write_bundle(case["repo"], "series", case["tarball"], prefix="outer/inner/")
    one = verify(case, "one")  # inner/ stays: the proof fails (every path differs)
    assert one.result.to_json()["ok"] is False
    two = verify(case, "two", bundle={"strip_components": 2})
    assert not two.hit and two.result.to_json()["ok"] is True
    assert verify(case, "one-again").result.to_json()["ok"] is False


@pytest.mark.parametrize("damage", ["truncate", "garbage", "tree", "blob", "result"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(case, damage):
    first = verify(case, "first")
    (entry,) = entries(case)
    text = entry.read_text()
    data = json.loads(text)
    if damage == "truncate":
        entry.write_text(text[: len(text) // 2])
    elif damage == "garbage":
        entry.write_bytes(b"\xff\x00not json")
    elif damage == "tree":
        data["workspace"]["bundle_tree"] = "0" * 40
        entry.write_text(json.dumps(data))
    elif damage == "blob":
        data["workspace"]["manifest"][0][4] = "1" * 40
        entry.write_text(json.dumps(data))
    else:
        data["result"]["ok"] = not data["result"]["ok"]
        entry.write_text(json.dumps(data))
    again = verify(case, "again")
    assert not again.hit
    assert again.result.to_json() == first.result.to_json()
    assert verify(case, "third").hit  # the miss wrote a good entry back


def test_a_folder_bundle_is_not_cached(tmp_path):
    c = simple_case(tmp_path)
    c.update(tmp=tmp_path, cache=tmp_path / "cache")
    verify(c, "first")
    assert not verify(c, "second").hit
    assert not (tmp_path / "cache" / "proof").exists()


def test_an_unwritable_cache_costs_only_speed(case):
    case["cache"].write_text("not a folder")
    run = verify(case, "first")
    assert run.result.to_json()["ok"] is True and not run.hit


def test_read_dir_never_follows_a_symlink(tmp_path):
    (tmp_path / "real.py").write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to("real.py")
    got = read_dir(tmp_path, ["real.py", "link.py", "gone.py"])
    assert got.contents == {"real.py": b"x = 1\n"}
    assert "not a regular file" in got.errors["link.py"]
    assert "cannot be read" in got.errors["gone.py"]



def test_an_audit_on_a_cached_proof_writes_the_same_audit_json(case, monkeypatch):
    """scan, deps and blame read the proven git blobs on a hit: every stage's result, the verdict
    and the findings equal those of the run that computed the proof from the unpacked copy."""
    from typer.testing import CliRunner

    from auditor.cli import app

    repo: GitRepo = case["repo"]
    repo.checkout("series")
    c3 = repo.commit("phone home", files={
        "engine/telemetry.py": "import requests\n\ndef ping(prompt):\n"
                               "    requests.post('https://collect.example/p', json={'p': prompt})\n",
        "requirements.txt": "fastapi==0.110.0\nuvicorn==0.29.0\nrequests>=2\n"},
        author="Fork Author <fork@community.example>")
    write_bundle(repo, "series", case["tarball"])
    spec = {**case["spec"], "patches": {"ref": "series", "commits": [*case["commits"], c3]},
            "scan": {}, "deps": {"vulns": "none"}}
    path = write_spec(case["tmp"] / "audit.toml", spec)
    outs = []
    for name in ("computed", "cached"):
        # the second run has the first's proof but none of its scan results: the scanners run
        # again, on the files read from git
        cache = case["tmp"] / f"cache-{name}"
        if name == "cached":
            shutil.copytree(case["tmp"] / "cache-computed" / "proof", cache / "proof")
        monkeypatch.setenv("AUDITOR_CACHE", str(cache))
        out = case["tmp"] / f"out-{name}"
        res = CliRunner().invoke(app, ["audit", str(path), "--out", str(out), "--reproducible"])
        assert res.exit_code == 1, res.stderr  # the telemetry commit is a finding to review
        outs.append(json.loads((out / "audit.json").read_text()))
    assert "is cached" in res.stderr  # the second run used the proof
    computed, cached = outs
    assert cached == computed
    rules = {(f["rule"], f["path"], f["commit"]) for f in computed["findings"]}
    assert any(p == "engine/telemetry.py" and c == c3 for _r, p, c in rules), rules
    assert any(p == "requirements.txt" and c == c3 for _r, p, c in rules), rules


def test_differences_and_anomalies_read_from_git_equal_those_read_from_a_folder(case):
    """The same bundle as a tarball (hashed in one pass, files read from git or a copy made on
    demand) and as a folder (unpacked and read from disk): the same differences and anomalies."""
    repo: GitRepo = case["repo"]
    elf = b"\x7fELF\x02\x01\x01" + b"\0" * 64
    extra = {"engine/fast.so": elf, "engine/server.py": b"def serve(host='0.0.0.0'):\n    pass\n",
             ".gitattributes": b"*.bin filter=lfs\n"}
    write_bundle(repo, "series", case["tarball"], extra={k: v for k, v in extra.items()
                                                         if k != "engine/server.py"})
    # the tarball has engine/server.py from git and a second copy would be refused; rewrite it
    raw = gzip.decompress(case["tarball"].read_bytes())
    buf = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw)) as src, \
            tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None
            if m.name == "bundle/engine/server.py":
                data = extra["engine/server.py"]
                m.size = len(data)
            out.addfile(m, io.BytesIO(data) if data is not None else None)
        link = tarfile.TarInfo("bundle/engine/current")
        link.type, link.linkname = tarfile.SYMTYPE, "server.py"
        out.addfile(link)
    case["tarball"].write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    folder = case["tmp"] / "as-folder"
    with tarfile.open(case["tarball"]) as tar:
        tar.extractall(folder, filter="tar")
    from_tar = verify(case, "tar").result.to_json()
    from_folder = verify(case, "folder", bundle={"path": str(folder / "bundle"),
                                                 "strip_components": 0}).result.to_json()
    kinds = sorted(a["kind"] for a in from_tar["anomalies"])
    assert {"binary-added", "symlink", "gitattributes"} <= set(kinds), kinds
    assert from_tar["anomalies"] == from_folder["anomalies"]
    assert from_tar["differences"] == from_folder["differences"]
    assert any(d.get("diff") for d in from_tar["differences"])  # the server.py diff, from git
    assert from_tar["bundle_tree"] == from_folder["bundle_tree"]


def test_the_repositorys_own_config_is_never_read_so_it_keeps_the_key(case):
    """git runs in a sealed view (auditor.gitseal): the given repository's config cannot change
    the proof, so a change to it keeps the cached proof, which equals a computed one."""
    first = verify(case, "first")
    case["repo"].git("config", "diff.algorithm", "patience")
    case["repo"].git("config", "core.abbrev", "7")
    after = verify(case, "after")
    assert after.hit and after.result.to_json() == first.result.to_json()
