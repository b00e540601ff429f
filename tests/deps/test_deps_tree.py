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


def test_two_declarations_of_one_name_on_one_line_keep_one_order(tmp_path):
    """vLLM's Dockerfile installs ``runai-model-streamer runai-model-streamer[s3]`` on one line;
    the extraction's order must not depend on the interpreter's hash seed."""
    import json
    import os
    import subprocess
    import sys

    docker = tmp_path / "docker"
    docker.mkdir()
    (docker / "Dockerfile").write_text(
        "FROM python:3.12\n"
        "RUN uv pip install --system boto3 runai-model-streamer runai-model-streamer[s3] "
        "'timm==0.9.10'\n")
    probe = ("import json, sys\n"
             "from pathlib import Path\n"
             "from auditor.deps.extract import extract_tree\n"
             "from auditor.deps.tree import DirTree\n"
             "ex = extract_tree(DirTree(Path(sys.argv[1])))\n"
             "print(json.dumps([[d.name, list(d.extras), d.line] for d in ex.declarations]))\n")
    orders = set()
    for seed in ("1", "2", "3", "4", "5", "6"):
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], check=True,
                             capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        orders.add(out)
    assert len(orders) == 1
    names = [(n, tuple(x)) for n, x, _ in json.loads(orders.pop())]
    assert ("runai-model-streamer", ()) in names and ("runai-model-streamer", ("s3",)) in names
