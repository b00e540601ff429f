"""Shared test helpers: real git repositories and specs made on the fly (no network, no mocks)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Upstream Dev",
    "GIT_AUTHOR_EMAIL": "dev@upstream.example",
    "GIT_COMMITTER_NAME": "Upstream Dev",
    "GIT_COMMITTER_EMAIL": "dev@upstream.example",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "LC_ALL": "C",
}


class GitRepo:
    """A real git repository in a test folder, with a fixed clock so shas are deterministic."""

    def __init__(self, path: Path, *, branch: str = "main") -> None:
        self.path = path
        self.clock = 1_700_000_000
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)

    def git(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        full = {**os.environ, **GIT_ENV, **(env or {})}
        res = subprocess.run(["git", "-C", str(self.path), *args], env=full, check=True,
                             capture_output=True, text=True)
        return res.stdout.strip()

    def write(self, rel: str, content: str | bytes, *, mode: int | None = None) -> Path:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
        if mode is not None:
            p.chmod(mode)
        return p

    def symlink(self, rel: str, target: str) -> None:
        p = self.path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.symlink_to(target)

    def remove(self, rel: str) -> None:
        self.git("rm", "-q", "-r", rel)

    def commit(self, message: str, *, files: Mapping[str, str | bytes] | None = None,
               author: str = "Upstream Dev <dev@upstream.example>") -> str:
        for rel, content in (files or {}).items():
            self.write(rel, content)
        self.git("add", "-A")
        self.clock += 60
        name, _, email = author.partition(" <")
        env = {"GIT_AUTHOR_DATE": f"@{self.clock} +0000", "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
               "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"),
               "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">")}
        self.git("commit", "-q", "--allow-empty", "-m", message, env=env)
        return self.head()

    def head(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", rev)

    def tag(self, name: str, rev: str = "HEAD") -> None:
        self.git("tag", "-f", name, rev)

    def checkout(self, name: str, *, new: bool = False, start: str | None = None) -> None:
        args = ["checkout", "-q"] + (["-b", name] if new else [name])
        if start:
            args.append(start)
        self.git(*args)

    def archive(self, dest: Path, rev: str = "HEAD", *, prefix: str = "bundle/") -> Path:
        fmt = "zip" if dest.suffix == ".zip" else ("tar.gz" if dest.name.endswith(".tar.gz")
                                                    else "tar")
        self.git("archive", f"--format={fmt}", f"--prefix={prefix}", "-o", str(dest), rev)
        return dest


def export_tree(repo: GitRepo, rev: str, dest: Path) -> Path:
    """Materialise a commit's tree as a plain folder (no .git), as a bundle would be."""
    import io
    import tarfile

    dest.mkdir(parents=True, exist_ok=True)
    data = subprocess.run(["git", "-C", str(repo.path), "archive", "--format=tar", rev],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="tar")
    return dest


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    s = str(v).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{s}"'


def write_spec(path: Path, sections: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write an audit.toml from nested dicts (section -> key -> value)."""
    lines = []
    for section, keys in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in keys.items()]
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def simple_case(tmp: Path) -> dict[str, Any]:
    """An upstream with tag v1.0.0, a two-commit series on branch `series`, a bundle directory.

    Returns the repo, the series shas and a spec dict that the caller may extend and write.
    """
    repo = GitRepo(tmp / "engine")
    repo.commit("initial", files={
        "engine/__init__.py": "VERSION = '1.0.0'\n",
        "engine/server.py": "def serve(host='127.0.0.1'):\n    return host\n",
        "requirements.txt": "fastapi==0.110.0\nuvicorn==0.29.0\n",
        "csrc/kernel.cu": "__global__ void k(float* x) { x[0] = 1.0f; }\n",
    })
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("refactor server", files={
        "engine/server.py": "def serve(host='127.0.0.1', port=8000):\n    return host, port\n"},
        author="Fork Author <fork@community.example>")
    c2 = repo.commit("add helper", files={"engine/util.py": "def helper():\n    return 1\n"},
                     author="Fork Author <fork@community.example>")
    bundle = export_tree(repo, "series", tmp / "bundle")
    spec = {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c1, c2]},
        "bundle": {"path": str(bundle)},
    }
    return {"repo": repo, "commits": [c1, c2], "bundle": bundle, "spec": spec}


_VERSION_FIELD = re.compile(r'("version": )"[^"]*"')
_SHA1 = re.compile(r"\b[0-9a-f]{40}\b")


def mask_golden(text: str, *, shas: bool = False) -> str:
    """Mask what changes between runs or releases: ``"version"`` values and, with ``shas``, commit
    shas (real repositories: shas depend on git's object format only, but paths do not)."""
    text = _VERSION_FIELD.sub(r'\1"<version>"', text)
    if shas:
        text = _SHA1.sub("<sha>", text)
    return text


def check_golden(golden_dir: Path, name: str, text: str) -> None:
    """``text`` must equal the golden file ``golden_dir/name`` (JSON also compared as data).

    ``AUDITOR_UPDATE_GOLDEN=1`` rewrites it; a missing one is written and the test fails (re-run).
    """
    path = golden_dir / name
    if os.environ.get("AUDITOR_UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if os.environ.get("AUDITOR_UPDATE_GOLDEN") != "1":
            raise AssertionError(f"golden file {path} was missing and has been written; re-run")
        return
    expected = path.read_text(encoding="utf-8")
    if name.endswith(".json"):
        assert json.loads(text) == json.loads(expected), f"{name} differs from its golden file"
    assert text == expected, f"{name} differs from {path}; AUDITOR_UPDATE_GOLDEN=1 regenerates it"
