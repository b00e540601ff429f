"""The series check, the replay and the comparison helpers, called directly."""

from __future__ import annotations

import io
import subprocess
import tarfile

from support import GitRepo, export_tree

from auditor.provenance.bundlefiles import DirFiles
from auditor.provenance.compare import compare, subst_expected, unified_diff
from auditor.provenance.gitview import open_repos
from auditor.provenance.replay import apply_each, replay
from auditor.provenance.series import check_series
from auditor.provenance.treehash import hash_folder
from auditor.redaction import dump_json


def _repo(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("base", files={"a.py": "a = 1\n", "b.py": "b = 1\n"})
    repo.checkout("s", new=True)
    c1 = repo.commit("c1", files={"a.py": "a = 2\n"})
    c2 = repo.commit("c2", files={"b.py": "b = 2\n"})
    c3 = repo.commit("c3", files={"a.py": "a = 3\n"})
    _, git = open_repos(repo.path, repo.path)
    return repo, git, base, [c1, c2, c3]


def test_check_series_reports_every_kind_of_mismatch(tmp_path):
    repo, git, base, (c1, c2, c3) = _repo(tmp_path)
    ok = check_series(git, base, c3, [c1, c2, c3])
    assert ok.reasons(allow_merges=False) == [] and ok.order_ok
    assert [c.subject for c in ok.commits] == ["c1", "c2", "c3"]
    assert all(c.patch_id and len(c.patch_id) == 40 for c in ok.commits)
    bad = check_series(git, base, c3, [c3[:8], c1, c1, "abcdef1234"])
    assert bad.listed[0] == c3  # abbreviation resolved
    assert bad.unlisted == (c2,)
    assert [m.listed for m in bad.missing] == ["abcdef1234"]
    assert bad.duplicates == (c1,)
    assert bad.order_ok is False
    reasons = bad.reasons(allow_merges=False)
    assert len(reasons) == 4 and any("hidden" in r for r in reasons)


def test_branch_not_based_on_upstream(tmp_path):
    repo, git, base, (c1, c2, c3) = _repo(tmp_path)
    repo.checkout("elsewhere", new=True, start=base)
    other = repo.commit("elsewhere", files={"z.py": "z\n"})
    check = check_series(git, other, c3, [c1, c2, c3])
    assert check.based_on_upstream is False
    assert any("not an ancestor" in r for r in check.reasons(allow_merges=False))


def test_replay_applies_in_order_and_names_the_conflicting_commit(tmp_path):
    repo, git, base, (c1, c2, c3) = _repo(tmp_path)
    commits = check_series(git, base, c3, [c1, c2, c3]).commits
    good = replay(git, base, commits, tmp_path / "scratch")
    assert good.tree == repo.head("s^{tree}") and len(good.applied) == 3
    skipped = replay(git, base, [commits[0], commits[2]], tmp_path / "scratch")
    assert skipped.tree is not None  # c2 touches another file: dropping it still applies
    conflict = replay(git, base, [commits[2]], tmp_path / "scratch")
    assert conflict.tree is None and conflict.failed_commit == c3 and conflict.applied == ()
    # the repository's own index and work tree were not touched
    assert repo.git("status", "--porcelain") == ""


def test_a_series_that_is_already_the_chain_needs_no_apply_and_gives_the_same_tree(tmp_path):
    repo, git, base, (c1, c2, c3) = _repo(tmp_path)
    # binary, mode and deletion changes too: the chain's last tree is what applying gives
    repo.write("bin.dat", b"\0\1\2")
    repo.write("run.sh", "echo\n", mode=0o755)
    repo.remove("b.py")
    c4 = repo.commit("c4")
    commits = check_series(git, base, c4, [c1, c2, c3, c4]).commits
    chained = replay(git, base, commits, tmp_path / "scratch")
    applied = apply_each(git, base, commits, tmp_path / "scratch")
    assert chained == applied
    assert chained.tree == repo.head("s^{tree}") and chained.applied == (c1, c2, c3, c4)
    # commits that are not that chain (one left out, or another base) are applied
    skipped = replay(git, base, [commits[0], commits[2], commits[3]], tmp_path / "scratch")
    assert skipped == apply_each(git, base, [commits[0], commits[2], commits[3]],
                                 tmp_path / "scratch") and skipped.tree != chained.tree
    repo.checkout("elsewhere", new=True, start=base)
    other = repo.commit("other base", files={"z.py": "z\n"})
    rebased = replay(git, other, commits, tmp_path / "scratch")
    assert rebased == apply_each(git, other, commits, tmp_path / "scratch")
    assert rebased.tree not in (None, chained.tree)  # applied: z.py is there too


def test_compare_against_a_hashed_folder(tmp_path):
    repo, git, base, (c1, c2, c3) = _repo(tmp_path)
    folder = export_tree(repo, "s", tmp_path / "b")
    (folder / "a.py").write_text("a = 4\n")
    h = hash_folder(folder)
    diffs = compare(git, repo.head("s^{tree}"), h.manifest, DirFiles(folder), tmp_path / "scratch")
    assert [(d.path, d.change.value) for d in diffs] == [("a.py", "modified")]
    assert "-a = 3" in diffs[0].diff and "+a = 4" in diffs[0].diff


def test_subst_expected_is_git_archives_own_expansion(tmp_path):
    repo, git, base, (c1, c2, c3) = _repo(tmp_path)
    formats = ["%H", "%h", "%T", "%an <%ae>", "%ad", "%cd", "%ci", "%s", "%d", "%D", "%B", "%ct",
               "%P", "%n", "%x41", "%(trailers)", "%ar"]
    text = "".join(f"k{i} = $Format:{f}$\n" for i, f in enumerate(formats))
    repo.write(".gitattributes", "v.txt export-subst\n")
    repo.write("v.txt", text)
    c4 = repo.commit("subject\n\nbody\n\nSigned-off-by: A <a@b.example>")
    archived = subprocess.run(["git", "-C", str(repo.path), "archive", c4, "v.txt"],
                              capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archived)) as tar:
        member = tar.extractfile("v.txt")
        assert member is not None
        real = member.read()
    _, git = open_repos(repo.path, repo.path)  # a sealed view holds the refs it was made with
    expected = subst_expected(git, c4, text.encode())
    assert expected is not None and expected[0] == real
    assert expected[1][0] == c4
    # placeholders that would need a program (signatures) are never computed
    assert subst_expected(git, c4, b"$Format:%G?$\n") is None
    assert subst_expected(git, c4, b"no placeholders\n") is None


def test_unified_diff_is_short_text_only_and_redacted():
    old = b"key = 1\n"
    new = b"api_key = 'sk-abcdefghijklmnopqrstuvwxyz'\n"
    diff = unified_diff("x.py", old, new)
    # redacted where it leaves (issue 32 item 4: audit.json's dump_json, the reports' redacted
    # audit), not here
    assert diff is not None and "api_key" in diff
    shown = dump_json({"diff": diff})
    assert "sk-abcdefghijkl" not in shown and "[REDACTED]" in shown
    assert unified_diff("x.bin", b"\0\1", b"\0\2") is None
    assert unified_diff("big", b"a\n" * 40000, b"b\n") is None
