"""Git.ls_tree and Git.read_blobs on a real repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import GitRepo

from auditor.errors import ToolError
from auditor.gitio import Git, TreeEntry


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, str]:
    repo = GitRepo(tmp_path_factory.mktemp("gitio") / "repo")
    repo.write("run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    repo.write("bin/blob.dat", b"\x00\x01\n\xff" * 10)
    repo.write("same/a.txt", "twin\n")
    repo.write("same/b.txt", "twin\n")
    repo.write("empty.txt", "")
    repo.write("dir with space/é.txt", "accent\n")
    repo.symlink("link", "run.sh")
    commit = repo.commit("files")
    # a submodule (gitlink) entry without a checkout
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{commit},sub")
    tree = repo.git("write-tree")
    return repo, tree


def _blob(repo: GitRepo, rel: str) -> str:
    return repo.git("rev-parse", f"HEAD:{rel}")


def test_ls_tree_lists_blobs_links_and_gitlinks(repo: tuple[GitRepo, str]) -> None:
    r, tree = repo
    entries = Git(r.path).ls_tree(tree)
    assert sorted(entries) == sorted(["run.sh", "bin/blob.dat", "same/a.txt", "same/b.txt",
                                      "empty.txt", "dir with space/é.txt", "link", "sub"])
    assert entries["run.sh"] == TreeEntry("run.sh", "100755", "blob", _blob(r, "run.sh"), None)
    assert entries["link"].mode == "120000" and entries["link"].type == "blob"
    assert entries["sub"].mode == "160000" and entries["sub"].type == "commit"
    assert entries["sub"].sha == r.head()
    assert entries["same/a.txt"].sha == entries["same/b.txt"].sha
    assert all(e.path == p and e.size is None for p, e in entries.items())


def test_ls_tree_sizes(repo: tuple[GitRepo, str]) -> None:
    r, tree = repo
    entries = Git(r.path).ls_tree(tree, sizes=True)
    assert entries["bin/blob.dat"].size == 40
    assert entries["empty.txt"].size == 0
    assert entries["link"].size == len("run.sh")
    assert entries["sub"].size is None


def test_ls_tree_accepts_a_commit_and_an_empty_tree(repo: tuple[GitRepo, str]) -> None:
    r, _tree = repo
    git = Git(r.path)
    assert "sub" not in git.ls_tree(r.head()) and "run.sh" in git.ls_tree(r.head())
    empty = r.git("hash-object", "-t", "tree", "-w", "--stdin")
    assert git.ls_tree(empty) == {}


def test_ls_tree_keeps_non_utf8_names(tmp_path: Path) -> None:
    r = GitRepo(tmp_path / "repo")
    name = os.fsdecode(b"caf\xe9.txt")
    (r.path / name).write_bytes(b"x\n")
    r.commit("latin-1 name")
    entries = Git(r.path).ls_tree(r.head())
    assert list(entries) == [name]
    assert os.fsencode(entries[name].path) == b"caf\xe9.txt"


def test_ls_tree_of_an_unknown_tree_is_a_tool_error(repo: tuple[GitRepo, str]) -> None:
    r, _tree = repo
    with pytest.raises(ToolError):
        Git(r.path).ls_tree("0" * 40)


def test_read_blobs_reads_all_in_one_go(repo: tuple[GitRepo, str]) -> None:
    r, _tree = repo
    names = ["run.sh", "bin/blob.dat", "same/a.txt", "same/b.txt", "empty.txt", "link"]
    shas = [_blob(r, n) for n in names]
    blobs = Git(r.path).read_blobs(shas + shas[:2])
    assert set(blobs) == set(shas)
    assert blobs[_blob(r, "run.sh")] == b"#!/bin/sh\necho hi\n"
    assert blobs[_blob(r, "bin/blob.dat")] == b"\x00\x01\n\xff" * 10
    assert blobs[_blob(r, "same/a.txt")] == b"twin\n"
    assert blobs[_blob(r, "empty.txt")] == b""
    assert blobs[_blob(r, "link")] == b"run.sh"


def test_read_blobs_of_nothing_runs_nothing(tmp_path: Path) -> None:
    assert Git(tmp_path).read_blobs([]) == {}


def test_read_blobs_missing_object_is_a_tool_error(repo: tuple[GitRepo, str]) -> None:
    r, _tree = repo
    with pytest.raises(ToolError, match="missing"):
        Git(r.path).read_blobs([_blob(r, "run.sh"), "1" * 40])


def test_read_blobs_refuses_a_non_blob(repo: tuple[GitRepo, str]) -> None:
    r, tree = repo
    with pytest.raises(ToolError, match="unexpected header"):
        Git(r.path).read_blobs([tree])


def test_read_blobs_refuses_names_that_are_not_shas(repo: tuple[GitRepo, str]) -> None:
    r, _tree = repo
    with pytest.raises(ValueError):
        Git(r.path).read_blobs(["HEAD:run.sh"])
    with pytest.raises(ValueError):
        Git(r.path).read_blobs([_blob(r, "run.sh") + "\n" + _blob(r, "link")])
