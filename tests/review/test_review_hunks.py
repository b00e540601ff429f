"""Hunks read from real git: kinds, counts, and ids that survive a rebase but not an edit."""

from __future__ import annotations

from pathlib import Path

from support import GitRepo

from auditor.gitio import Git
from auditor.review.hunks import HunkKind, series_hunks

FORK = "Fork Author <fork@community.example>"
BASE = "".join(f"line {i}\n" for i in range(1, 61))


def _hunks(repo: GitRepo, *commits: str):  # type: ignore[no-untyped-def]
    return series_hunks(Git(repo.path), list(commits))


def test_kinds_counts_and_odd_paths(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", files={"a.txt": BASE, "gone.txt": "bye\n", "run.sh": "#!/bin/sh\n",
                               "blob.bin": b"\x00\x01\x02"})
    repo.write("new dir/tab\tname ü.py", "x = 1\n")
    repo.write("a.txt", BASE.replace("line 2\n", "line two\n").replace("line 50\n", ""))
    repo.write("blob.bin", b"\x00\x01\x03")
    repo.write("empty.txt", "")
    repo.write("noeol.txt", "no newline")
    (repo.path / "run.sh").chmod(0o755)
    repo.git("rm", "-q", "gone.txt")
    c = repo.commit("many kinds")
    hunks = _hunks(repo, c)
    by = {(h.path, h.kind): h for h in hunks}
    assert by[("a.txt", HunkKind.TEXT)].lines in (2, 1)
    a = [h for h in hunks if h.path == "a.txt"]
    assert [(h.added, h.removed) for h in a] == [(1, 1), (0, 1)]
    assert a[0].start == 1 and a[0].end == 5  # new-side range with three lines of context
    assert ("new dir/tab\tname ü.py", HunkKind.TEXT) in by
    assert by[("blob.bin", HunkKind.BINARY)].lines == 1
    assert by[("empty.txt", HunkKind.EMPTY)].lines == 1
    assert by[("run.sh", HunkKind.MODE)].lines == 1
    assert by[("gone.txt", HunkKind.TEXT)].removed == 1
    assert "No newline" in by[("noeol.txt", HunkKind.TEXT)].text
    assert len({h.digest for h in hunks}) == len(hunks)
    assert _hunks(repo, c) == hunks  # same series, same ids


def test_ids_survive_a_real_rebase_and_change_on_edit(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", files={"a.py": BASE, "b.py": BASE})
    repo.tag("v1")
    repo.checkout("series", new=True)
    c1 = repo.commit("touch a twice", author=FORK, files={
        "a.py": BASE.replace("line 10\n", "line 10 patched\n").replace("line 40\n", "line 40x\n")})
    c2 = repo.commit("touch b", author=FORK, files={"b.py": BASE.replace("line 5\n", "five\n")})
    before = _hunks(repo, c1, c2)
    assert len(before) == 3
    # upstream moves on: new lines at the top of a.py (shifting every line number) and an edit
    # right next to the second hunk of a.py (its context changes)
    repo.checkout("main")
    repo.commit("upstream v2", files={
        "a.py": "header 1\nheader 2\n" + BASE.replace("line 38\n", "line 38 upstream\n"),
        "c.py": "new\n"})
    repo.tag("v2")
    repo.checkout("series")
    repo.git("rebase", "-q", "v2")
    new = repo.git("rev-list", "--reverse", "v2..series").split()
    after = _hunks(repo, *new)
    assert {h.commit for h in after}.isdisjoint({c1, c2})  # new shas …
    old_ids = {h.path + str(h.start): h.id for h in before}
    assert old_ids  # … but the hunk whose content and context are unchanged keeps its id
    first_a = [h for h in after if h.path == "a.py"][0]
    assert first_a.start == before[0].start + 2  # line numbers moved
    assert first_a.id == before[0].id
    assert [h for h in after if h.path == "b.py"][0].id == before[2].id
    second_a = [h for h in after if h.path == "a.py"][1]
    assert second_a.id != before[1].id  # upstream edited its context: read it again


def test_indentation_and_mode_edits_give_new_ids(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("base", files={"a.py": "if x:\n    pass\n"})
    repo.tag("v1")
    repo.checkout("one", new=True)
    c1 = repo.commit("add", files={"a.py": "if x:\n    pass\ncall()\n"})
    repo.checkout("two", new=True, start="v1")
    c2 = repo.commit("add indented", files={"a.py": "if x:\n    pass\n    call()\n"})
    assert _hunks(repo, c1)[0].id != _hunks(repo, c2)[0].id
