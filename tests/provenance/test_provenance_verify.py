"""`auditor verify` end to end on real git repositories made by the tests."""

from __future__ import annotations

import io
import json
import os
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support import GitRepo, export_tree, simple_case, write_spec
from typer.testing import CliRunner

from auditor.cli import app


def verify(tmp: Path, spec: dict[str, Any]) -> tuple[int, dict[str, Any] | None, str]:
    path = write_spec(tmp / "audit.toml", spec)
    res = CliRunner().invoke(app, ["verify", str(path), "--json"])
    out = res.stdout.strip()
    return res.exit_code, (json.loads(out) if out else None), " ".join(res.stderr.split())


def by_path(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["path"]: d for d in data["differences"]}


def test_clean_pass(tmp_path):
    case = simple_case(tmp_path)
    code, data, _ = verify(tmp_path, case["spec"])
    assert code == 0, data
    assert data["ok"] is True and data["status"] == "ok"
    assert data["bundle_tree"] == data["expected_tree"] == case["repo"].head("series^{tree}")
    assert data["upstream"] == {"ref": "v1.0.0", "commit": case["repo"].head("v1.0.0"),
                                "ref_commit": case["repo"].head("v1.0.0"), "pinned": None,
                                "tree": case["repo"].head("v1.0.0^{tree}")}
    s = data["series"]
    assert s["listed"] == case["commits"] and s["unlisted"] == [] and s["missing"] == []
    assert s["merges"] == [] and s["order_ok"] is True
    assert set(s["patch_ids"]) == set(case["commits"])
    assert all(len(p) == 40 for p in s["patch_ids"].values())
    assert [c["sha"] for c in data["commits"]] == case["commits"]
    assert data["commits"][0]["author_email"] == "fork@community.example"
    assert data["file_count"] == 5 and len(data["manifest_digest"]) == 64
    assert data["differences"] == [] and data["findings"] == [] and data["reasons"] == []


def test_abbreviated_commits_and_pinned_upstream(tmp_path):
    case = simple_case(tmp_path)
    spec = case["spec"]
    spec["patches"]["commits"] = [c[:10] for c in case["commits"]]
    spec["upstream"]["commit"] = case["repo"].head("v1.0.0")
    code, data, _ = verify(tmp_path, spec)
    assert code == 0, data["reasons"]
    assert data["series"]["listed"] == case["commits"]


def test_bundle_modified_added_removed_and_mode_changed(tmp_path):
    case = simple_case(tmp_path)
    b = case["bundle"]
    (b / "engine/server.py").write_text("def serve(host='0.0.0.0', port=8000):\n"
                                        "    return host, port\n")
    (b / "engine/extra.py").write_text("import socket\n")
    (b / "requirements.txt").unlink()
    (b / "engine/util.py").chmod(0o755)
    code, data, _ = verify(tmp_path, case["spec"])
    assert code == 1
    assert data["ok"] is False and data["status"] == "failed"
    d = by_path(data)
    assert d["engine/server.py"]["change"] == "modified"
    assert "-def serve(host='127.0.0.1', port=8000):" in d["engine/server.py"]["diff"]
    assert "+def serve(host='0.0.0.0', port=8000):" in d["engine/server.py"]["diff"]
    assert d["engine/extra.py"]["change"] == "added"
    assert d["engine/extra.py"]["bundle_size"] == len("import socket\n")
    assert d["requirements.txt"]["change"] == "removed"
    assert d["requirements.txt"]["tree_size"] == len("fastapi==0.110.0\nuvicorn==0.29.0\n")
    assert d["engine/util.py"]["change"] == "mode-changed"
    assert (d["engine/util.py"]["tree_mode"], d["engine/util.py"]["bundle_mode"]) == (
        "100644", "100755")
    assert any("differs from the replayed series (4 paths)" in r for r in data["reasons"])
    # the new exec bit and the bundle-only file are not the series' doing
    rules = {(f["rule"], f["path"]): f for f in data["findings"]}
    assert rules[("provenance.executable-bit", "engine/util.py")]["commit"] is None


