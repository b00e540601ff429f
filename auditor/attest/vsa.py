"""The SLSA Verification Summary Attestation (VSA v1) of an audit or a gate.

Subject: the bundle that was proven: a bundle file by its sha256; a folder bundle by the git tree
hash of the proven tree (``gitTree``), since a folder has no file digest. The policy is the set of
files the verdict was judged by (the scan policy, the waivers, the engine profile), named by
:func:`policy_set` as a small text (``sha256  role  path`` per line, sorted by role); the VSA's
``policy.digest`` is that text's sha256 and ``policy.uri`` says how it was made. Every path shown is
relative to the spec's folder (or ``auditor:`` + the path inside auditor for a file auditor ships):
never an absolute path of the review machine. ``verificationResult`` is PASSED only for the verdict
PASS; REVIEW, FAIL and INCOMPLETE are FAILED, and the verdict itself is in ``verifiedLevels``
(``AUDITOR_VERDICT_<V>``; SLSA reserves only the ``SLSA_`` prefix).

The VSA v1 protobuf of in-toto-attestation 0.9.3 has no ``verifier.version``; the version and the
commit auditor was installed from are part of ``verifier.id`` so the document parses strictly.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from auditor import __version__
from auditor.bundledigest import bundle_digest
from auditor.errors import InputError
from auditor.fsutil import sha256_file
from auditor.model import Verdict
from auditor.spec import ENGINES_DIR, POLICIES_DIR, Spec

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
VSA_TYPE = "https://slsa.dev/verification_summary/v1"
SLSA_VERSION = "1.0"
#: how policy.uri names the policy-set text (see :func:`policy_set`)
POLICY_URI = "urn:auditor:policy-set:v1"
VERIFIER_BASE = "https://auditor.invalid/verifier/auditor"
UNKNOWN_COMMIT = "unknown"


@dataclass(frozen=True)
class PolicyFile:
    role: str  # policy, waivers, profile
    path: str  # shown: spec-relative, or auditor:<path> for a file auditor ships
    sha256: str


def shown_path(path: Path, root: Path) -> str:
    """``path`` as outputs show it: relative to the spec's folder when inside it, ``auditor:…``
    for a file inside auditor's own policies, else relative with ``..`` (never absolute)."""
    real, base = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    policies = Path(os.path.realpath(POLICIES_DIR))
    if real == base or base in real.parents:
        return real.relative_to(base).as_posix()
    if policies in real.parents:
        return "auditor:policies/" + real.relative_to(policies).as_posix()
    return Path(os.path.relpath(real, base)).as_posix()


def policy_files(spec: Spec) -> list[PolicyFile]:
    """The files the verdict is judged by, in role order: policy, waivers, profile."""
    named: list[tuple[str, Path]] = []
    if spec.scan is not None:
        named.append(("policy", spec.scan.policy))
        if spec.scan.waivers is not None:
            named.append(("waivers", spec.scan.waivers))
    named.append(("profile", profile_file(spec)))
    out = []
    for role, p in named:
        try:
            digest = sha256_file(p)
        except OSError as exc:
            raise InputError(f"the {role} file {p} cannot be read for the verification "
                             f"summary: {exc.strerror or exc}") from None
        out.append(PolicyFile(role, shown_path(p, spec.root), digest))
    return out


def profile_file(spec: Spec) -> Path:
    """The engine profile file the spec's ``[engine] profile`` named (as :func:`load_profile`
    found it: ``policies/engines/<profile>.toml``)."""
    engine = spec.raw.get("engine") if isinstance(spec.raw.get("engine"), Mapping) else {}
    name = engine.get("profile", "generic") if isinstance(engine, Mapping) else "generic"
    return ENGINES_DIR / f"{name}.toml"


def policy_set(files: Sequence[PolicyFile]) -> str:
    """The policy-set text whose sha256 is the VSA's policy digest."""
    return "".join(f"{f.sha256}  {f.role}  {f.path}\n" for f in files)


def policy_digest(files: Sequence[PolicyFile]) -> str:
    return hashlib.sha256(policy_set(files).encode("utf-8")).hexdigest()


@cache
def installed_commit() -> str:
    """The commit of the checkout auditor runs from (its git, read-only), else "unknown"."""
    here = Path(__file__).resolve().parents[2]
    if not (here / ".git").exists():
        return UNKNOWN_COMMIT
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
    try:
        res = subprocess.run(["git", "-C", str(here), "rev-parse", "--verify", "HEAD"],
                             capture_output=True, text=True, env=env, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return UNKNOWN_COMMIT
    sha = res.stdout.strip()
    return sha if res.returncode == 0 and len(sha) == 40 else UNKNOWN_COMMIT


def verifier_id(version: str = __version__, commit: str | None = None) -> str:
    return f"{VERIFIER_BASE}@{version}?commit={commit or installed_commit()}"


@dataclass(frozen=True)
class Subject:
    name: str
    digest: Mapping[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "digest": dict(self.digest)}


def bundle_subject(spec: Spec, bundle_tree: str | None) -> Subject:
    """The proven bundle: a file by its sha256 (:func:`auditor.bundledigest.bundle_digest`, the
    digest audit.json, the SBOM and the provenance carry), a folder by its git tree hash."""
    d = bundle_digest(spec, bundle_tree)
    if d.kind == "directory":
        return Subject(d.name, {"gitTree": d.tree or folder_tree(spec.bundle.path)})
    assert d.sha256 is not None
    return Subject(d.name, {"sha256": d.sha256})


def folder_tree(path: Path) -> str:
    """The git tree hash of a folder, as verify proves it (``.git`` left out)."""
    from auditor.provenance.treehash import hash_folder

    try:
        return hash_folder(path).tree
    except OSError as exc:
        raise InputError(f"{path}: cannot be read: {exc.strerror or exc}") from None


@dataclass(frozen=True)
class InputAttestation:
    uri: str
    sha256: str


def vsa_statement(*, subject: Subject, verdict: Verdict, resource_uri: str,
                  policy: Sequence[PolicyFile], inputs: Sequence[InputAttestation],
                  time_verified: datetime | None) -> dict[str, Any]:
    passed = verdict is Verdict.PASS
    levels = [f"AUDITOR_VERDICT_{verdict.value}"] if passed else \
        ["FAILED", f"AUDITOR_VERDICT_{verdict.value}"]
    predicate: dict[str, Any] = {
        "verifier": {"id": verifier_id()},
        **({"timeVerified": time_verified.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
           if time_verified is not None else {}),
        "resourceUri": resource_uri,
        "policy": {"uri": POLICY_URI, "digest": {"sha256": policy_digest(policy)}},
        "inputAttestations": [{"uri": a.uri, "digest": {"sha256": a.sha256}} for a in inputs],
        "verificationResult": "PASSED" if passed else "FAILED",
        "verifiedLevels": levels,
        "slsaVersion": SLSA_VERSION,
    }
    return {"_type": STATEMENT_TYPE, "subject": [subject.to_json()], "predicateType": VSA_TYPE,
            "predicate": predicate}
