"""What an audit signs, and the summary of it that audit.json and the reports carry.

With a key, an audit directory gets up to three DSSE envelopes (one line each):

- ``provenance.intoto.jsonl``: the SLSA v1 provenance of the rebuilt wheel; its payload is exactly
  the bytes of ``provenance.intoto.json`` (only when a wheel was built);
- ``sbom.intoto.jsonl``: an in-toto Statement, predicate type ``https://cyclonedx.org/bom``, whose
  predicate is ``sbom.cdx.json``; its subject is the built wheel, or the bundle when nothing was
  built;
- ``vsa.intoto.jsonl``: the verification summary of the audit (:mod:`auditor.attest.vsa`), whose
  input attestations are audit.json, the SBOM and the provenance by sha256: the signed companion
  of audit.json that ``report`` and ``gate`` check.

``auditor gate`` adds ``gate.vsa.intoto.jsonl``: the summary of its decision (inputs: gate.json,
the new audit.json and the baseline). Without a key nothing is signed and audit.json says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from auditor.attest import dsse
from auditor.attest.keys import KEY_ENV, SigningKey
from auditor.attest.vsa import (
    STATEMENT_TYPE,
    InputAttestation,
    Subject,
    bundle_subject,
    policy_files,
    shown_path,
    verifier_id,
    vsa_statement,
)
from auditor.fsutil import atomic_write_text, sha256_file
from auditor.model import AuditResult, Verdict
from auditor.spec import Spec
from auditor.textsafe import dump_json

CYCLONEDX_TYPE = "https://cyclonedx.org/bom"
PROVENANCE_ENVELOPE = "provenance.intoto.jsonl"
SBOM_ENVELOPE = "sbom.intoto.jsonl"
VSA_ENVELOPE = "vsa.intoto.jsonl"
GATE_VSA_ENVELOPE = "gate.vsa.intoto.jsonl"
ENVELOPE_FORMAT = "dsse/intoto-jsonl"
NOT_SIGNED = (f"not signed: no key was given (--key, ${KEY_ENV} or the spec's [attest] key)")
_WHAT = {PROVENANCE_ENVELOPE: "SLSA provenance v1 of the built wheel",
         SBOM_ENVELOPE: "the CycloneDX SBOM as an in-toto statement",
         VSA_ENVELOPE: "SLSA verification summary (VSA v1) of the audit",
         GATE_VSA_ENVELOPE: "SLSA verification summary (VSA v1) of the gate"}


def describe(name: str) -> str:
    return _WHAT.get(name, name)


def signed_lines(tool: Mapping[str, Any]) -> list[str] | None:
    """What a report says about signing, from audit.json's ``tool.attest`` (plain text, for the
    caller to escape); None for an audit.json written before auditor signed anything."""
    attest = tool.get("attest")
    if not isinstance(attest, Mapping):
        return None
    signed = [str(x) for x in attest.get("signed") or []]
    if not signed:
        return [str(attest.get("note") or NOT_SIGNED)]
    return [f"signed with {attest.get('algorithm')} key {attest.get('keyid')} "
            f"({attest.get('format')}):", *(f"{n}: {describe(n)}" for n in signed)]


def planned(out_dir: Path) -> list[str]:
    """The envelopes an audit in ``out_dir`` gets (the documents it wrote decide), in order."""
    names = []
    if (out_dir / "provenance.intoto.json").is_file():
        names.append(PROVENANCE_ENVELOPE)
    if (out_dir / "sbom.cdx.json").is_file():
        names.append(SBOM_ENVELOPE)
    return [*names, VSA_ENVELOPE]


def summary(key: SigningKey | None, signed: Sequence[str]) -> dict[str, Any]:
    """What audit.json's ``tool.attest`` says: the files signed and the key's id, or why not."""
    if key is None:
        return {"signed": [], "keyid": None, "algorithm": None, "format": ENVELOPE_FORMAT,
                "verifier": verifier_id(), "note": NOT_SIGNED}
    return {"signed": list(signed), "keyid": key.keyid, "algorithm": key.algorithm.value,
            "format": ENVELOPE_FORMAT, "verifier": verifier_id(), "note": ""}


def with_summary(audit: AuditResult, key: SigningKey | None, out_dir: Path) -> AuditResult:
    from dataclasses import replace

    return replace(audit, tool={**audit.tool,
                                "attest": summary(key, planned(out_dir) if key else [])})


def _payload(statement: dict[str, Any]) -> bytes:
    return dump_json(statement).encode("utf-8")


def _write(path: Path, payload: bytes, key: SigningKey) -> None:
    atomic_write_text(path, dsse.sign(payload, key).line())


def _bundle_tree(audit: AuditResult) -> str | None:
    verify = audit.stages.get("verify")
    data = verify.data if verify is not None else None
    tree = getattr(data, "bundle_tree", None)
    return tree if isinstance(tree, str) and tree else None


def _wheel_subject(audit: AuditResult) -> Subject | None:
    sbom = audit.stages.get("sbom")
    prov = getattr(sbom.data, "provenance", None) if sbom is not None else None
    if prov is None:
        return None
    return Subject(str(prov.subject), {"sha256": str(prov.digest)})


def _time(reproducible: bool) -> datetime | None:
    return None if reproducible else datetime.now(UTC).replace(microsecond=0)


def sign_audit(out_dir: Path, spec: Spec, audit: AuditResult, key: SigningKey, *,
               reproducible: bool) -> list[str]:
    """Write the envelopes of :func:`planned` into ``out_dir`` (after audit.json); their names."""
    names = planned(out_dir)
    bundle = bundle_subject(spec, _bundle_tree(audit))
    if PROVENANCE_ENVELOPE in names:
        _write(out_dir / PROVENANCE_ENVELOPE, (out_dir / "provenance.intoto.json").read_bytes(),
               key)
    if SBOM_ENVELOPE in names:
        sbom = json.loads((out_dir / "sbom.cdx.json").read_text(encoding="utf-8"))
        subject = _wheel_subject(audit) or bundle
        _write(out_dir / SBOM_ENVELOPE, _payload({
            "_type": STATEMENT_TYPE, "subject": [subject.to_json()],
            "predicateType": CYCLONEDX_TYPE, "predicate": sbom}), key)
    inputs = [InputAttestation(name, sha256_file(out_dir / name))
              for name in ("audit.json", "sbom.cdx.json", "provenance.intoto.json")
              if (out_dir / name).is_file()]
    _write(out_dir / VSA_ENVELOPE, _payload(vsa_statement(
        subject=bundle, verdict=audit.verdict, resource_uri=shown_path(spec.bundle.path, spec.root),
        policy=policy_files(spec), inputs=inputs, time_verified=_time(reproducible))), key)
    return names


def sign_gate(out_dir: Path, spec: Spec, verdict: Verdict, audit: AuditResult, baseline: Path,
              key: SigningKey, *, reproducible: bool) -> str:
    """``gate.vsa.intoto.jsonl``: the gate's decision about the bundle (after gate.json)."""
    inputs = [InputAttestation(name, sha256_file(out_dir / name))
              for name in ("gate.json", "audit.json") if (out_dir / name).is_file()]
    inputs.append(InputAttestation(shown_path(baseline, spec.root), sha256_file(baseline)))
    _write(out_dir / GATE_VSA_ENVELOPE, _payload(vsa_statement(
        subject=bundle_subject(spec, _bundle_tree(audit)), verdict=verdict,
        resource_uri=shown_path(spec.bundle.path, spec.root), policy=policy_files(spec),
        inputs=inputs, time_verified=_time(reproducible))), key)
    return GATE_VSA_ENVELOPE