def test_hidden_commit(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    hidden = repo.commit("sneaky", files={"engine/beacon.py": "import urllib\n"},
                         author="Fork Author <fork@community.example>")
    export_tree(repo, "series", tmp_path / "bundle2")
    spec = case["spec"]
    spec["bundle"]["path"] = str(tmp_path / "bundle2")
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert data["series"]["unlisted"] == [hidden]
    assert data["bundle_matches_head"] is True
    assert by_path(data)["engine/beacon.py"]["change"] == "added"
    assert any("hidden commit" in r and hidden[:12] in r for r in data["reasons"])


def test_listed_commit_that_does_not_exist_is_bad_input_exit_2(tmp_path):
    # DESIGN: a missing commit is bad input (exit 2), not a verdict; README says the same
    case = simple_case(tmp_path)
    spec = case["spec"]
    ghost = "deadbeef" * 5
    spec["patches"]["commits"] = [case["commits"][0], ghost, case["commits"][1]]
    code, data, err = verify(tmp_path, spec)
    assert code == 2 and data is None
    assert ghost in err and "do not exist in the patches repository" in err
    assert "patches.commits" in err and "Traceback" not in err


def test_listed_commit_not_on_the_branch(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    repo.checkout("other", new=True, start="v1.0.0")
    stray = repo.commit("elsewhere", files={"x.txt": "x\n"})
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], stray]
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert data["series"]["missing"] == [stray]
    assert any("not on the branch" in r for r in data["reasons"])


def test_reordered_commits(tmp_path):
    case = simple_case(tmp_path)
    spec = case["spec"]
    spec["patches"]["commits"] = list(reversed(case["commits"]))
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert data["series"]["order_ok"] is False
    assert "the listed order differs from the branch's order" in data["reasons"]
    assert data["expected_tree"] == data["bundle_tree"]  # independent commits still replay


def _merge_case(tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    repo.checkout("side", new=True)
    side = repo.commit("side work", files={"engine/side.py": "S = 1\n"})
    repo.checkout("series")
    repo.commit("mainline", files={"engine/main2.py": "M = 1\n"})
    repo.git("merge", "--no-ff", "-q", "-m", "merge side", "side",
             env={"GIT_AUTHOR_DATE": "@1700009999 +0000",
                  "GIT_COMMITTER_DATE": "@1700009999 +0000"})
    shas = repo.git("rev-list", "--reverse", "v1.0.0..series").split()
    export_tree(repo, "series", tmp_path / "bundle2")
    case["spec"]["bundle"]["path"] = str(tmp_path / "bundle2")
    case["spec"]["patches"]["commits"] = shas
    assert side in shas
    return case, shas


def test_merge_commit_fails_unless_allowed(tmp_path):
    case, shas = _merge_case(tmp_path)
    code, data, _ = verify(tmp_path, case["spec"])
    assert code == 1
    assert data["series"]["merges"] == [shas[-1]]
    assert any("merge commit" in r for r in data["reasons"])
    case["spec"]["patches"]["allow_merges"] = True
    code, data, _ = verify(tmp_path, case["spec"])
    assert code == 0, data["reasons"]
    assert data["expected_tree"] == data["bundle_tree"]
    assert data["series"]["patch_ids"][shas[-1]] is None


def test_moved_tag_against_pinned_commit(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    pinned = repo.head("v1.0.0")
    repo.checkout("retag", new=True, start="v1.0.0")
    moved = repo.commit("re-release", files={"engine/__init__.py": "VERSION = '1.0.0'  # !\n"})
    repo.tag("v1.0.0", moved)
    spec = case["spec"]
    spec["upstream"]["commit"] = pinned
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert data["upstream"]["commit"] == pinned and data["upstream"]["ref_commit"] == moved
    assert any("moved or re-created" in r for r in data["reasons"])
    # the proof itself is made against the pinned commit: the series still replays
    assert data["expected_tree"] == data["bundle_tree"]


def test_series_that_does_not_apply(tmp_path):
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"a.py": "x = 1\ny = 2\n"})
    repo.tag("v1")
    repo.checkout("series", new=True)
    c1 = repo.commit("first", files={"a.py": "x = 10\ny = 2\n"})
    c2 = repo.commit("second", files={"a.py": "x = 100\ny = 2\n"})
    bundle = export_tree(repo, "series", tmp_path / "bundle")
    spec = {"engine": {"profile": "generic", "version": "1"},
            "upstream": {"repo": str(repo.path), "ref": "v1"},
            "patches": {"ref": "series", "commits": [c2]}, "bundle": {"path": str(bundle)}}
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert data["expected_tree"] is None
    assert data["replay"]["failed_commit"] == c2
    assert data["series"]["unlisted"] == [c1]
    assert any("does not apply" in r and c2[:12] in r for r in data["reasons"])
    assert data["compared_with"] == "head"


