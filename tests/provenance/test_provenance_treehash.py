"""The Python tree hash equals `git add -A && git write-tree`, on fixed and on random trees."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import GIT_ENV

from auditor.provenance.treehash import (
    EMPTY_TREE,
    blob_sha,
    hash_folder,
    manifest_digest,
    tree_of_entries,
)


def git_write_tree(folder: Path) -> str:
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(folder), *args], env=env, check=True,
                       capture_output=True)
    return subprocess.run(["git", "-C", str(folder), "write-tree"], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_blob_sha_matches_git_hash_object(tmp_path):
    data = b"hello\0world\n"
    (tmp_path / "f").write_bytes(data)
    out = subprocess.run(["git", "hash-object", str(tmp_path / "f")], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert blob_sha(data) == out


def test_sort_order_modes_and_manifest(tmp_path):
    # "a-b" and "a.b" sort before the folder "a" (compared as "a/"), "a0" after it
    for rel in ("a/x", "a-b", "a.b", "a0", "deep/er/still/f"):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(rel)
    (tmp_path / "run.sh").write_text("#!/bin/sh\n")
    (tmp_path / "run.sh").chmod(0o744)
    (tmp_path / "group-x").write_text("")
    (tmp_path / "group-x").chmod(0o654)  # only the owner's x bit counts for git
    (tmp_path / "ln").symlink_to("a/x")
    (tmp_path / "empty" / "nested").mkdir(parents=True)
    got = hash_folder(tmp_path)
    m = got.manifest
    assert m["run.sh"].mode == "100755" and m["group-x"].mode == "100644"
    assert m["ln"].mode == "120000" and m["ln"].blob == blob_sha(b"a/x")
    assert m["a/x"].sha256 == hashlib.sha256(b"a/x").hexdigest()
    assert "empty" not in {p.split("/")[0] for p in m}
    assert len(manifest_digest(m)) == 64
    assert got.tree == git_write_tree(tmp_path)
    again = hash_folder(tmp_path)  # git_write_tree made a .git: it is left out, and reported
    assert again.tree == got.tree and again.excluded == (".git",)


def test_empty_folder_is_the_empty_tree(tmp_path):
    assert hash_folder(tmp_path).tree == EMPTY_TREE
    assert tree_of_entries([]) == EMPTY_TREE


# ---------------------------------------------------------------- property test

_CHUNKS = [b"a", b"b", b"Z", b"0", b"9", b"-", b".", b"_", b" ", b"=", b"#", b"+", b",",
           b"\t", b"\n", b"'", b'"', b"\xc3\xa9", b"\xe2\x98\x83", b"\xff", b"\x80", b"[", b"*"]


def _ok_name(name: bytes) -> bool:
    low = name.lower()
    return name not in (b".", b"..") and not low.startswith(b".git")


names = st.lists(st.sampled_from(_CHUNKS), min_size=1, max_size=6).map(b"".join).filter(_ok_name)
files = st.tuples(st.just("file"), st.binary(max_size=300),
                  st.sampled_from([0o644, 0o755, 0o744, 0o654, 0o600]))
links = st.tuples(st.just("link"), st.lists(st.sampled_from([b"a", b"..", b"x y", b"\xff", b"b"]),
                                            min_size=1, max_size=3).map(b"/".join))
trees = st.recursive(
    st.dictionaries(names, st.one_of(files, links), max_size=5),
    lambda children: st.dictionaries(names, st.one_of(files, links, children), max_size=5),
    max_leaves=25,
)


def _materialise(folder: bytes, tree: dict) -> None:
    for name, value in tree.items():
        path = os.path.join(folder, name)
        if isinstance(value, dict):
            os.mkdir(path)
            _materialise(path, value)
        elif value[0] == "file":
            with open(path, "wb") as fh:
                fh.write(value[1])
            os.chmod(path, value[2])
        else:
            os.symlink(value[1], path)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(tree=trees)
def test_tree_hash_equals_git_write_tree(tmp_path, tree):
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    _materialise(os.fsencode(folder), tree)
    ours = hash_folder(folder, jobs=1).tree
    assert ours == git_write_tree(folder)
