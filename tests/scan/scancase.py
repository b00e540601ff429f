"""Helpers for the scan tests: a verified Workspace built from a real repository and bundle
folder (the verify stage's job, done here directly), throwaway semgrep rules, and a Context."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import GitRepo, export_tree, write_spec

from auditor.model import BundleFile, Scope, StageResult, Workspace
from auditor.scan.stage import ScanStage
from auditor.spec import load_spec
from auditor.stage import Context, Options

RULES = """\
rules:
  - id: network.python.requests
    languages: [python]
    severity: ERROR
    message: outbound HTTP request (requests.$F)
    metadata:
      category: network
      severity: high
      help: Find where the request goes and what it sends; engines do not phone home.
    pattern: requests.$F(...)
  - id: secret-access.python.token-env
    languages: [python]
    severity: ERROR
    message: reads a token or key from the environment
    metadata:
      category: secret-access
      severity: high
      help: Check where the secret value goes next (a file, a log, the network).
    patterns:
      - pattern-either:
          - pattern: os.environ[$K]
          - pattern: os.environ.get($K, ...)
          - pattern: os.getenv($K, ...)
      - metavariable-regex:
          metavariable: $K
          regex: (?i).*(TOKEN|KEY|SECRET|PASSWORD).*
  - id: prompt-logging.python.log-prompt
    languages: [python]
    severity: WARNING
    message: logs request content (prompt)
    metadata:
      category: prompt-logging
      severity: high
      help: Prompts are user data; they must not reach the engine's logs.
    pattern-regex: (logger|logging)\\.(info|debug|warning)\\(.*prompt
  - id: container-privilege.yaml.privileged
    languages: [yaml]
    severity: ERROR
    message: a privileged container
    metadata:
      category: container-privilege
      severity: high
      help: A privileged container owns the host; drop the flag and grant what is needed only.
    pattern: "privileged: true"
  - id: network.shell.curl
    languages: [bash]
    severity: ERROR
    message: a script downloads with curl
    metadata:
      category: network
      severity: medium
      help: Check what is downloaded and whether it is pinned by a checksum.
    pattern: curl ...
  - id: network.cpp.connect
    languages: [cpp, c]
    severity: ERROR
    message: native code connects out
    metadata:
      category: network
      severity: high
      help: Kernels have no reason to open sockets; find the peer and what is sent.
    pattern: connect($FD, $ADDR, $LEN)
"""

FORK = "Fork Author <fork@community.example>"


def write_rules(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rules.yaml").write_text(RULES)
    return folder


def git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def manifest_of(root: Path) -> dict[str, BundleFile]:
    out: dict[str, BundleFile] = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                data = os.readlink(p).encode()
                mode = "120000"
            else:
                data = p.read_bytes()
                mode = "100755" if os.access(p, os.X_OK) else "100644"
            out[rel] = BundleFile(path=rel, mode=mode, size=len(data),
                                  sha256=hashlib.sha256(data).hexdigest(),
                                  blob=git_blob_sha(data))
    return out


def workspace(repo: GitRepo, upstream_ref: str, head_ref: str, bundle: Path) -> Workspace:
    up = repo.head(upstream_ref)
    head = repo.head(head_ref)
    return Workspace(
        upstream_repo=repo.path, patches_repo=repo.path, upstream_commit=up,
        upstream_tree=repo.git("rev-parse", f"{up}^{{tree}}"), head_commit=head,
        head_tree=repo.git("rev-parse", f"{head}^{{tree}}"), expected_tree=None, commits=(),
        bundle_root=bundle, bundle_tree="", manifest=manifest_of(bundle), proof_ok=True)


def context(tmp: Path, repo: GitRepo, commits: list[str], bundle: Path, ws: Workspace, *,
            cache: Path, scope: Scope | None = None, waivers: Path | None = None,
            profile: str = "vllm", head_ref: str = "series") -> Context:
    tmp.mkdir(parents=True, exist_ok=True)
    scan: dict[str, Any] = {}
    if waivers is not None:
        scan["waivers"] = str(waivers)
    spec_path = write_spec(tmp / "audit.toml", {
        "engine": {"profile": profile, "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": head_ref, "commits": commits},
        "bundle": {"path": str(bundle)},
        "scan": scan,
    })
    (tmp / "work").mkdir(exist_ok=True)
    (tmp / "out").mkdir(exist_ok=True)
    ctx = Context(spec=load_spec(spec_path), options=Options(scope=scope, cache=cache, jobs=2),
                  workdir=tmp / "work", out_dir=tmp / "out")
    ctx.workspace = ws
    return ctx


def bundle_of(repo: GitRepo, rev: str, dest: Path) -> Path:
    return export_tree(repo, rev, dest)


@dataclass
class SeriesScan:
    repo: GitRepo
    bundle: Path
    commits: list[str]
    result: StageResult


def scan_series(tmp: Path, series: list[tuple[str, Mapping[str, str]]], *,
                upstream: Mapping[str, str] | None = None) -> SeriesScan:
    """The real scan stage over a series on a one-commit upstream (tag v1.0.0): each
    ``(subject, files)`` one commit by the fork's author, the bundle the series' head."""
    repo = GitRepo(tmp / "engine")
    repo.commit("upstream", files=dict(upstream or {"README.md": "engine\n"}))
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    commits = [repo.commit(subject, files=dict(files), author=FORK) for subject, files in series]
    bundle = bundle_of(repo, "series", tmp / "bundle")
    ws = workspace(repo, "v1.0.0", "series", bundle)
    ctx = context(tmp / "run", repo, commits, bundle, ws, cache=tmp / "cache")
    return SeriesScan(repo, bundle, commits, ScanStage().run(ctx))


def semgrep_shipped_rules(semgrep: str, root: Path, targets: list[str]) -> dict[str, Any]:
    """The real semgrep with the shipped rules over ``targets`` (relative to ``root``), offline,
    in a private home; its JSON document (the test fails when it printed none)."""
    import json

    import pytest

    from auditor import gitio
    from auditor.scan import rules as rules_mod

    home = root / ".home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEMGREP_")}
    env.update({"HOME": str(home), "SEMGREP_SETTINGS_FILE": str(home / "settings.yml"),
                "SEMGREP_ENABLE_VERSION_CHECK": "0"})
    res = gitio.run([semgrep, "scan", "--metrics=off", "--json", "--no-rewrite-rule-ids",
                     "--x-ignore-semgrepignore-files", "--no-git-ignore",
                     "--config", str(rules_mod.RULES_DIR), *targets],
                    cwd=root, env=env, check=False, timeout=300)
    try:
        doc: dict[str, Any] = json.loads(res.stdout)
    except ValueError:
        pytest.fail(f"semgrep printed no JSON (exit {res.returncode}): {res.stderr[-800:]}")
    return doc