def test_git_archive_with_export_ignore_and_subst_is_explained(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c3 = repo.commit("archive attributes", files={
        ".gitattributes": "tests/ export-ignore\nengine/version.py export-subst\n",
        "tests/test_x.py": "def test(): pass\n",
        "engine/version.py": "COMMIT = '$Format:%H$'\n"},
        author="Fork Author <fork@community.example>")
    archive = repo.archive(tmp_path / "bundle.tar.gz", "series", prefix="engine-1.0/")
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], c3]
    spec["bundle"] = {"path": str(archive), "strip_components": 1}
    code, data, _ = verify(tmp_path, spec)
    assert data["ok"] is True, data["reasons"]
    assert data["bundle"]["archive_commit"] == c3
    assert data["bundle_tree"] != data["expected_tree"]
    d = by_path(data)
    assert d["tests/test_x.py"]["explained"] == "export-ignore"
    assert "tests" in d["tests/test_x.py"]["note"]
    assert d["engine/version.py"]["explained"] == "export-subst"
    assert d["engine/version.py"]["expansions"] == [c3]
    kinds = {a["kind"] for a in data["anomalies"]}
    assert "archive-effect" in kinds
    # the .gitattributes the series adds is itself worth a look
    assert any(f["rule"] == "provenance.gitattributes" and f["commit"] == c3
               for f in data["findings"])


def test_export_subst_file_tampered_beyond_placeholders_is_not_explained(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c3 = repo.commit("subst", files={".gitattributes": "v.py export-subst\n",
                                     "v.py": "C = '$Format:%H$'\n"})
    bundle = export_tree(repo, "series", tmp_path / "bundle2")
    (bundle / "v.py").write_text("C = 'abc'\nimport os\n")
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], c3]
    spec["bundle"]["path"] = str(bundle)
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert by_path(data)["v.py"]["explained"] is None


@pytest.mark.parametrize("placeholder_text", [
    "x'; __import__('os').system('id'); '",  # one line of code where the commit id stands
    "0" * 40,  # the shape of a commit id, not this commit's
])
def test_export_subst_accepts_only_what_git_archive_writes_for_the_commit(tmp_path,
                                                                          placeholder_text):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c3 = repo.commit("subst", files={
        ".gitattributes": "engine/version.py export-subst\n",
        "engine/version.py": "COMMIT = '$Format:%H$'\nDATE = '$Format:%cd$'\n"
                             "WHO = '$Format:%an <%ae>$'\nREFS = '$Format:%d$'\n"
                             'BODY = """$Format:%B$"""\n'})
    spec = case["spec"]
    spec["patches"]["commits"] = [*case["commits"], c3]
    # the real git archive of the head: explained, every expansion git's own
    archive = repo.archive(tmp_path / "real.tar", "series", prefix="e/")
    spec["bundle"] = {"path": str(archive), "strip_components": 1}
    code, data, _ = verify(tmp_path, spec)
    assert data["ok"] is True, data["reasons"]  # (exit 1: the .gitattributes is to review)
    assert by_path(data)["engine/version.py"]["explained"] == "export-subst"
    assert by_path(data)["engine/version.py"]["expansions"][0] == c3
    # the same file with other text where git would write the commit id: not explained
    bundle = export_tree(repo, "series", tmp_path / "forged")
    with tarfile.open(archive) as tar:
        member = tar.extractfile("e/engine/version.py")
        assert member is not None
        expanded = member.read().decode()
    (bundle / "engine" / "version.py").write_text(expanded.replace(c3, placeholder_text))
    spec["bundle"] = {"path": str(bundle)}
    code, data, _ = verify(tmp_path, spec)
    assert code == 1 and data["ok"] is False
    d = by_path(data)["engine/version.py"]
    assert d["explained"] is None and "not what git archive" in d["note"]


