"""The proof cache: the verify stage's result, reused only when everything it depends on is the same.

A proof depends on the bundle's bytes, the spec's verify keys (upstream, patches, bundle, the
policy's content), what the names resolve to in git (the upstream ref and pin, the series head and
every listed commit), the history git would walk (replace refs, grafts, the shallow file, the
repositories' own config and attributes, the ``GIT_*`` environment), the git version and auditor's
own code. The key is the sha256 of all of them, read fresh on every run (the bundle is hashed,
~0.3 s for 60 MB); a part that cannot be read means no key, and the proof is computed.

An entry is a JSON file under ``<cache>/proof/``, written atomically. It is used only when its
schema, key and parts equal the current ones and it is consistent in itself (the manifest hashes
to the bundle tree the result names, the result names the resolved commits); anything else,
including an unreadable or truncated file, is a miss, never an error. A computed proof is stored
only when the run saw the same commits and bundle bytes the key was made from.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor import __version__
from auditor.errors import AuditError
from auditor.fsutil import JsonStore, sha256_file
from auditor.gitio import Git
from auditor.model import BundleFile, SeriesCommit, StageResult, StageStatus, Workspace
from auditor.provenance.gitstate import git_version, repo_files_state
from auditor.provenance.treehash import manifest_digest, tree_of_entries
from auditor.results.verify import VerifyData
from auditor.spec import Spec

PROOF_SCHEMA = "auditor/proof-cache/v1"
_ENV_IGNORED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")
_HEX40 = frozenset("0123456789abcdef")


@dataclass(frozen=True)
class ProofKey:
    digest: str
    parts: Mapping[str, Any]

    @property
    def upstream_ref(self) -> str | None:
        return self.parts["upstream"]["resolved"][0]  # type: ignore[no-any-return]

    @property
    def upstream_pin(self) -> str | None:
        return self.parts["upstream"]["resolved"][1]  # type: ignore[no-any-return]

    @property
    def head(self) -> str | None:
        return self.parts["patches"]["resolved"][0]  # type: ignore[no-any-return]

    @property
    def listed(self) -> list[str | None]:
        return list(self.parts["patches"]["resolved"][1:])


@functools.cache
def code_digest() -> str:
    """auditor's own version and the sha256 over its Python sources (a changed checkout counts)."""
    root = Path(__file__).resolve().parent.parent
    files = []
    for folder, dirs, names in os.walk(root):  # the policies link (rules, fixtures) not followed
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files += [Path(folder, n) for n in names if n.endswith(".py")]
    h = hashlib.sha256(__version__.encode() + b"\0")
    for path in sorted(files):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _repo_state(git: Git, names: list[str]) -> dict[str, Any]:
    """What a repository resolves ``names`` to and the state that can change history under them."""
    return {**repo_files_state(git), "resolved": git.resolve_many(names)}


def _spec_parts(spec: Spec, policy_path: Path) -> dict[str, Any]:
    b = spec.bundle
    return {
        "upstream": [str(spec.upstream.repo), spec.upstream.ref, spec.upstream.commit,
                     list(spec.upstream.also)],
        "patches": [str(spec.patches.repo), spec.patches.ref, list(spec.patches.commits),
                    spec.patches.allow_merges, spec.patches.model, spec.patches.commits_range],
        "bundle": [str(b.path), b.strip_components, b.max_bytes, b.max_files, b.max_file_bytes],
        "policy": [str(policy_path), sha256_file(policy_path, follow_symlinks=False)],
    }


def proof_key(spec: Spec, policy_path: Path, upstream_git: Git, patches_git: Git) -> ProofKey | None:
    """The key of the proof for ``spec`` now, or None when the proof is not cacheable (a folder
    bundle) or a part cannot be read (the proof is then computed, never assumed)."""
    try:
        st = os.stat(spec.bundle.path)
        if not stat.S_ISREG(st.st_mode):
            return None
        parts: dict[str, Any] = {
            "schema": PROOF_SCHEMA,
            "auditor": code_digest(),
            "git": git_version(),
            "env": sorted((k, v) for k, v in os.environ.items()
                          if k.startswith("GIT_") and k not in _ENV_IGNORED),
            "spec": _spec_parts(spec, policy_path),
            "bundle_sha256": sha256_file(spec.bundle.path, follow_symlinks=False),
            "bundle_size": st.st_size,
        }
        names = [spec.upstream.ref] + ([spec.upstream.commit] if spec.upstream.commit else [])
        up = _repo_state(upstream_git, names)
        if len(up["resolved"]) == 1:
            up["resolved"].append(None)
        up["also"] = upstream_git.resolve_many(spec.upstream.also)
        parts["upstream"] = up
        parts["patches"] = _repo_state(patches_git, [spec.patches.ref, *spec.patches.commits])
        parts["patches_env"] = sorted(getattr(patches_git, "env", {}).items())
    except (OSError, AuditError, UnicodeError):
        return None
    raw = json.dumps(parts, sort_keys=True, ensure_ascii=True)
    return ProofKey(hashlib.sha256(raw.encode()).hexdigest(), json.loads(raw))


