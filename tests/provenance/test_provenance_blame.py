from pathlib import Path

from support import GitRepo, export_tree

from auditor.model import Workspace
from auditor.provenance.blame import UNEXPLAINED, line_origins


def _ws(repo: GitRepo, bundle: Path, base: str, head: str) -> Workspace:
    return Workspace(upstream_repo=repo.path, patches_repo=repo.path, upstream_commit=base,
                     upstream_tree="", head_commit=head, head_tree="", expected_tree=None,
                     commits=(), bundle_root=bundle, bundle_tree="", manifest={}, proof_ok=True)


def test_line_origins_attribute_first_and_later_commits(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("base", files={"a.py": "one\ntwo\n"})
    repo.checkout("s", new=True)
    c1 = repo.commit("c1", files={"a.py": "one\nbeacon()\ntwo\n"})
    c2 = repo.commit("c2", files={"a.py": "one\nbeacon()\ntwo\nthree\n"})
    bundle = export_tree(repo, "s", tmp_path / "b")
    ws = _ws(repo, bundle, base, c2)
    assert line_origins(ws, "a.py") == [None, c1, None, c2]
    # a bundle line the series does not have is unexplained, the others keep their origin
    (bundle / "a.py").write_text("one\nbeacon()\nsneaky()\ntwo\nthree\n")
    assert line_origins(ws, "a.py") == [None, c1, UNEXPLAINED, None, c2]
    (bundle / "new.py").write_text("x\n")
    assert line_origins(ws, "new.py") == [UNEXPLAINED]


def test_line_origins_count_lines_as_git_does(tmp_path):
    repo = GitRepo(tmp_path / "r")
    base = repo.commit("base", files={"a.py": "x = 1\n"})
    repo.checkout("s", new=True)
    c1 = repo.commit("c1", files={"a.py": "x = 1\ns = 'form\x0cfeed'\ny = 2\n"})
    bundle = export_tree(repo, "s", tmp_path / "b")
    ws = _ws(repo, bundle, base, c1)
    assert line_origins(ws, "a.py") == [None, c1, c1]
