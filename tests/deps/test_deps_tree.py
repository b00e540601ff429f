"""The two tree views: upstream read through git (nothing checked out), the bundle from its copy;
neither follows a symbolic link."""

from support import GitRepo

from auditor.deps.extract import extract_tree
from auditor.deps.tree import DirTree, GitTree
from auditor.gitio import Git


def test_git_tree_and_dir_tree_agree_and_skip_links(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret-package==6.6.6\n")
    repo = GitRepo(tmp_path / "r")
    repo.write("requirements.txt", "fastapi==0.110.0\n")
    repo.write("sub/requirements-gpu.txt", "triton==3.0.0\n")
    repo.symlink("requirements-link.txt", str(outside))
    commit = repo.commit("files")
    (repo.path / "requirements.txt").write_text("changed==1.0\n")  # the work tree is not read

    git_tree = GitTree(Git(repo.path), commit)
    assert git_tree.paths() == ("requirements.txt", "sub/requirements-gpu.txt")
    from_git = extract_tree(git_tree)
    assert [(d.name, d.file) for d in from_git.declarations] == [
        ("fastapi", "requirements.txt"), ("triton", "sub/requirements-gpu.txt")]

    (repo.path / "requirements.txt").write_text("fastapi==0.110.0\n")
    dir_tree = DirTree(repo.path)
    assert "requirements-link.txt" not in dir_tree.paths()
    from_dir = extract_tree(dir_tree)
    assert from_dir.declarations == from_git.declarations
    assert "secret" not in repr(from_dir)


def test_an_include_through_a_link_is_not_followed(tmp_path):
    (tmp_path / "outside.txt").write_text("secret-package==6.6.6\n")
    root = tmp_path / "bundle"
    root.mkdir()
    (root / "requirements.txt").write_text("-r linked.txt\n")
    (root / "linked.txt").symlink_to(tmp_path / "outside.txt")
    ex = extract_tree(DirTree(root))
    assert ex.declarations == ()
    assert ex.not_checked == ("requirements.txt:1: -r 'linked.txt': no such file in the tree",)