# ---------------------------------------------------------------- entries


@dataclass(frozen=True)
class CachedProof:
    result: StageResult
    workspace: Mapping[str, Any]  # the workspace's JSON (checked), see :func:`workspace_of`
    manifest: Mapping[str, BundleFile]
    commits: tuple[SeriesCommit, ...]


def _workspace_json(ws: Workspace) -> dict[str, Any]:
    return {
        "upstream_commit": ws.upstream_commit, "upstream_tree": ws.upstream_tree,
        "head_commit": ws.head_commit, "head_tree": ws.head_tree,
        "expected_tree": ws.expected_tree, "bundle_tree": ws.bundle_tree,
        "proof_ok": ws.proof_ok, "upstream_also": list(ws.upstream_also),
        "upstream_picks": dict(ws.upstream_picks),
        "commits": [c.to_json() for c in ws.commits],
        "manifest": [[f.path, f.mode, f.size, f.sha256, f.blob]
                     for f in sorted(ws.manifest.values(), key=lambda f: os.fsencode(f.path))],
    }


def _is_sha(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 40 and set(value) <= _HEX40


def _manifest_of(rows: Any) -> dict[str, BundleFile]:
    out: dict[str, BundleFile] = {}
    if not isinstance(rows, list):
        raise ValueError("manifest")
    for row in rows:
        path, mode, size, sha256, blob = row
        if (not isinstance(path, str) or mode not in ("100644", "100755", "120000")
                or not isinstance(size, int) or size < 0 or not isinstance(sha256, str)
                or len(sha256) != 64 or not _is_sha(blob) or path in out):
            raise ValueError("manifest row")
        out[path] = BundleFile(path=path, mode=mode, size=size, sha256=sha256, blob=blob)
    return out


def _parse(data: Any, key: ProofKey) -> CachedProof:
    """The entry, checked against the key and in itself; ValueError (a miss) when anything is off."""
    if (not isinstance(data, dict) or data.get("schema") != PROOF_SCHEMA
            or data.get("key") != key.digest or data.get("parts") != key.parts):
        raise ValueError("key")
    ws = data["workspace"]
    for name in ("upstream_commit", "upstream_tree", "head_commit", "head_tree", "bundle_tree"):
        if not _is_sha(ws[name]):
            raise ValueError(name)
    if ws["expected_tree"] is not None and not _is_sha(ws["expected_tree"]):
        raise ValueError("expected_tree")
    if not isinstance(ws["proof_ok"], bool):
        raise ValueError("proof_ok")
    manifest = _manifest_of(ws["manifest"])
    if tree_of_entries((f.path, f.mode, f.blob) for f in manifest.values()) != ws["bundle_tree"]:
        raise ValueError("the manifest does not hash to the bundle tree")
    commits = tuple(SeriesCommit.from_json(c) for c in ws["commits"])
    result = StageResult.from_json("verify", data["result"])
    d = result.data_as(VerifyData)
    if (d is None or d.bundle_tree != ws["bundle_tree"] or d.file_count != len(manifest)
            or d.manifest_digest != manifest_digest(manifest)
            or d.upstream.commit != ws["upstream_commit"]
            or d.head.commit != ws["head_commit"]
            or d.head.commit != key.head
            or d.upstream.ref_commit != key.upstream_ref
            or d.ok is not ws["proof_ok"]
            or (result.status is StageStatus.OK) is not ws["proof_ok"]):
        raise ValueError("the result does not match its workspace")
    return CachedProof(result=result, workspace=ws, manifest=manifest, commits=commits)


class ProofCache:
    """``<cache>/proof/<key[:2]>/<key>.json``."""

    def __init__(self, root: Path) -> None:
        self.store = JsonStore(root / "proof", mode=0o644)

    def get(self, key: ProofKey) -> CachedProof | None:
        data = self.store.get(key.digest)
        if data is None:
            return None
        try:
            return _parse(data, key)
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None

    def put(self, key: ProofKey, result: StageResult, ws: Workspace, bundle: Path) -> bool:
        """Store a computed proof when the run saw what the key names; False when not stored."""
        d = result.data_as(VerifyData)
        if (d is None or d.proof is None
                or d.head.commit != key.head
                or d.upstream.ref_commit != key.upstream_ref
                or (key.upstream_pin is not None and d.upstream.commit != key.upstream_pin)
                or list(d.listed) != key.listed
                or any(r is None for r in key.listed)):
            return False
        entry = {"schema": PROOF_SCHEMA, "key": key.digest, "parts": key.parts,
                 "result": result.to_json(), "workspace": _workspace_json(ws)}
        try:
            if sha256_file(bundle, follow_symlinks=False) != key.parts["bundle_sha256"]:
                return False  # the bundle changed during the run
            _parse(json.loads(json.dumps(entry)), key)  # what a later run will read back
        except (OSError, ValueError, KeyError, TypeError):
            return False
        return self.store.put(key.digest, entry)
