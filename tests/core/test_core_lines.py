"""split_lines counts lines as git does: the same number of lines as ``git blame`` reports."""

from __future__ import annotations

import subprocess
from pathlib import Path

from auditor.gitio import git_env
from auditor.lines import split_lines

TEXT = "one\r\ntwo\r\r\nthree\rstill three\x0cand\u2028here\nlast"


def test_split_lines_matches_git_blame(tmp_path: Path) -> None:
    env = git_env({"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"})
    (tmp_path / "f.txt").write_bytes(TEXT.encode())
    for args in (["init", "-q"], ["add", "f.txt"], ["commit", "-qm", "f"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], env=env, check=True)
    porcelain = subprocess.run(["git", "-C", str(tmp_path), "blame", "--porcelain", "f.txt"],
                               env=env, check=True, capture_output=True).stdout
    blamed = [row[1:].decode() for row in porcelain.split(b"\n") if row.startswith(b"\t")]
    assert len(split_lines(TEXT)) == len(blamed) == 4
    assert split_lines(TEXT) == [b.removesuffix("\r") for b in blamed]
    assert split_lines(TEXT)[1] == "two\r"  # only the CRLF ending's \r is dropped


def test_split_lines_edges() -> None:
    assert split_lines("") == []
    assert split_lines("a\n") == ["a"]
    assert split_lines("a\n\n") == ["a", ""]