def test_wrong_strip_components_is_a_clear_error(tmp_path):
    case = simple_case(tmp_path)
    archive = case["repo"].archive(tmp_path / "b.tar", "series", prefix="bundle/")
    spec = case["spec"]
    spec["bundle"] = {"path": str(archive), "strip_components": 2}
    code, data, err = verify(tmp_path, spec)
    assert code == 2 and data is None
    assert "strip_components is wrong" in err
    # strip 0 is not an error, but nothing matches: every path is under bundle/
    spec["bundle"]["strip_components"] = 0
    code, data, _ = verify(tmp_path, spec)
    assert code == 1
    assert all(d["path"].startswith("bundle/") for d in data["differences"]
               if d["change"] == "added")
    spec["bundle"]["strip_components"] = 1
    code, data, _ = verify(tmp_path, spec)
    assert code == 0
    assert data["bundle"]["kind"] == "tar"


@pytest.mark.parametrize("kind", ["dir", "tar", "zip"])
def test_empty_bundle(tmp_path, kind):
    case = simple_case(tmp_path)
    spec = case["spec"]
    if kind == "dir":
        (tmp_path / "empty" / "sub").mkdir(parents=True)
        spec["bundle"]["path"] = str(tmp_path / "empty")
    elif kind == "tar":
        with tarfile.open(tmp_path / "empty.tar", "w") as tar:
            info = tarfile.TarInfo("bundle")
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        spec["bundle"]["path"] = str(tmp_path / "empty.tar")
    else:
        with zipfile.ZipFile(tmp_path / "empty.zip", "w"):
            pass
        spec["bundle"]["path"] = str(tmp_path / "empty.zip")
    code, data, err = verify(tmp_path, spec)
    assert code == 2 and data is None
    assert "is empty" in err


