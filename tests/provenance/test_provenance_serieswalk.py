"""The series walk (auditor.provenance.serieswalk): ``git blame``'s answer for many files from one
``git log``, compared with the real ``git blame`` on generated series and on the shapes where the
two could part (names git quotes, rows that look like diff headers, lines without an end, CRLF),
and files the walk must leave to blame (created, renamed, binary, merged, not accounted for)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from support import GitRepo, export_tree

from auditor.gitio import Git
from auditor.model import Workspace
from auditor.provenance import serieswalk
from auditor.provenance.blame import _blame, line_origins, walked

# few distinct lines, so diffs have many equally good answers (where the heuristics decide)
VOCAB = ["", "", "    return x", "def f(x):", "    x += 1", "}", "# note", "pass", "    pass",
         "+++ b/a.py", "--- a/a.py", "@@ -1 +1 @@", "\\ No newline at end of file", "x = 1\r"]


def _ws(repo: GitRepo, base: str, head: str, bundle: Path) -> Workspace:
    git = Git(repo.path)
    return Workspace(upstream_repo=repo.path, patches_repo=repo.path, upstream_commit=base,
                     upstream_tree=git.tree_of(base), head_commit=head, head_tree=git.tree_of(head),
                     expected_tree=None, commits=(), bundle_root=bundle, bundle_tree="",
                     manifest={}, proof_ok=True)


def _text(rng: random.Random, n: int) -> str:
    body = "\n".join(rng.choice(VOCAB) for _ in range(n))
    return body + ("\n" if rng.random() < 0.8 else "")


def _edit(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(lines))
        kind = rng.random()
        if kind < 0.4:
            lines[at:at] = [rng.choice(VOCAB) for _ in range(rng.randint(1, 5))]
        elif kind < 0.7 and lines:
            del lines[at:at + rng.randint(1, 4)]
        else:
            lines[at:at + rng.randint(1, 3)] = [rng.choice(VOCAB) for _ in range(rng.randint(0, 3))]
    return "\n".join(lines)


def _blamed(ws: Workspace, path: str):
    return _blame(Git(ws.patches_repo), ws.series_revs, path)


@pytest.mark.parametrize("seed", range(12))
def test_generated_series_get_git_blames_answer(tmp_path, seed):
    rng = random.Random(seed)
    repo = GitRepo(tmp_path / "r")
    names = ["a.py", "pkg/b.py", "c d.py", "é.py"]
    base = repo.commit("upstream", files={n: _text(rng, rng.randint(0, 30)) for n in names})
    repo.checkout("series", new=True)
    texts = {n: (tmp_path / "r" / n).read_text() for n in names}
    head = base
    for k in range(rng.randint(3, 9)):
        for n in rng.sample(names, rng.randint(1, len(names))):
            texts[n] = _edit(rng, texts[n])
        head = repo.commit(f"c{k}", files=texts)
    ws = _ws(repo, base, head, export_tree(repo, "series", tmp_path / "b"))
    got = walked(ws, names)
    changed = {n for n in names if repo.git("diff", "--name-only", base, head, "--", n)}
    assert changed <= set(got)  # nothing here needs blame: the walk answers every file
    for n in names:
        assert got[n] == _blamed(ws, n), n


def test_names_git_quotes_and_rows_that_look_like_headers(tmp_path):
    repo = GitRepo(tmp_path / "r")
    names = ['q"uote.py', "back\\slash.py", "tab\there.py", "sp ace.py", "ünï.py", "a.py"]
    base = repo.commit("upstream", files={n: "one\ntwo\nthree\n" for n in names})
    repo.checkout("series", new=True)
    c1 = repo.commit("c1", files={n: "one\n+++ b/a.py\n--- a/a.py\n@@ -1 +1 @@\ntwo\nthree"
                                  for n in names})
    c2 = repo.commit("c2", files={n: "zero\r\none\n+++ b/a.py\n--- a/a.py\n@@ -1 +1 @@\ntwo\n"
                                  "three\n" for n in names})
    ws = _ws(repo, base, c2, export_tree(repo, "series", tmp_path / "b"))
    got = walked(ws, names)
    assert set(got) == set(names)
    for n in names:
        assert got[n] == _blamed(ws, n)
        assert got[n][0] == [c2, None, c1, c1, c1, None, c2]


def test_files_the_walk_cannot_follow_are_left_to_blame(tmp_path):
    repo = GitRepo(tmp_path / "r")
    lines = "".join(f"line {i}\n" for i in range(40))
    base = repo.commit("upstream", files={"kept.py": "a\nb\n", "old.py": lines,
                                          "gone.py": "x\n", "img.bin": b"\0\1\2", "img.py": "i\n"})
    repo.checkout("series", new=True)
    repo.git("mv", "old.py", "renamed.py")
    repo.remove("gone.py")
    repo.commit("c1", files={"kept.py": "a\nnew\nb\n", "new.py": "n\n"})
    head = repo.commit("c2", files={"gone.py": "x\n", "img.bin": b"\0\1\3\4", "img.py": "i\nj\n"})
    ws = _ws(repo, base, head, export_tree(repo, "series", tmp_path / "b"))
    got = walked(ws, ["kept.py", "renamed.py", "gone.py", "new.py", "img.bin", "img.py"])
    # renamed (blame follows it into old.py), deleted and made again, new, binary: left out
    assert set(got) == {"kept.py", "img.py"}
    for n in ("kept.py", "img.py"):
        assert got[n] == _blamed(ws, n)
    # and line_origins blames what the walk left: the rename is followed to upstream's lines
    assert line_origins(ws, "renamed.py") == [None] * 40


def test_a_merge_in_the_range_leaves_every_file_to_blame(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("upstream", files={"a.py": "a\nb\nc\n", "b.py": "x\n"})
    repo.checkout("side", new=True)
    repo.commit("side", files={"b.py": "x\ny\n"})
    repo.checkout("series", new=True)
    repo.git("reset", "-q", "--hard", base)
    repo.commit("c1", files={"a.py": "a\nB\nc\n"})
    repo.git("merge", "-q", "--no-edit", "side")
    head = repo.git("rev-parse", "HEAD")
    ws = _ws(repo, base, head, export_tree(repo, "series", tmp_path / "b"))
    assert walked(ws, ["a.py", "b.py"]) == {}


def test_diffs_that_do_not_account_for_the_text_leave_the_file_to_blame(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("upstream", files={"a.py": "a\nb\nc\n"})
    repo.checkout("series", new=True)
    head = repo.commit("c1", files={"a.py": "a\nB\nc\n"})
    git = Git(repo.path)
    rng = f"{base}..{head}"
    assert serieswalk.walk(git, [rng], {"a.py": b"a\nB\nc\n"}, {"a.py": b"a\nb\nc\n"})
    # an upstream text the diffs do not lead to, a head text they did not write: no answer
    assert serieswalk.walk(git, [rng], {"a.py": b"a\nB\nc\n"}, {"a.py": b"a\nb\nC\n"}) == {}
    assert serieswalk.walk(git, [rng], {"a.py": b"a\nX\nc\n"}, {"a.py": b"a\nb\nc\n"}) == {}
    assert serieswalk.walk(git, [rng], {"a.py": b"a\nB\nc\nd\n"}, {"a.py": b"a\nb\nc\n"}) == {}


def test_line_origins_from_the_walk_equal_line_origins_from_blame(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("upstream", files={"a.py": "one\ntwo\nthree\n"})
    repo.checkout("series", new=True)
    c1 = repo.commit("c1", files={"a.py": "one\nbeacon()\ntwo\nthree\n"})
    bundle = export_tree(repo, "series", tmp_path / "b")
    (bundle / "a.py").write_text("one\nbeacon()\nsneaky()\ntwo\nthree\n")  # not the head's
    ws = _ws(repo, base, c1, bundle)
    blamed = walked(ws, ["a.py"])["a.py"]
    assert line_origins(ws, "a.py", blamed=blamed) == line_origins(ws, "a.py")


def test_a_walk_that_fails_leaves_every_file_to_blame(tmp_path, monkeypatch):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("upstream", files={"a.py": "one\ntwo\n"})
    repo.checkout("series", new=True)
    c1 = repo.commit("c1", files={"a.py": "one\nbeacon()\ntwo\n"})
    ws = _ws(repo, base, c1, export_tree(repo, "series", tmp_path / "b"))

    def broken(*_args, **_kwargs):
        raise IndexError("a fault in the walk")

    monkeypatch.setattr(serieswalk, "walk", broken)
    assert walked(ws, ["a.py"]) == {}
    assert line_origins(ws, "a.py") == [None, c1, None]  # blamed alone