def _evil_tar(path: Path, entry: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(path, "w:gz") as tar:
        ok = tarfile.TarInfo("bundle/ok.txt")
        ok.size = 3
        tar.addfile(ok, io.BytesIO(b"ok\n"))
        entry.size = len(data) if entry.isreg() else 0
        tar.addfile(entry, io.BytesIO(data) if data else None)
    return path


def _tar_entry(name: str, *, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


@pytest.mark.parametrize(("entry", "why"), [
    (_tar_entry("bundle/../../escaped.txt"), "'..'"),
    (_tar_entry("/tmp/escaped-abs.txt"), "absolute path"),
    (_tar_entry("bundle/link", kind=tarfile.SYMTYPE, link="../../../etc"), "outside the bundle"),
    (_tar_entry("bundle/abs", kind=tarfile.SYMTYPE, link="/etc/passwd"), "absolute path"),
    (_tar_entry("bundle/hard", kind=tarfile.LNKTYPE, link="/etc/passwd"), "absolute path"),
    (_tar_entry("bundle/dev", kind=tarfile.CHRTYPE), "device"),
])
def test_unsafe_tar_is_refused(tmp_path, entry, why):
    case = simple_case(tmp_path)
    spec = case["spec"]
    spec["bundle"] = {"path": str(_evil_tar(tmp_path / "evil.tar.gz", entry, b"pwned\n")),
                      "strip_components": 1}
    code, data, err = verify(tmp_path, spec)
    assert code == 2 and data is None
    assert "refused" in err and why in err
    assert not (tmp_path / "escaped.txt").exists()
    assert not Path("/tmp/escaped-abs.txt").exists()


@pytest.mark.parametrize(("name", "attr", "content", "why"), [
    ("bundle/../escaped.txt", 0o100644, b"pwned\n", "'..'"),
    ("/tmp/escaped-abs-zip.txt", 0o100644, b"pwned\n", "absolute path"),
    ("bundle/link", 0o120777, b"../../../../etc", "outside the bundle"),
])
def test_unsafe_zip_is_refused(tmp_path, name, attr, content, why):
    case = simple_case(tmp_path)
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("bundle/ok.txt", "ok\n")
        info = zipfile.ZipInfo(name)
        info.create_system = 3
        info.external_attr = attr << 16
        zf.writestr(info, content)
    spec = case["spec"]
    spec["bundle"] = {"path": str(path), "strip_components": 1}
    code, data, err = verify(tmp_path, spec)
    assert code == 2 and data is None
    assert "refused" in err and why in err
    assert not (tmp_path / "escaped.txt").exists()
    assert not Path("/tmp/escaped-abs-zip.txt").exists()


def test_zip_bundle_from_git_archive_passes(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    repo.commit("a script", files={"tools/run.sh": "#!/bin/sh\necho hi\n"},
                author="Fork Author <fork@community.example>")
    repo.write("tools/run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    c3 = repo.commit("exec bit", author="Fork Author <fork@community.example>")
    archive = repo.archive(tmp_path / "bundle.zip", "series", prefix="x/")
    spec = case["spec"]
    spec["patches"]["commits"] = repo.git("rev-list", "--reverse", "v1.0.0..series").split()
    spec["bundle"] = {"path": str(archive), "strip_components": 1}
    code, data, _ = verify(tmp_path, spec)
    assert data["ok"] is True, data["reasons"]
    assert data["bundle"]["kind"] == "zip" and data["bundle"]["archive_commit"] == c3
    f = next(f for f in data["findings"] if f["rule"] == "provenance.executable-bit")
    assert f["path"] == "tools/run.sh" and f["category"] == "provenance"
    assert f["commit"] == c3  # the path was added earlier, the exec bit set by c3


def test_separate_upstream_and_patches_repositories(tmp_path):
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    upstream = GitRepo(tmp_path / "upstream")
    upstream.git("fetch", "-q", str(repo.path), "refs/tags/v1.0.0:refs/tags/v1.0.0")
    fork = tmp_path / "fork.git"
    repo.git("clone", "-q", "--bare", str(repo.path), str(fork))
    spec = case["spec"]
    spec["upstream"]["repo"] = str(upstream.path)
    spec["patches"]["repo"] = str(fork)
    code, data, _ = verify(tmp_path, spec)
    assert code == 0, data["reasons"]


def test_missing_git_makes_the_stage_incomplete(tmp_path, monkeypatch):
    case = simple_case(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    code, data, _ = verify(tmp_path, case["spec"])
    assert code == 3
    assert data["status"] == "incomplete"
    assert any("git" in n for n in data["not_checked"])


def test_git_dir_in_bundle_is_excluded_and_reported(tmp_path):
    case = simple_case(tmp_path)
    hooks = case["bundle"] / ".git" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "post-checkout").write_text("#!/bin/sh\ncurl evil\n")
    code, data, _ = verify(tmp_path, case["spec"])
    assert data["ok"] is True and data["bundle_tree"] == data["expected_tree"]
    assert data["bundle"]["git_dirs"] == [".git"]
    assert [f["rule"] for f in data["findings"]] == ["provenance.git-dir-in-bundle"]
    assert code == 1  # a provenance finding needs review under the default policy
    assert os.path.exists(hooks)  # the input is never touched
